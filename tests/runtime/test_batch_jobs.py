"""The async batch API against a local queue state machine: submit, poll, wait, typed results, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from typing import Any

import pytest
from workers_ai import BatchItem, BatchJob, BatchRequest, BatchStatus, WorkersAI
from workers_ai._batch.jobs import BatchResult, BatchStatusWarning
from workers_ai._batch.submit import submit_flow
from workers_ai._batch.wire import encode_requests
from workers_ai._core.usage import Usage
from workers_ai.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BatchError,
    BatchTimeoutError,
    InputValidationError,
    InternalServerError,
    ModelNotFoundError,
    ResponseDecodeError,
    UnknownInputWarning,
)
from workers_ai.models.cf.baai import bge_base_en_v1_5 as bge_base
from workers_ai.models.cf.baai import bge_m3
from workers_ai.models.cf.meta import llama_3_3_70b_instruct_fp8_fast as llama33

from tests._server import Reply, ScriptedServer, closed_port, fail, ok
from tests.conftest import ACCOUNT, ROOT, TOKEN
from tests.runtime._drivers import KINDS, Driver
from tests.runtime._queue import QueueSim

M3 = "@cf/baai/bge-m3"
BASE = "@cf/baai/bge-base-en-v1.5"
LLAMA33 = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
RUN = f"/client/v4/accounts/{ACCOUNT}/ai/run/"


def client(server: ScriptedServer, sleeps: list[float] | None = None, **kw: Any) -> WorkersAI:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, **kw)
    ai._sleep = (sleeps if sleeps is not None else []).append  # never really sleep in tests
    return ai


# ---------------------------------------------------------------------------------------------- submit


def test_run_with_queue_request_submits_and_returns_a_job(server: ScriptedServer) -> None:
    sim = QueueSim()
    server.script(sim)
    before = time.time()
    job = client(server).run(M3, {"requests": [{"text": ["a", "b"]}, {"text": "c"}]}, queue_request=True)
    assert isinstance(job, BatchJob)
    assert job.request_id == next(iter(sim.jobs))
    assert job.model == M3
    assert job.size == 2
    assert job.submitted_at is not None and before <= job.submitted_at <= time.time()
    (req,) = server.requests
    assert req.target == RUN + M3 + "?queueRequest=true"
    assert req.json() == {"requests": [{"text": ["a", "b"]}, {"text": "c"}]}


def test_typed_batch_method_takes_structs_wrappers_and_mappings(server: ScriptedServer) -> None:
    server.script(QueueSim())
    job = (
        client(server)
        .model(M3)
        .batch(
            [
                bge_m3.EmbeddingInput(text=["a"]),
                BatchRequest(bge_m3.QueryAndContextsInput(query="q", contexts=[bge_m3.Context(text="c")]), "ref-1"),
                BatchRequest(bge_m3.EmbeddingInput(text="x", truncate_inputs=True), external_reference="ref-2"),
            ]
        )
    )
    assert job.size == 3
    assert server.requests[0].json() == {
        "requests": [
            {"text": ["a"]},
            {"contexts": [{"text": "c"}], "query": "q", "external_reference": "ref-1"},
            {"text": "x", "truncate_inputs": True, "external_reference": "ref-2"},
        ]
    }


def test_mapping_requests_keep_their_external_reference(server: ScriptedServer) -> None:
    server.script(QueueSim())
    client(server).run(BASE, {"requests": [{"text": ["a"], "external_reference": "mine"}]}, queue_request=True)
    assert server.requests[0].json() == {"requests": [{"text": ["a"], "external_reference": "mine"}]}


@pytest.mark.parametrize(
    ("requests", "path"),
    [
        ([{"text": ["a"]}, {"text": ""}], "$.requests[1].text"),
        ([{"text": ["a"]}, {"pooling": "mean"}], "$.requests[1]"),
        ([bge_base.TextInput(text=["ok"]), bge_base.TextInput(text=["a"] * 101)], "$.requests[1].text"),
        ([BatchRequest({"text": "a"}, external_reference=7)], "$.requests[0].external_reference"),  # type: ignore[arg-type]
    ],
)
def test_invalid_requests_are_refused_before_sending(server: ScriptedServer, requests: Any, path: str) -> None:
    server.script(QueueSim())
    with pytest.raises(InputValidationError) as info:
        client(server).run(BASE, {"requests": requests}, queue_request=True)
    assert info.value.path == path
    assert info.value.model_id == BASE
    assert server.requests == []


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_batch_and_keys_beside_requests_are_sent_as_given(server: ScriptedServer, kind: str) -> None:
    # The schema's `requests` has no minItems, and a batch body may carry other keys (sent with a warning).
    server.script(QueueSim())
    drive = Driver(kind, ACCOUNT, TOKEN, server.base_url)
    drive.call(lambda ai: ai.run(BASE, {"requests": []}, queue_request=True))
    drive.call(lambda ai: ai.model(BASE).batch([]))
    with pytest.warns(UnknownInputWarning, match=r"\$\.priority"):
        drive.call(lambda ai: ai.model(BASE).submit_batch({"requests": [{"text": "a"}], "priority": 3}))
    assert [r.json() for r in server.requests if "queueRequest" in r.target] == [
        {"requests": []},
        {"requests": []},
        {"priority": 3, "requests": [{"text": "a"}]},
    ]


def test_batch_item_type_of_the_requests_variant_is_used(server: ScriptedServer) -> None:
    # llama-3.3's batch items are their own struct (with external_reference), not the sync inputs.
    server.script(QueueSim())
    handle = client(server).model(LLAMA33)
    with pytest.raises(InputValidationError) as info:
        handle.batch([llama33.Request(prompt="ok"), {"prompt": ""}])  # type: ignore[list-item]
    assert info.value.path == "$.requests[1].prompt"
    handle.batch(
        [llama33.Request(prompt="hi", external_reference="a"), BatchRequest(llama33.Request(prompt="yo"), "b")]
    )
    assert server.requests[0].json() == {
        "requests": [{"external_reference": "a", "prompt": "hi"}, {"prompt": "yo", "external_reference": "b"}]
    }


def test_a_body_over_the_size_limit_is_refused_before_sending(server: ScriptedServer) -> None:
    server.script(QueueSim())
    handle = client(server).model(BASE)
    with pytest.raises(InputValidationError, match="under 200"):
        body = encode_requests(handle, [{"text": ["x" * 300]}])
        handle.client._drive(submit_flow(handle, BatchJob[Any], body, 1, None, 200))
    assert server.requests == []


# ---------------------------------------------------------------------------------------------- poll


def test_status_is_one_post_of_the_request_id(server: ScriptedServer) -> None:
    sim = QueueSim()
    server.script(sim)
    job = client(server).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    st = job.status()
    assert isinstance(st, BatchStatus)
    assert (st.state, st.request_id, st.model, st.pending, st.known) == ("queued", job.request_id, BASE, True, True)
    assert len(server.requests) == 2
    assert server.requests[1].json() == {"request_id": job.request_id}
    assert server.requests[1].target == RUN + BASE + "?queueRequest=true"
    assert job.result is None and job.last_status == st


def test_wait_walks_queued_running_done_with_a_growing_interval(server: ScriptedServer) -> None:
    sim = QueueSim(states=["queued", "queued", "running", "running", "running", "running", "done"])
    server.script(sim)
    sleeps: list[float] = []
    job = client(server, sleeps).run(BASE, {"requests": [{"text": ["t 0", "t 1"]}]}, queue_request=True)
    seen: list[str] = []
    result = job.wait(poll_interval=1.0, max_interval=4.0, on_progress=lambda st, elapsed: seen.append(st.state))
    assert seen == ["queued", "queued", "running", "running", "running", "running", "done"]
    assert sleeps == [1.0, 1.5, 2.25, 3.375, 4.0, 4.0]
    assert sim.polls == 7
    assert job.wait() is result  # a finished job does not poll again
    assert sim.polls == 7


def _mixed(index: int, request: dict[str, Any]) -> dict[str, Any]:
    ref = request.get("external_reference")
    if index == 2:
        return {
            "id": 2,
            "success": False,
            "errors": [{"code": 5006, "message": "bad input"}],
            "external_reference": ref,
        }
    if "query" in request:
        return {
            "id": index,
            "success": True,
            "result": {"response": [{"id": 0, "score": 0.5}]},
            "external_reference": ref,
        }
    return {
        "id": index,
        "success": True,
        "result": {"shape": [1, 2], "data": [[index, 0.5]]},
        "external_reference": ref,
    }


def test_results_come_back_in_request_order_typed_with_failures_as_items(server: ScriptedServer) -> None:
    server.script(QueueSim(states=["done"], respond=_mixed, seed=4))
    job = (
        client(server)
        .model(M3)
        .batch(
            [
                BatchRequest(bge_m3.EmbeddingInput(text=["a"]), "r0"),
                bge_m3.QueryAndContextsInput(query="q", contexts=[bge_m3.Context(text="c")]),
                BatchRequest(bge_m3.EmbeddingInput(text=["will fail"]), "r2"),
                bge_m3.EmbeddingInput(text=["b"]),
            ]
        )
    )
    result = job.wait()
    assert isinstance(result, BatchResult)
    assert [i.id for i in result.items] == [0, 1, 2, 3]
    assert all(isinstance(i, BatchItem) for i in result)
    first, second, third, fourth = result.items
    assert isinstance(first.result, bge_m3.EmbeddingOutput) and first.result.data == [[0.0, 0.5]]
    assert isinstance(second.result, bge_m3.QueryOutput)
    assert isinstance(fourth.result, bge_m3.EmbeddingOutput) and fourth.result.data == [[3.0, 0.5]]
    assert [i.external_reference for i in result.items] == ["r0", None, "r2", None]
    assert (third.success, third.result, [e.code for e in third.errors], third.error) == (
        False,
        None,
        [5006],
        "5006: bad input",
    )
    assert first.error is None
    assert not result.ok and result.failed == [third]
    assert result.results == [first.result, second.result, None, fourth.result]
    assert result.usage == Usage(prompt_tokens=12, completion_tokens=0, total_tokens=12)
    assert result.request_id == job.request_id


def test_nested_results_missing_items_and_unplaceable_entries(server: ScriptedServer) -> None:
    u = {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}  # text replies always carry usage
    responses = [
        {"id": 3, "success": True, "result": {"result": {"response": "three", "usage": u}}},  # doubly nested (a doc)
        {"id": 0, "result": {"response": "zero", "usage": u}},  # no success flag but a result: a success
        {"id": 0, "success": True, "result": {"response": "duplicate", "usage": u}},
        {"id": 9, "success": True, "result": {"response": "beyond the batch", "usage": u}},
        {"id": "x", "success": True},
        "not an object",
        {"id": 2, "success": False},  # failed without any message
    ]
    server.script(ok({"status": "queued", "request_id": "r-1"}), ok({"responses": responses}))
    handle = client(server).model(LLAMA33)
    job = handle.batch([llama33.Request(prompt=f"p{i}") for i in range(4)])
    result = job.wait()
    assert [(i.id, i.success) for i in result.items] == [(0, True), (1, False), (2, False), (3, True)]
    assert isinstance(result.items[0].result, llama33.TextGenerationOutput)
    assert result.items[0].result.response == "zero"
    assert isinstance(result.items[3].result, llama33.TextGenerationOutput)
    assert result.items[3].result.response == "three"
    assert result.items[1].error is not None and "no response" in result.items[1].error
    assert result.items[2].error == "the request failed without an error message"
    assert len(result.unmatched) == 4
    assert result.usage is None


def test_an_item_that_fits_no_output_variant_fails_alone(server: ScriptedServer) -> None:
    responses = [
        {"id": 0, "success": True, "result": {"shape": [1, 1], "data": [[1.0]]}},
        {"id": 1, "success": True, "result": 42},
    ]
    server.script(ok({"status": "queued", "request_id": "r-1"}), ok({"responses": responses}))
    result = client(server).model(BASE).batch([bge_base.TextInput(text="a"), bge_base.TextInput(text="b")]).wait()
    assert result.items[0].success and isinstance(result.items[0].result, bge_base.TextEmbeddingsOutput)
    assert not result.items[1].success and "matches no variant" in (result.items[1].error or "")


def test_a_failed_job_raises_batch_error_naming_the_request_id(server: ScriptedServer) -> None:
    server.script(QueueSim(states=["queued", "failed"]))
    job = client(server).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    with pytest.raises(BatchError) as info:
        job.wait()
    assert info.value.request_id == job.request_id
    assert info.value.state == "failed"
    assert job.request_id in str(info.value) and "3007: the batch timed out" in str(info.value)


def test_an_unknown_status_is_reported_once_and_polling_goes_on(server: ScriptedServer) -> None:
    server.script(QueueSim(states=["queued", "paused", "paused", "done"]))
    job = client(server).run(BASE, {"requests": [{"text": "t 5"}]}, queue_request=True)
    states: list[tuple[str, bool]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = job.wait(on_progress=lambda st, _: states.append((st.state, st.known)))
    assert states == [("queued", True), ("paused", False), ("paused", False), ("done", True)]
    assert [type(w.message) for w in caught] == [BatchStatusWarning]
    assert "paused" in str(caught[0].message) and job.request_id in str(caught[0].message)
    assert result.ok


def test_done_without_responses_is_a_decode_error(server: ScriptedServer) -> None:
    server.script(ok({"status": "queued", "request_id": "r-1"}), ok({"status": "done", "request_id": "r-1"}))
    job = client(server).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    with pytest.raises(APIError, match="no responses"):
        job.wait()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_stops_at_the_deadline_and_names_the_request_id(server: ScriptedServer) -> None:
    sim = QueueSim(states=["queued", "running"])
    server.script(sim)
    ai = client(server)
    clock = FakeClock()
    ai._sleep = clock.sleep
    job = ai.run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    job._clock = clock
    with pytest.raises(BatchTimeoutError) as info:
        job.wait(timeout=5.0, poll_interval=1.0)
    assert clock.sleeps == [1.0, 1.5, 2.25, 0.25]  # the last wait is cut to end at the deadline
    assert sim.polls == 5  # and one more poll is made there
    err = info.value
    assert isinstance(err, TimeoutError)
    assert err.request_id == job.request_id and err.state == "running"
    assert job.request_id in str(err) and "batch_job(" in str(err)


def test_polling_an_unknown_request_id_raises_the_api_error(server: ScriptedServer) -> None:
    server.script(QueueSim())
    with pytest.raises(ModelNotFoundError) as info:
        client(server).batch_job(BASE, "no-such-id").status()
    assert info.value.code == 5007


def test_bare_replies_without_the_envelope_are_refused_like_any_other_reply(server: ScriptedServer) -> None:
    # One envelope reader for every JSON reply (_envelope.checked): a bare object is not an answer.
    sim = QueueSim(states=["running", "done"], envelope=False)
    server.script(sim)
    with pytest.raises(ResponseDecodeError, match=r"not a Cloudflare envelope.*may have been queued anyway") as info:
        client(server).run(BASE, {"requests": [{"text": ["t 1", "t 2"]}]}, queue_request=True)
    assert info.value.status == 200 and sim.submits == 1
    with pytest.raises(ResponseDecodeError, match="batch status reply is JSON but not a Cloudflare envelope"):
        client(server).batch_job(BASE, next(iter(sim.jobs))).status()


# ---------------------------------------------------------------------------------------------- resume


def test_a_fresh_client_resumes_a_job_from_its_id_alone(server: ScriptedServer) -> None:
    server.script(QueueSim(states=["queued", "done"]))
    request_id = client(server).run(BASE, {"requests": [{"text": ["t 7"]}]}, queue_request=True).request_id
    job = client(server).batch_job(BASE, request_id)
    assert (job.request_id, job.model, job.size, job.submitted_at) == (request_id, BASE, None, None)
    result = job.wait()
    first = result.items[0].result
    assert isinstance(first, bge_base.TextEmbeddingsOutput) and first.data == [[7.0, 3.0]]


def test_another_process_resumes_a_job_from_its_id_alone(server: ScriptedServer) -> None:
    server.script(QueueSim(states=["queued", "running", "done"]))
    request_id = client(server).run(BASE, {"requests": [{"text": ["t 3", "t 4"]}]}, queue_request=True).request_id
    code = (
        "import json, sys\n"
        "from workers_ai import WorkersAI\n"
        "ai = WorkersAI()\n"
        "job = ai.batch_job(sys.argv[1], sys.argv[2])\n"
        "res = job.wait(poll_interval=0.01)\n"
        "print(json.dumps([[i.id, i.success, i.result.data] for i in res.items]))\n"
    )
    env = {
        **os.environ,
        "CLOUDFLARE_ACCOUNT_ID": ACCOUNT,
        "CLOUDFLARE_API_TOKEN": TOKEN,
        "CLOUDFLARE_BASE_URL": server.base_url,
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, BASE, request_id], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [[0, True, [[3.0, 3.0], [4.0, 3.0]]]]
    assert server.requests[-1].json() == {"request_id": request_id}


def test_an_empty_request_id_is_refused(server: ScriptedServer) -> None:
    with pytest.raises(ValueError):
        client(server).batch_job(BASE, " ")


# ---------------------------------------------------------------------------------------------- resending


QUEUED = ok({"status": "queued", "request_id": "r-ok", "model": BASE})


@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_batch_is_not_resent_after_a_reply_that_may_mean_it_was_queued(server: ScriptedServer, status: int) -> None:
    server.script(fail(status, 0, "upstream trouble"), QUEUED)
    sleeps: list[float] = []
    with pytest.raises(InternalServerError):
        client(server, sleeps, max_retries=3).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    assert len(server.requests) == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [429, 503])
def test_a_batch_is_resent_after_a_reply_that_means_it_was_not_taken(server: ScriptedServer, status: int) -> None:
    server.script(fail(status, 3040, "busy", retry_after="0"), QUEUED)
    job = client(server, max_retries=3).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    assert job.request_id == "r-ok"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


def test_a_plain_run_is_retried_after_500_unlike_a_batch(server: ScriptedServer) -> None:
    server.script(fail(500, 0, "boom"), ok({"data": [[1.0]], "shape": [1, 1]}))
    client(server).model(BASE).embed(text="a")
    assert len(server.requests) == 2


def test_a_batch_is_not_resent_after_a_read_timeout(server: ScriptedServer) -> None:
    server.script(Reply(200, QUEUED.body, delay=2.0), QUEUED)
    with pytest.raises(APITimeoutError, match="may have been queued"):
        client(server, max_retries=3, timeout=0.3).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    assert len(server.requests) == 1


def test_a_batch_is_not_resent_after_the_connection_drops_mid_request(server: ScriptedServer) -> None:
    server.script("reset", QUEUED)
    with pytest.raises(APIConnectionError, match="may have been queued"):
        client(server, max_retries=3).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    assert len(server.requests) == 1


def test_a_batch_is_resent_after_a_connect_failure() -> None:
    port = closed_port()  # nothing listens there: connecting is refused, so nothing can have been queued
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=f"http://127.0.0.1:{port}/client/v4", max_retries=2)
    sleeps: list[float] = []
    ai._sleep = sleeps.append
    with pytest.raises(APIConnectionError, match="could not connect"):
        ai.run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    assert len(sleeps) == 2  # two re-sends after the first refusal


def test_polling_is_retried_like_any_read(server: ScriptedServer) -> None:
    server.script(QUEUED, fail(502, 0, "bad gateway"), ok({"status": "running", "request_id": "r-ok"}))
    job = client(server, max_retries=2).run(BASE, {"requests": [{"text": "a"}]}, queue_request=True)
    assert job.status().state == "running"
    assert len(server.requests) == 3


def test_the_typed_batch_method_follows_the_same_resend_rule(server: ScriptedServer) -> None:
    server.script(fail(500, 0, "upstream trouble"), QUEUED)
    with pytest.raises(InternalServerError):
        client(server, max_retries=3).model(M3).batch([bge_m3.EmbeddingInput(text="a")])
    assert len(server.requests) == 1  # may be queued: not re-sent
    server.script(fail(503, 7009, "Upstream service unavailable", retry_after="0"), QUEUED)
    job = client(server, max_retries=3).model(M3).batch([bge_m3.EmbeddingInput(text="a")])
    assert job.request_id == "r-ok"
    assert len(server.requests) == 3 and server.requests[1].body == server.requests[2].body
