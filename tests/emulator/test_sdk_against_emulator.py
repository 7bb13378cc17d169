"""The SDK against the emulator: typed calls, streams, binary replies, batches, error routes, retries and faults.

Both sides are ours, but they were written against the wire and the schemas, not against each other:
the emulator validates with ``jsonschema``, the SDK with its generated msgspec structs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3
from workers_ai import BatchRequest, BinaryOutput, WorkersAI, errors
from workers_ai._core.requests import get_json_flow
from workers_ai.errors import BatchItemError
from workers_ai.models.cf.baai.bge_m3 import Context, EmbeddingOutput, QueryOutput
from workers_ai.testing import Emulator
from workers_ai.testing._catalog import ModelSpec

from tests.runtime._drivers import KINDS, Driver

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3-8b-instruct"
SDXL = "@cf/stabilityai/stable-diffusion-xl-base-1.0"


def _client(emu: Emulator, **kw: Any) -> WorkersAI:
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **kw)


def _valid_output(emu: Emulator, model_id: str, value: Any) -> None:
    spec = emu.catalog.get(model_id)
    assert isinstance(spec, ModelSpec)
    problem = spec.outputs.validator.first_error(value)
    assert problem is None, problem


# --------------------------------------------------------------------------- typed calls


def test_bge_m3_embed_and_rank(workers_ai_client: WorkersAI, workers_ai_emulator: Emulator) -> None:
    bge = workers_ai_client.model(BGE)
    out = bge.embed(text=["the red cat", "a blue whale"])
    assert isinstance(out, EmbeddingOutput) and out.shape == [2, 1024]
    assert isinstance(out.data, list) and len(out.data[0]) == 1024
    ranked = bge.rank(
        query="where is the red cat sleeping",
        contexts=[Context(text="tax law in 1850"), Context(text="the red cat is sleeping on the sofa")],
    )
    assert isinstance(ranked, QueryOutput) and isinstance(ranked.response, list)
    assert [r.id for r in ranked.response] == [1, 0]
    scores = [r.score for r in ranked.response]
    assert scores == sorted(scores, reverse=True)
    assert workers_ai_emulator.requests[-1].path.endswith("/ai/run/@cf/baai/bge-m3")


def test_llama_generate_chat_and_stream(workers_ai_client: WorkersAI) -> None:
    llama = workers_ai_client.model(LLAMA)
    out = llama.generate(prompt="What is the capital of France?", max_tokens=64)
    assert isinstance(out.response, str) and "capital of France" in out.response
    assert not isinstance(out.usage, type(None)) and out.usage.total_tokens > 0
    from workers_ai.models.cf.meta.llama_3_8b_instruct import Message

    chat = llama.chat(messages=[Message(role="system", content="be brief"), Message(role="user", content="hi cats")])
    assert isinstance(chat.response, str) and "hi cats" in chat.response
    with llama.generate_stream(prompt="What is the capital of France?", max_tokens=64) as stream:
        events = list(stream)
    text = "".join(e.text for e in events)
    assert text == out.response and len(events) > 3
    assert events[-1].usage is not None and events[-1].usage.total_tokens == out.usage.total_tokens


def test_max_tokens_cuts_the_reply(workers_ai_client: WorkersAI) -> None:
    out = workers_ai_client.model(LLAMA).generate(prompt="one two three four five six seven", max_tokens=3)
    assert isinstance(out.response, str) and 0 < len(out.response.split()) <= 3
    assert out.usage is not None and out.usage.completion_tokens == 3  # exactly the limit, never one more


def test_binary_png_model(workers_ai_client: WorkersAI) -> None:
    image = workers_ai_client.model(SDXL).generate_image(prompt="a lighthouse", width=320, height=256)
    assert isinstance(image, BinaryOutput) and image.content_type == "image/png"
    assert image[:8] == b"\x89PNG\r\n\x1a\n"
    import struct

    assert struct.unpack(">II", image[16:24]) == (320, 256)


def test_generic_run_decodes_and_validates(workers_ai_client: WorkersAI, workers_ai_emulator: Emulator) -> None:
    result = workers_ai_client.run("@cf/meta/m2m100-1.2b", {"text": "hello", "target_lang": "fr"})
    assert getattr(result, "translated_text", None) == "[auto->fr] hello"
    _valid_output(workers_ai_emulator, "@cf/meta/m2m100-1.2b", {"translated_text": result.translated_text})


# --------------------------------------------------------------------------- async batch


def test_batch_submit_and_wait(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    ai = _client(emu)
    texts = [f"document number {i} about cats" for i in range(6)]
    job = ai.model(BGE).batch([BatchRequest({"text": t}, external_reference=f"ref-{i}") for i, t in enumerate(texts)])
    seen: list[str] = []
    result = job.wait(poll_interval=0.001, on_progress=lambda st, _elapsed: seen.append(st.state))
    assert seen == ["queued", "running", "done"]
    assert [item.id for item in result.items] == list(range(6))
    assert [item.external_reference for item in result.items] == [f"ref-{i}" for i in range(6)]
    assert all(item.success and isinstance(item.result, EmbeddingOutput) for item in result.items)
    assert result.usage is not None and result.usage.prompt_tokens > 0
    wire = json.loads(emu.requests[-1].body)
    assert wire == {"request_id": job.request_id}
    # The emulator shuffles the items (deterministically); the SDK put them back in order by id.
    done = json.loads(_raw_poll(emu, job.request_id))["result"]["responses"]
    assert [r["id"] for r in done] != list(range(6)) and sorted(r["id"] for r in done) == list(range(6))
    again = ai.batch_job(BGE, job.request_id).wait(poll_interval=0.001)
    assert [i.external_reference for i in again.items] == [f"ref-{i}" for i in range(6)]


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_batch_is_queued_and_done(workers_ai_emulator: Emulator, kind: str) -> None:
    # The schema's `requests` sets no minItems: the SDK sends an empty batch, and the emulator takes it
    # (it answered 400/5006).
    emu = workers_ai_emulator
    drive = Driver(kind, emu.account_id, emu.api_token, emu.base_url)
    for submit in (
        lambda ai: ai.model(BGE).batch([]),
        lambda ai: ai.run(BGE, {"requests": []}, queue_request=True),
    ):
        result = drive.call(lambda ai, submit=submit: drive.wait(submit(ai), poll_interval=0.001))
        assert result.items == [] and result.request_id


def _raw_poll(emu: Emulator, request_id: str) -> bytes:
    pool = urllib3.PoolManager(retries=False)
    try:
        resp = pool.request(
            "POST",
            f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{BGE}",
            body=json.dumps({"request_id": request_id}).encode(),
            headers={"Authorization": f"Bearer {emu.api_token}"},
        )
        return resp.data
    finally:
        pool.clear()


def test_batch_items_fail_one_by_one() -> None:
    emu = Emulator(batch_polls=(0, 0), shuffle_batches=False)
    try:
        pool = urllib3.PoolManager(retries=False)
        body = {"requests": [{"text": "fine"}, {"text": ""}, {"text": "also fine"}]}
        resp = pool.request(
            "POST",
            f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{BGE}?queueRequest=true",
            body=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {emu.api_token}"},
        )
        queued = json.loads(resp.data)["result"]
        pool.clear()
        assert queued["status"] == "queued" and queued["model"] == BGE
        emu.inject("batch_item_error", item=2, message="capacity ran out for this one")
        job2 = _client(emu).model(BGE).batch([{"text": "a"}, {"text": "b"}, {"text": "c"}])
        result = _client(emu).batch_job(BGE, queued["request_id"]).wait(poll_interval=0.001)
        assert [i.success for i in result.items] == [True, False, True]
        assert result.items[1].errors[0].code == 5006 and "/text" in result.items[1].errors[0].message
        second = job2.wait(poll_interval=0.001)
        assert [i.success for i in second.items] == [True, True, False]
        assert second.items[2].errors[0].message == "capacity ran out for this one"
        # A successful item's output needs no None check; a failed one's raises, naming the item.
        assert [type(i.output).__name__ for i in second.items[:2]] == ["EmbeddingOutput"] * 2
        with pytest.raises(BatchItemError, match=r"batch request 2 failed: .*capacity ran out") as info:
            _ = second.items[2].output
        assert info.value.item_id == 2
    finally:
        emu.close()


def test_batch_failed_and_unknown_request_id(workers_ai_emulator: Emulator) -> None:
    ai = _client(workers_ai_emulator)
    workers_ai_emulator.inject("batch_failed")
    job = ai.model(BGE).batch([{"text": "a"}])
    with pytest.raises(errors.BatchError, match="failed"):
        job.wait(poll_interval=0.001)
    with pytest.raises(errors.BadRequestError, match="no async batch with request_id"):
        ai.batch_job(BGE, "00000000-0000-4000-8000-000000000000").status()


@pytest.mark.parametrize(
    ("delay", "state"), [((3600.0, 0.0), "queued"), ((0.0, 3600.0), "running"), ((0.0, 0.0), "done")]
)
def test_time_based_batches(delay: tuple[float, float], state: str) -> None:
    # Deterministic on any machine: an hour-long phase cannot end during the test, a zero-length one has.
    with Emulator(batch_delay=delay) as emu:
        job = _client(emu).model(BGE).batch([{"text": "a"}])
        assert [job.status().state for _ in range(3)] == [state] * 3  # polling does not move it on; time does
        assert (job.result is not None) == (state == "done")
        if job.result is not None:
            assert job.result.items[0].success


def test_poll_based_batches_move_on_with_each_poll() -> None:
    with Emulator(batch_polls=(2, 1)) as emu:
        job = _client(emu).model(BGE).batch([{"text": "a"}])
        assert [job.status().state for _ in range(4)] == ["queued", "queued", "running", "done"]
        assert job.result is not None and job.result.items[0].success


def test_batch_submission_is_not_resent_after_a_5xx(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    emu.inject("internal_error", retry_after=0)
    with pytest.raises(errors.InternalServerError):
        _client(emu, max_retries=3).model(BGE).batch([{"text": "a"}])
    assert len(emu.requests) == 1  # it may have been queued, so the SDK must not send it again
    emu.reset()
    emu.inject("rate_limit", retry_after=0)
    job = _client(emu, max_retries=3).model(BGE).batch([{"text": "a"}])
    assert job.request_id and [r.status for r in emu.requests] == [429, 200]


# --------------------------------------------------------------------------- error routes


def test_error_routes_raise_the_right_errors(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    with pytest.raises(errors.ModelNotFoundError) as no_model:
        _client(emu).run("@cf/nobody/missing", {"prompt": "x"})
    assert no_model.value.code == 5007 and no_model.value.status == 400
    with pytest.raises(errors.AuthenticationError) as auth:
        WorkersAI(account_id=emu.account_id, api_token="wrong", base_url=emu.base_url).model(BGE).embed(text="a")
    assert auth.value.code == 10000 and auth.value.status == 401 and "wrong" not in str(auth.value)
    with pytest.raises(errors.RouteNotFoundError) as account:
        WorkersAI(account_id="e" * 32, api_token=emu.api_token, base_url=emu.base_url).model(BGE).embed(text="a")
    assert account.value.code == 7003 and account.value.status == 404 and f"account id {'e' * 32}" in str(account.value)
    with pytest.raises(errors.ModelNotFoundError) as route:
        client = _client(emu)
        client._drive(get_json_flow(client, "ai/v9/nothing"))
    assert route.value.code == 7000
    assert all(e.cf_ray and e.cf_ray.endswith("-EMU") for e in (no_model.value, auth.value, account.value))


def test_server_side_validation_error_reaches_the_sdk(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    schema = {
        "input": {"type": "object", "properties": {"text": {"type": "string", "minLength": 2}}, "required": ["text"]},
        "output": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
    }
    emu.add_model("@cf/acme/strict", schema)  # not generated, so the SDK sends it unchecked
    with pytest.raises(errors.InvalidInputError) as bad:
        _client(emu).run("@cf/acme/strict", {"text": "x"})
    assert bad.value.code == 5006 and "/text" in str(bad.value)
    good = _client(emu).run("@cf/acme/strict", {"text": "xy"})
    assert isinstance(good, dict) and isinstance(good["label"], str)


# --------------------------------------------------------------------------- retries and faults


def test_daily_quota_is_not_retried(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    emu.inject("daily_limit", times=2, retry_after=0)
    with pytest.raises(errors.QuotaExceededError) as exc:
        _client(emu, max_retries=2).model(BGE).embed(text="quota")
    assert isinstance(exc.value, errors.RateLimitError) and exc.value.code == 3036
    assert [r.status for r in emu.requests] == [429]


@pytest.mark.parametrize(("fault", "status"), [("rate_limit", 429), ("capacity", 429), ("unavailable", 503)])
def test_retries_happen_on_429_and_503(workers_ai_emulator: Emulator, fault: str, status: int) -> None:
    emu = workers_ai_emulator
    emu.inject(fault, times=2, retry_after=0)
    out = _client(emu, max_retries=2).model(BGE).embed(text="retry me")
    assert out.shape == [1, 1024]
    assert [r.status for r in emu.requests] == [status, status, 200]
    assert [r.fault for r in emu.requests] == [fault, fault, None]


def test_retries_give_up_with_the_last_error(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    emu.inject("capacity", times=None, retry_after=0)
    with pytest.raises(errors.CapacityError) as exc:
        _client(emu, max_retries=1).model(BGE).embed(text="a")
    assert exc.value.code == 3040 and exc.value.status == 429 and exc.value.retry_after == 0
    assert len(emu.requests) == 2
    emu.reset()
    emu.inject("rate_limit", retry_after=3600)  # longer than the SDK is willing to wait
    with pytest.raises(errors.RateLimitError):
        _client(emu, max_retries=3).model(BGE).embed(text="a")
    assert len(emu.requests) == 1


def test_truncated_json_and_html_502(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    emu.inject("truncated_json")
    with pytest.raises(errors.ResponseDecodeError) as trunc:
        _client(emu, max_retries=2).model(BGE).embed(text="a")
    assert trunc.value.status == 200 and len(emu.requests) == 1
    emu.reset()
    emu.inject("html_502", times=None, retry_after=0)
    with pytest.raises(errors.InternalServerError) as html:
        _client(emu, max_retries=1).model(BGE).embed(text="a")
    assert html.value.status == 502 and "502: Bad gateway" in str(html.value) and len(emu.requests) == 2


def test_body_shorter_than_content_length_and_reset(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    waits: list[float] = []
    for fault in ("truncated", "reset"):
        emu.reset()
        emu.inject(fault, times=None)
        ai = _client(emu, max_retries=1)
        ai._sleep = waits.append  # record the backoff instead of spending it
        with pytest.raises(errors.APIConnectionError, match="connection failed"):
            ai.model(BGE).embed(text="a")
        assert [r.fault for r in emu.requests] == [fault, fault]  # sent, retried once, given up
    assert len(waits) == 2
    emu.reset()
    emu.inject("reset", times=1)
    ai = _client(emu, max_retries=1)
    ai._sleep = waits.append
    assert ai.model(BGE).embed(text="a").shape == [1, 1024]  # retried once
    assert len(emu.requests) == 2 and len(waits) == 3


def test_success_false_on_http_200(workers_ai_emulator: Emulator) -> None:
    workers_ai_emulator.inject("success_false", code=3043, message="something broke")
    with pytest.raises(errors.APIError) as exc:
        _client(workers_ai_emulator).model(BGE).embed(text="a")
    assert exc.value.status == 200 and exc.value.code == 3043 and "something broke" in str(exc.value)


def test_slow_reply_hits_the_client_timeout(workers_ai_emulator: Emulator) -> None:
    workers_ai_emulator.inject("slow", delay=2.0)
    with pytest.raises(errors.APITimeoutError):
        _client(workers_ai_emulator, timeout=0.2, max_retries=0).model(BGE).embed(text="a")


def test_stream_error_mid_stream_raises(workers_ai_emulator: Emulator) -> None:
    workers_ai_emulator.inject("stream_error")
    received: list[str] = []
    with pytest.raises(errors.CapacityError) as exc:
        with _client(workers_ai_emulator).model(LLAMA).generate_stream(prompt="tell me a long story") as stream:
            for event in stream:
                received.append(event.text)
    assert received and exc.value.code == 3040


def test_stream_without_done_raises(workers_ai_emulator: Emulator) -> None:
    workers_ai_emulator.inject("stream_no_done", model=LLAMA)
    with pytest.raises(errors.StreamError, match="DONE"):
        _client(workers_ai_emulator).model(LLAMA).generate_stream(prompt="hello").collect()
