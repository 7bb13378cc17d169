"""embed_many: split texts by the schema's maxItems and the 10 MB body limit, submit, poll, reassemble."""

from __future__ import annotations

import gzip
import importlib.resources
import json
from typing import Any

import pytest
from workers_ai import WorkersAI
from workers_ai._batch.embed_plan import BatchProgress, plan_batches, text_batch_limit
from workers_ai.errors import BatchItemsError, BatchTimeoutError, ConfigurationError, InputValidationError
from workers_ai.models.cf.baai import bge_m3

from tests._server import ScriptedServer, fail
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._queue import QueueSim, embed_vectors


def embed_many(handle: Any, texts: list[str], **options: Any) -> Any:
    """The embedding flow with options ``ModelHandle.embed_many`` does not take (``max_bytes``), driven."""
    from workers_ai._batch.chunking import embed_flow
    from workers_ai._batch.jobs import BatchJob

    return handle.client._drive(embed_flow(handle, BatchJob[Any], texts, **options))


BASE = "@cf/baai/bge-base-en-v1.5"
M3 = "@cf/baai/bge-m3"


def client(server: ScriptedServer, sleeps: list[float] | None = None, **kw: Any) -> WorkersAI:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, **kw)
    ai._sleep = (sleeps if sleeps is not None else []).append
    return ai


