"""batch_many against the emulator's queue: order, keys, per-item retries, the journal, timeouts, 10 MB.

The emulator shuffles every finished batch's responses (``shuffle_batches``), so each run here also
checks that items are matched by ``id``, not by position. ``emu.batch_items_received`` counts every item
the emulator received, by external_reference: what proves nothing was sent twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from workers_ai._batch.embed_plan import BatchProgress
from workers_ai._batch.journal import JournalError
from workers_ai.errors import BatchItemError, BatchTimeoutError, ConfigurationError, InputValidationError
from workers_ai.models.cf.meta.llama_3_3_70b_instruct_fp8_fast import TextGenerationOutput
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
M2M = "@cf/openai/gpt-oss-20b"


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(models=[LLAMA, M2M, "@cf/huggingface/distilbert-sst-2-int8"], batch_polls=(1, 1)) as e:
        yield e


def _prompts(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"prompt": f"question {i}"} for i in range(start, start + n)]


def _submissions(emu: Emulator) -> list[Any]:
    return [r for r in emu.requests if "requests" in r.json()]


def test_every_request_gets_its_item_in_input_order_each_sent_once(emu: Emulator) -> None:
    ai = emu.client()
    seen: list[BatchProgress] = []
    items = ai.model(LLAMA).batch_many(_prompts(2500), batch_size=300, poll_interval=0.01, on_progress=seen.append)
    assert [i.id for i in items] == list(range(2500))
    assert [i.external_reference for i in items] == [str(i) for i in range(2500)]
    assert all(isinstance(i.output, TextGenerationOutput) for i in items)
    assert "question 1234" in items[1234].output.response  # the emulator answers about the prompt
    received = emu.batch_items_received
    assert len(received) == 2500 and set(received.values()) == {1}
    assert len(_submissions(emu)) == 9  # 300 per batch
    assert seen[-1].done == seen[-1].total == 2500
    assert ai.usage.total.items == 2500


def test_async_client_runs_the_same_flow(emu: Emulator) -> None:
    async def main() -> list[Any]:
        async with emu.async_client() as ai:
            return await ai.model(M2M).batch_many(
                [{"input": f"hello {i}"} for i in range(50)], batch_size=20, poll_interval=0.01
            )

    items = asyncio.run(main())
    assert [i.id for i in items] == list(range(50))
    assert all(i.success for i in items)
    assert set(emu.batch_items_received.values()) == {1} and len(emu.batch_items_received) == 50


def test_caller_keys_are_sent_and_checked(emu: Emulator) -> None:
    from workers_ai import BatchRequest

    reqs = [BatchRequest({"prompt": f"q{i}"}, external_reference=f"doc-{i}") for i in range(5)]
    items = emu.client().model(LLAMA).batch_many(reqs, poll_interval=0.01)
    assert [i.external_reference for i in items] == [f"doc-{i}" for i in range(5)]
    assert sorted(emu.batch_items_received) == sorted(f"doc-{i}" for i in range(5))


def test_retryable_item_failures_are_resent_alone(emu: Emulator) -> None:
    emu.inject("batch_item_error", items=(1, 3), code=3040, message="Capacity temporarily exceeded")
    items = emu.client().model(LLAMA).batch_many(_prompts(10), poll_interval=0.01)
    assert all(i.success for i in items)
    received = emu.batch_items_received
    assert received["1"] == received["3"] == 2 and sum(received.values()) == 12
    retry = _submissions(emu)[-1].json()["requests"]
    assert [r["external_reference"] for r in retry] == ["1", "3"]
    assert "question 3" in items[3].output.response


def test_a_failure_not_worth_retrying_is_reported_on_its_item(emu: Emulator) -> None:
    emu.inject("batch_item_error", items=(2,), code=5006, message="AiError: Bad input: nope")
    items = emu.client().model(LLAMA).batch_many(_prompts(4), poll_interval=0.01)
    assert [i.success for i in items] == [True, True, False, True]
    with pytest.raises(BatchItemError, match=r"batch request 2 failed: .*nope"):
        _ = items[2].output
    assert emu.batch_items_received["2"] == 1


def test_item_retries_are_bounded(emu: Emulator) -> None:
    emu.inject("batch_item_error", items=(0,), code=3040, times=None)
    items = emu.client().model(LLAMA).batch_many(_prompts(3), poll_interval=0.01, item_retries=2)
    assert not items[0].success and items[1].success and items[2].success
    assert "3040" in (items[0].error or "") or "Capacity" in (items[0].error or "")
    assert emu.batch_items_received["0"] == 3


def test_an_external_reference_that_does_not_match_is_a_failed_item(
    emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = emu.state.jobs
    add = jobs.add

    def mixed_up(job: Any) -> None:  # a server that echoes another request's reference on item 1
        job.refs[1] = "someone-else"
        add(job)

    monkeypatch.setattr(jobs, "add", mixed_up)
    items = emu.client().model(LLAMA).batch_many(_prompts(3), poll_interval=0.01)
    assert items[0].success and items[2].success and not items[1].success
    assert "'someone-else' is not the one sent ('1')" in (items[1].error or "")


def test_bad_input_names_the_request_and_sends_nothing(emu: Emulator) -> None:
    reqs: list[Any] = [*_prompts(3), {"prompt": 12}, *_prompts(3)]
    with pytest.raises(InputValidationError, match=r"\$\.requests\[3\]\.prompt"):
        emu.client().model(LLAMA).batch_many(reqs)
    assert emu.requests == []


@pytest.mark.parametrize("bad", [{"poll_interval": -1.0}, {"timeout": True}, {"timeout": float("nan")}])
def test_bad_timing_options_are_refused_before_anything_is_sent(emu: Emulator, bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(bad))):
        emu.client().model(LLAMA).batch_many(_prompts(2), **bad)

    async def run() -> None:
        async with emu.async_client() as ai:
            await ai.model(LLAMA).batch_many(_prompts(2), **bad)

    with pytest.raises(ConfigurationError, match=next(iter(bad))):
        asyncio.run(run())
    assert emu.requests == []


def test_a_model_without_a_batch_variant_is_refused(emu: Emulator) -> None:
    with pytest.raises(ConfigurationError, match="no async batch"):
        emu.client().model("@cf/huggingface/distilbert-sst-2-int8")._batch_many([{"text": "x"}], {})  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(TypeError, match="jurnal"):
        emu.client().model(LLAMA).batch_many(_prompts(1), jurnal="x")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def test_a_batch_that_never_finishes_times_out_naming_its_request_ids(emu: Emulator, tmp_path: Path) -> None:
    emu.batch_polls = (10**6, 0)
    journal = tmp_path / "j.jsonl"
    with pytest.raises(BatchTimeoutError) as info:
        emu.client().model(LLAMA).batch_many(
            _prompts(10), batch_size=4, poll_interval=0.01, timeout=0.3, journal=str(journal)
        )
    ids = [json.loads(line)["id"] for line in journal.read_text().splitlines() if '"submitted"' in line]
    assert len(ids) == 3
    for rid in ids:
        assert rid in str(info.value)
    assert "same journal" in str(info.value)
    # The same call with the same journal, once the queue moves: nothing is sent again.
    emu.batch_polls = (0, 0)
    items = emu.client().model(LLAMA).batch_many(_prompts(10), batch_size=4, poll_interval=0.01, journal=str(journal))
    assert all(i.success for i in items)
    assert set(emu.batch_items_received.values()) == {1}


def test_journal_resume_polls_known_ids_and_sends_only_the_rest(emu: Emulator, tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    h = emu.client().model(LLAMA)
    first = h.batch_many(_prompts(20), batch_size=5, poll_interval=0.01, journal=str(journal))
    submissions = len(_submissions(emu))
    again = h.batch_many(_prompts(20), batch_size=5, poll_interval=0.01, journal=str(journal))
    assert len(_submissions(emu)) == submissions  # all known: polled, not sent
    assert [i.result for i in again] == [i.result for i in first]
    # The journal shows the order of writes: each intent before its submitted record.
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert records[0]["t"] == "journal" and records[-1]["t"] == "finished"
    for b in range(4):
        kinds = [r["t"] for r in records if r.get("b") == b]
        assert kinds == ["intent", "submitted"]


def test_an_in_flight_batch_in_the_journal_is_sent_again_and_the_rest_is_not(emu: Emulator, tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    h = emu.client().model(LLAMA)
    h.batch_many(_prompts(20), batch_size=5, poll_interval=0.01, journal=str(journal))
    lines = journal.read_text().splitlines()
    # As if killed while batch 2 was being sent: its intent is there, its request id is not (and the
    # last line was torn mid-write).
    kept = [ln for ln in lines if not (json.loads(ln).get("b") in (2, 3) and json.loads(ln)["t"] == "submitted")]
    kept = [ln for ln in kept if json.loads(ln)["t"] != "finished" and json.loads(ln).get("b") != 3]
    journal.write_text("\n".join(kept) + '\n{"t":"submi')
    h.batch_many(_prompts(20), batch_size=5, poll_interval=0.01, journal=str(journal))
    received = emu.batch_items_received
    assert {k for k, v in received.items() if v == 2} == {str(i) for i in range(10, 20)}
    assert all(v == 1 for k, v in received.items() if int(k) < 10)


def test_async_journal_writes_leave_the_event_loop_free(
    emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fsync of the journal waits until another task of the loop has run: on the loop's thread it
    could not (the loop is blocked), so it would wait out its second and count as blocking."""
    journal = tmp_path / "j.jsonl"
    real_fsync = os.fsync
    ticked = threading.Event()
    blocked: list[bool] = []

    def slow_fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == str(journal):
            ticked.clear()
            blocked.append(not ticked.wait(1.0))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)

    async def main() -> list[Any]:
        stop = False

        async def ticker() -> None:
            while not stop:
                ticked.set()
                await asyncio.sleep(0.002)

        tick = asyncio.create_task(ticker())
        try:
            async with emu.async_client() as ai:
                return await ai.model(LLAMA).batch_many(
                    _prompts(12), batch_size=5, poll_interval=0.01, journal=str(journal)
                )
        finally:
            stop = True
            await tick

    items = asyncio.run(main())
    assert all(i.success for i in items)
    assert blocked == [False] * 8  # header, 3 intents, 3 submitted, finished: none on the loop's thread
    kinds = [json.loads(line)["t"] for line in journal.read_text().splitlines()]
    assert kinds == ["journal", *["intent", "submitted"] * 3, "finished"]


