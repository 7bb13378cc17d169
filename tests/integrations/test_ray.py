"""workers_ai.ray on a real local Ray cluster (2 CPUs) against the emulator on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray
import ray.data
from workers_ai import WorkersAI
from workers_ai.errors import ConfigurationError
from workers_ai.ray import RowsFailedWarning, embed, map_model
from workers_ai.testing import Emulator

# Ray warns about its own deprecations while it starts and plans; they are not this project's.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

BGE = "@cf/baai/bge-m3"
SST = "@cf/huggingface/distilbert-sst-2-int8"


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(models=[BGE, SST]) as e:
        yield e


def _client(emu: Emulator, **options: Any) -> WorkersAI:
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **options)


def _texts(n: int) -> list[str]:
    return [f"row {i}: a note about topic {i % 17} and thing {i % 5}" for i in range(n)]


def _runs(emu: Emulator, since: int, model: str = BGE) -> list[Any]:
    return [r for r in emu.requests[since:] if r.model == model]


def _direct(ai: WorkersAI, texts: list[str]) -> np.ndarray:
    bge = ai.model(BGE)
    parts = [bge.embed(text=texts[i : i + 100]).data for i in range(0, len(texts), 100)]
    return np.asarray([v for part in parts for v in part], dtype=np.float32)


def test_embed_gives_float32_vectors_equal_to_direct_calls_in_order(cluster: None, emu: Emulator) -> None:
    ai = _client(emu)
    texts = _texts(450)
    ds = ray.data.from_items([{"id": i, "text": t, "lang": "en"} for i, t in enumerate(texts)], override_num_blocks=9)
    emu.inject("capacity", times=1, model=BGE, retry_after=0.2)  # a 429/3040 on the way: backed off, not a failure
    before = len(emu.requests)
    out_ds = embed(ds, BGE, client=ai).materialize()
    sent = _runs(emu, before)
    assert [r.status for r in sent].count(429) == 1
    assert all(len(r.json()["text"]) <= 100 for r in sent)  # requests sized to the schema's maxItems
    rows = out_ds.take_all()
    assert [r["id"] for r in rows] == list(range(450))
    assert all(r["lang"] == "en" and r["text"] == texts[r["id"]] and "error" not in r for r in rows)
    vectors = np.stack([r["embedding"] for r in rows])
    assert vectors.dtype == np.float32 and vectors.shape == (450, 1024)
    assert np.array_equal(vectors, _direct(ai, texts))
    column = out_ds.schema().base_schema.field("embedding").type  # pyright: ignore[reportAttributeAccessIssue]
    assert "Tensor" in type(column).__name__ and "float" in str(column.storage_type), column


def test_a_failing_row_gets_an_error_and_the_others_their_vectors(cluster: None, emu: Emulator) -> None:
    ai = _client(emu, max_retries=0)
    texts = _texts(120)
    texts[37] = "poison pill"
    on = [True]
    emu.inject(
        "internal_error",
        times=None,
        model=BGE,
        match=lambda r: on[0] and b"poison" in r.body,
        status=400,
        code=5006,
        message="input rejected",
    )
    try:
        ds = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=2)
        with pytest.warns(RowsFailedWarning, match="1 of 120 rows failed"):
            rows = embed(ds, BGE, client=ai, on_error="column").take_all()
        with pytest.raises(Exception, match=r"1 of 10 rows of a batch failed after retries: row .*poison pill"):
            embed(ray.data.from_items([{"text": t} for t in texts[30:40]]), BGE, client=ai, on_error="raise").take_all()
    finally:
        on[0] = False
        emu.clear_faults()
    errors = [r["error"] for r in rows]
    assert errors[37] is not None and ("5006" in errors[37] or "rejected" in errors[37])
    assert [i for i, e in enumerate(errors) if e is not None] == [37]
    assert np.isnan(rows[37]["embedding"]).all()
    good = [i for i in range(120) if i != 37]
    assert np.array_equal(np.stack([rows[i]["embedding"] for i in good]), _direct(ai, [texts[i] for i in good]))


def test_the_rate_budget_holds_across_actors(cluster: None, emu: Emulator) -> None:
    ai = _client(emu, rate_limit={BGE: 600})  # 10/s for the whole job: 5/s (bursts of 5) per actor
    ds = ray.data.from_items([{"text": t} for t in _texts(400)], override_num_blocks=4)
    before = len(emu.requests)
    rows = embed(ds, BGE, client=ai, request_size=10, batch_size=100).take_all()
    assert len(rows) == 400 and all("error" not in r for r in rows)
    times = sorted(r.at for r in _runs(emu, before))
    assert len(times) == 40
    # Any one-second window: two actors' bursts (5 each) plus a second of the whole pace (10), plus edges.
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest <= 22, busiest


def test_a_rerun_with_the_same_output_path_pays_only_for_the_failed_rows(
    cluster: None, emu: Emulator, tmp_path: Path
) -> None:
    ai = _client(emu, max_retries=0)
    texts = _texts(300)
    ds = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=3)
    emu.inject("internal_error", times=None, model=BGE, match=lambda r: b"row 250:" in r.body)
    before = len(emu.requests)
    try:
        with pytest.warns(RowsFailedWarning, match="50 of 300 rows failed"):
            first = embed(
                ds, BGE, client=ai, batch_size=100, request_size=50, output_path=str(tmp_path), on_error="column"
            ).take_all()
    finally:
        emu.clear_faults()
    assert [i for i, r in enumerate(first) if r["error"] is not None] == list(range(250, 300))
    assert len(list(tmp_path.glob("*.parquet"))) == 3  # the batch with failed rows is saved with their errors
    middle = len(emu.requests)
    second = embed(ds, BGE, client=ai, batch_size=100, request_size=50, output_path=str(tmp_path)).take_all()
    resent = _runs(emu, middle)
    assert sorted(t for r in resent for t in r.json()["text"]) == sorted(texts[250:300])  # only the failed rows
    assert all("error" not in r for r in second)
    assert np.array_equal(np.stack([r["embedding"] for r in second]), _direct(ai, texts))
    assert len(_runs(emu, before)) > len(resent)


def test_map_model_classifies_each_row_in_order_with_per_row_errors(cluster: None, emu: Emulator) -> None:
    ai = _client(emu, max_retries=0)
    texts = _texts(60)
    texts[5] = "poison review"
    emu.inject("internal_error", times=None, model=SST, match=lambda r: b"poison" in r.body)
    try:
        ds = ray.data.from_items([{"n": i, "review": t} for i, t in enumerate(texts)], override_num_blocks=3)
        with pytest.warns(RowsFailedWarning, match="1 of 60 rows failed"):
            rows = map_model(
                ds,
                SST,
                method="classify",
                build=lambda row: {"text": row["review"]},
                parse=lambda out: max(out, key=lambda c: c.score or 0).label,
                client=ai,
                output_column="label",
                batch_size=20,
                on_error="column",
            ).take_all()
    finally:
        emu.clear_faults()
    assert [r["n"] for r in rows] == list(range(60))
    assert [i for i, r in enumerate(rows) if r["error"] is not None] == [5] and rows[5]["label"] is None
    sst = ai.model(SST)
    want = [max(sst.classify(text=texts[i]), key=lambda c: c.score or 0).label for i in (0, 1, 59)]
    assert [rows[i]["label"] for i in (0, 1, 59)] == want


LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


def _question(row: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": f"question {row['id']}", "external_reference": f"row-{row['id']}"}


def test_map_model_queue_mode_resumes_paying_only_for_what_never_reached_the_queue(
    cluster: None, tmp_path: Path
) -> None:
    with Emulator(models=[LLAMA], batch_polls=(10**6, 0)) as qemu:
        ai = _client(qemu)
        ds = ray.data.from_items([{"id": i} for i in range(60)], override_num_blocks=3)

        def run(timeout: float) -> list[dict[str, Any]]:
            out = map_model(
                ds,
                LLAMA,
                build=_question,
                client=ai,
                queue=True,
                queue_options={"timeout": timeout, "poll_interval": 0.05},
                batch_size=20,
                output_path=str(tmp_path),
            )
            return out.take_all()

        # The queue never finishes in time: the job fails after queueing (some of) the blocks.
        with pytest.raises(Exception, match="unfinished"):
            run(1.0)
        queued = qemu.batch_items_received
        assert queued and set(queued.values()) == {1}
        assert sorted(p.name.rsplit(".", 1)[1] for p in tmp_path.iterdir()) == ["journal"] * len(
            list(tmp_path.iterdir())
        )
        # Once the queue moves, the same job: what was queued is polled, not sent again.
        qemu.batch_polls = (0, 0)
        rows = run(60.0)
        received = qemu.batch_items_received
        assert sorted(received) == sorted(f"row-{i}" for i in range(60))
        assert set(received.values()) == {1}
        assert [r["id"] for r in rows] == list(range(60))
        assert all("error" not in r and f"question {r['id']}" in r["output"] for r in rows)
        assert all(r.query == "queueRequest=true" for r in qemu.requests)  # no call per row
        # Every block finished: a third run reads the checkpoints and sends nothing at all.
        before = len(qemu.requests)
        assert [r["id"] for r in run(60.0)] == list(range(60))
        assert len(qemu.requests) == before


def test_map_model_queue_mode_refuses_a_model_without_batches(cluster: None, emu: Emulator) -> None:
    from workers_ai.errors import ConfigurationError

    ds = ray.data.from_items([{"text": "x"}])
    with pytest.raises(ConfigurationError, match="no async batch"):
        map_model(ds, SST, build=lambda row: {"text": row["text"]}, client=_client(emu), queue=True)
    with pytest.raises(ConfigurationError, match="give no method"):
        map_model(ds, BGE, build=lambda row: {"text": row["text"]}, client=_client(emu), queue=True, method="embed")


@pytest.mark.parametrize(
    "bad",
    [{"poll_interval": -1.0}, {"timeout": True}, {"timeout": float("nan")}, {"batch_size": 0}, {"jurnal": "x"}],
)
def test_map_model_queue_options_are_checked_on_the_driver_as_batch_many_does(
    cluster: None, emu: Emulator, bad: dict[str, Any]
) -> None:
    """A bad queue option fails map_model itself (nothing planned, nothing sent), with the error
    batch_many gives in-process, not later on a worker."""
    ai = _client(emu)
    with pytest.raises((TypeError, ConfigurationError)) as in_process:
        ai.model(LLAMA).batch_many([{"prompt": "x"}], **bad)
    ds = ray.data.from_items([{"id": 0}])
    before = len(emu.requests)
    with pytest.raises(type(in_process.value)) as on_driver:
        map_model(ds, LLAMA, build=_question, client=ai, queue=True, queue_options=bad)
    assert str(on_driver.value) == str(in_process.value)
    assert len(emu.requests) == before