def schema_max_items(model_module: str) -> int:
    """maxItems of the batch requests' text list, read from the schema shipped in the package."""
    path = importlib.resources.files("workers_ai") / "_schemas" / (model_module.replace(".", "/") + ".json.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array" and isinstance(node.get("maxItems"), int):
                items = node.get("items")
                if isinstance(items, dict) and items.get("type") == "string":
                    found.append(node["maxItems"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc["schema"]["input"])
    assert found and len(set(found)) == 1
    return found[0]


@pytest.mark.parametrize(
    ("model", "module"),
    [
        (BASE, "models.cf.baai.bge_base_en_v1_5"),
        (M3, "models.cf.baai.bge_m3"),
        ("@cf/baai/bge-small-en-v1.5", "models.cf.baai.bge_small_en_v1_5"),
    ],
)
def test_the_request_size_comes_from_the_schema(server: ScriptedServer, model: str, module: str) -> None:
    cls, limit = text_batch_limit(client(server).model(model))
    assert limit == schema_max_items(module)
    assert "text" in {f for f in cls.__struct_fields__}


def test_models_without_a_text_batch_variant_are_refused(server: ScriptedServer) -> None:
    ai = client(server)
    with pytest.raises(ConfigurationError, match="no async batch"):
        ai.model("@cf/meta/llama-3-8b-instruct").embed_many(["a"])
    with pytest.raises(ConfigurationError, match="list of texts"):
        ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast").embed_many(["a"])
    assert server.requests == []


def test_250_texts_become_requests_of_100_in_one_batch_and_come_back_in_order(server: ScriptedServer) -> None:
    sim = QueueSim(states=["queued", "running", "done"], seed=11)
    server.script(sim)
    texts = [f"t {i}" for i in range(250)]
    progress: list[BatchProgress] = []
    sleeps: list[float] = []
    vectors = client(server, sleeps).model(BASE).embed_many(texts, on_progress=progress.append)
    assert [v[0] for v in vectors] == [float(i) for i in range(250)]
    assert sim.submits == 1
    (job,) = sim.jobs.values()
    assert [len(r["text"]) for r in job["requests"]] == [100, 100, 50]
    assert [(p.done, p.batches_done) for p in progress] == [(0, 0), (0, 0), (250, 1)]
    assert progress[-1].fraction == 1.0 and progress[-1].total == 250
    assert list(progress[0].states.values()) == ["queued"]
    assert sleeps == [1.0, 1.5]


def test_batch_size_and_options_shape_each_request(server: ScriptedServer) -> None:
    sim = QueueSim(states=["done"])
    server.script(sim)
    vectors = (
        client(server).model(BASE).embed_many([f"t {i}" for i in range(7)], batch_size=3, options={"pooling": "cls"})
    )
    assert len(vectors) == 7
    (job,) = sim.jobs.values()
    assert [r["text"] for r in job["requests"]] == [["t 0", "t 1", "t 2"], ["t 3", "t 4", "t 5"], ["t 6"]]
    assert all(r["pooling"] == "cls" for r in job["requests"])


def test_each_request_goes_on_the_wire_exactly_as_planned(server: ScriptedServer) -> None:
    sim = QueueSim(states=["done"])
    server.script(sim)
    texts = [f"t {i}" for i in range(7)]
    client(server).model(BASE).embed_many(texts, batch_size=3, options={"pooling": "cls"})
    (plan,) = plan_batches(texts, per_request=3, extra={"pooling": "cls"}, max_bytes=10_000_000, model_id=BASE)
    # Encoded once by the planner, then sent byte for byte (no decode and re-encode on the way).
    assert sim.batch_bodies == [b'{"requests":[' + b",".join(body for _, _, body in plan) + b"]}"]


@pytest.mark.parametrize(
    ("options", "path"), [({"pooling": "max"}, "$.options.pooling"), ({"pooling": 3}, "$.options.pooling")]
)
def test_bad_options_are_refused_before_sending(server: ScriptedServer, options: Any, path: str) -> None:
    with pytest.raises(InputValidationError) as info:
        client(server).model(BASE).embed_many(["a", "b"], options=options)
    assert info.value.path == path and info.value.model_id == BASE
    assert server.requests == []


def test_batch_size_above_the_schema_limit_is_refused(server: ScriptedServer) -> None:
    with pytest.raises(InputValidationError, match="maxItems"):
        client(server).model(BASE).embed_many(["a"], batch_size=101)


@pytest.mark.parametrize(
    ("texts", "path"), [(["ok", ""], "$.texts[1]"), ("just a string", "$.texts"), (["a", 3], "$.texts[1]")]
)
def test_bad_texts_are_refused_before_sending(server: ScriptedServer, texts: Any, path: str) -> None:
    with pytest.raises(InputValidationError) as info:
        client(server).model(BASE).embed_many(texts)
    assert info.value.path == path
    assert server.requests == []


def test_no_texts_is_no_work(server: ScriptedServer) -> None:
    assert client(server).model(BASE).embed_many([]) == []
    assert server.requests == []


def test_the_byte_limit_splits_into_several_batches_each_under_it(server: ScriptedServer) -> None:
    sim = QueueSim(states=["queued", "done"], seed=2)
    server.script(sim)
    texts = [f"{'x' * 300} {i}" for i in range(40)]
    progress: list[BatchProgress] = []
    ai = client(server)

    vectors = embed_many(ai.model(BASE), texts, batch_size=10, max_bytes=2000, on_progress=progress.append)
    assert [v[0] for v in vectors] == [float(i) for i in range(40)]
    assert sim.submits > 1
    assert all(len(body) < 2000 for body in sim.batch_bodies)
    sent = [t for job in sim.jobs.values() for r in job["requests"] for t in r["text"]]
    assert sent == texts  # every text exactly once, in order
    assert progress[-1].batches_done == progress[-1].batches == sim.submits
    assert progress[-1].done == 40


def test_plan_batches_halves_a_request_that_alone_would_pass_the_limit() -> None:
    texts = ["y" * 50] * 8
    batches = plan_batches(texts, per_request=8, extra={}, max_bytes=250, model_id=BASE)
    counts = [n for batch in batches for _, n, _ in batch]
    assert sum(counts) == 8 and max(counts) < 8
    starts = [s for batch in batches for s, _, _ in batch]
    assert starts == sorted(starts)
    for batch in batches:
        assert len(b'{"requests":[' + b",".join(body for _, _, body in batch) + b"]}") < 250
    with pytest.raises(InputValidationError, match=r"texts\[2\]"):
        plan_batches(["a", "b", "z" * 500], per_request=3, extra={}, max_bytes=300, model_id=BASE)


def test_failed_requests_raise_with_the_vectors_that_did_arrive(server: ScriptedServer) -> None:
    def respond(index: int, request: dict[str, Any]) -> dict[str, Any]:
        if index == 1:
            return {"id": 1, "success": False, "errors": [{"code": 3006, "message": "too large"}]}
        if index == 2:
            out = embed_vectors(index, request)
            out["result"]["data"] = out["result"]["data"][:1]  # fewer vectors than texts
            return out
        return embed_vectors(index, request)

    server.script(QueueSim(states=["done"], respond=respond))
    texts = [f"t {i}" for i in range(9)]
    with pytest.raises(BatchItemsError) as info:
        client(server).model(BASE).embed_many(texts, batch_size=3)
    err = info.value
    assert sorted(err.failures) == [3, 4, 5, 6, 7, 8]
    assert err.failures[3] == "3006: too large"
    assert "1 vectors for 3 texts" in err.failures[6]
    assert [r[0] if r else None for r in err.results] == [0.0, 1.0, 2.0, None, None, None, None, None, None]
    assert "6 of 9 texts" in str(err)
    assert err.request_id.startswith("job-")  # the first batch queued, as before embed_many ran on batch_many's flow


def test_the_deadline_names_every_unfinished_request_id(server: ScriptedServer) -> None:
    sim = QueueSim(states=["queued"])
    server.script(sim)
    texts = [f"{'x' * 300} {i}" for i in range(20)]

    with pytest.raises(BatchTimeoutError) as info:
        embed_many(client(server).model(BASE), texts, batch_size=5, max_bytes=2000, timeout=0.01)
    assert sim.submits > 1
    for request_id in sim.jobs:
        assert request_id in str(info.value)


def test_a_failed_later_submission_reports_the_batches_already_queued(server: ScriptedServer) -> None:
    sim = QueueSim()
    calls = {"n": 0}

    def reply(req: Any) -> Any:
        calls["n"] += 1
        return fail(413, 3006, "Request is too large") if calls["n"] == 2 else sim(req)

    server.script(reply)
    texts = [f"{'x' * 300} {i}" for i in range(20)]
    from workers_ai.errors import BatchError

    with pytest.raises(BatchError) as info:
        embed_many(client(server).model(BASE), texts, batch_size=5, max_bytes=2000)
    (queued,) = sim.jobs
    assert queued in str(info.value) and "3006" in str(info.value)


def test_typed_struct_results_feed_embed_many_on_bge_m3(server: ScriptedServer) -> None:
    server.script(QueueSim(states=["done"]))
    ai = client(server)
    vectors = ai.model(M3).embed_many(["t 1", "t 2"])
    assert vectors == [[1.0, 3.0], [2.0, 3.0]]
    # The same reply through the batch API: each item decodes to a struct (not a dict), which is what
    # embed_many read the vectors from.
    item = ai.model(M3).batch([{"text": ["t 1", "t 2"]}]).wait().items[0]
    assert isinstance(item.result, bge_m3.EmbeddingOutput)
    assert item.result.data == [[1.0, 3.0], [2.0, 3.0]]