@pytest.mark.parametrize(
    ("model", "requests", "match"),
    [
        (LLAMA, _prompts(21), "written for 20 requests"),
        (LLAMA, [*_prompts(19), {"prompt": "another"}], "other requests"),
        (M2M, [{"input": "x"}] * 20, f"model {LLAMA}, not {M2M}"),
    ],
)
def test_a_journal_of_another_run_is_refused_naming_the_difference(
    emu: Emulator, tmp_path: Path, model: str, requests: list[Any], match: str
) -> None:
    journal = tmp_path / "j.jsonl"
    emu.client().model(LLAMA).batch_many(_prompts(20), poll_interval=0.01, journal=str(journal))
    before = len(emu.requests)
    with pytest.raises(JournalError, match=match):
        emu.client().model(model).batch_many(requests, poll_interval=0.01, journal=str(journal))
    assert len(emu.requests) == before  # nothing sent


def test_batches_stay_under_max_bytes_and_a_request_too_big_alone_is_refused(emu: Emulator) -> None:
    h = emu.client().model(LLAMA)
    reqs = [{"prompt": "x" * 3000 + str(i)} for i in range(10)]
    items = h.batch_many(reqs, max_bytes=10_000, poll_interval=0.01)
    assert all(i.success for i in items)
    sizes = [len(r.body) for r in _submissions(emu)]
    assert len(sizes) == 4 and max(sizes) < 10_000  # 3 per batch (3 x ~3040 + 13 bytes of frame)
    emu.reset()
    with pytest.raises(InputValidationError, match=r"\$\.requests\[1\].*a batch must be under 10,000"):
        h.batch_many([{"prompt": "x"}, {"prompt": "y" * 10_000}], max_bytes=10_000)
    assert emu.requests == []


def test_the_emulator_refuses_a_batch_body_over_10_mb_as_the_api_does(emu: Emulator) -> None:
    pool = urllib3.PoolManager()
    url = emu.base_url.rstrip("/") + f"/accounts/{emu.account_id}/ai/run/{LLAMA}?queueRequest=true"
    headers = {"authorization": f"Bearer {emu.api_token}", "content-type": "application/json"}

    def body(total: int) -> bytes:
        frame = b'{"requests":[{"prompt":""}]}'
        pad = total - len(frame)
        return b'{"requests":[{"prompt":"' + b"a" * pad + b'"}]}'

    under = pool.request("POST", url, body=body(10_000_000), headers=headers)
    assert under.status == 200 and json.loads(under.data)["result"]["status"] == "queued"
    over = pool.request("POST", url, body=body(10_000_001), headers=headers)
    assert over.status == 413 and json.loads(over.data)["errors"][0]["code"] == 3006


def test_the_sdk_sends_a_batch_of_just_under_10_mb_in_one_piece(emu: Emulator) -> None:
    h = emu.client().model(LLAMA)
    # Two requests whose batch body is 9,999,999 bytes: one batch. One byte more: two.
    frame = len(b'{"requests":[') + len(b"]}") + 1
    each = (9_999_999 - frame) // 2
    unit = len(b'{"prompt":"","external_reference":"0"}')
    reqs = [{"prompt": "a" * (each - unit)}, {"prompt": "b" * (9_999_999 - frame - each - unit)}]
    h.batch_many(reqs, poll_interval=0.01)
    assert [len(r.body) for r in _submissions(emu)] == [9_999_999]
    emu.reset()
    reqs[1] = {"prompt": reqs[1]["prompt"] + "b"}
    h.batch_many(reqs, poll_interval=0.01)
    assert len(_submissions(emu)) == 2


def test_a_journal_in_use_by_another_run_is_refused(emu: Emulator, tmp_path: Path) -> None:
    from workers_ai._batch.journal import Journal

    journal = tmp_path / "j.jsonl"
    holder = Journal(journal, LLAMA, 3, "f" * 64)  # another run holds it open (and locked)
    try:
        with pytest.raises(JournalError, match="in use by another run"):
            emu.client().model(LLAMA).batch_many(_prompts(3), journal=str(journal))
        assert emu.requests == []
    finally:
        holder.close()
    emu.client().model(LLAMA).batch_many(_prompts(1), poll_interval=0.01, journal=str(tmp_path / "other"))
