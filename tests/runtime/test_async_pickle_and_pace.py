"""AsyncWorkersAI with the shared mechanisms of ``_pickle`` and ``_ratelimit``: it pickles like the sync
client (connections rebuilt in the receiving loop or process) and its tasks share one rate budget."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI
from workers_ai.models.cf.baai.bge_m3 import AsyncBgeM3
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def _client(emu: Emulator, **options: Any) -> AsyncWorkersAI:
    return AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **options)


async def _embed(handle: Any, text: str) -> list[float]:
    try:
        return list((await handle.embed(text=[text])).data[0])
    finally:
        await handle.client.aclose()


def _embed_in_worker(blob: bytes, text: str) -> tuple[int, list[float], str]:
    handle = pickle.loads(blob)
    return os.getpid(), asyncio.run(_embed(handle, text)), type(handle).__name__


def test_async_client_and_handles_round_trip(emu: Emulator) -> None:
    ai = _client(emu, max_retries=3, timeout=9.5)
    handle = ai.model(BGE)
    want = asyncio.run(_embed(handle, "pickled"))  # the original has opened (and closed) a session
    blob = pickle.dumps(handle)
    assert emu.api_token.encode() in blob
    copy = pickle.loads(blob)
    assert type(copy) is AsyncBgeM3 and copy.client is not ai
    assert (copy.client.timeout, copy.client.max_retries) == (9.5, 3)
    assert asyncio.run(_embed(copy, "pickled")) == want
    for obj in (ai, handle, copy, copy.client):
        assert emu.api_token not in repr(obj) and emu.api_token not in str(obj)


def test_spawn_pool_workers_get_working_async_handles(emu: Emulator) -> None:
    handle = _client(emu).model(BGE)
    want = {t: asyncio.run(_embed(handle, t)) for t in ("one", "two")}
    blob = pickle.dumps(handle)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(_embed_in_worker, [(blob, t) for t in want])
    assert all(pid != os.getpid() and name == "AsyncBgeM3" for pid, _, name in results)
    assert [vec for _, vec, _ in results] == [pytest.approx(v) for v in want.values()]


def test_tasks_share_one_budget_held_at_the_server(emu: Emulator) -> None:
    ai = _client(emu, rate_limit=1200)  # 20/s, bursts of 20

    async def main() -> None:
        handle = ai.model(BGE)
        try:
            await asyncio.gather(*(handle.embed(text="paced") for _ in range(60)))
        finally:
            await ai.aclose()

    asyncio.run(main())
    times = sorted(r.at for r in emu.requests)
    assert len(times) == 60
    # In any one-second window: the burst (20) plus one second of pace (20), plus clock edges and the few
    # requests a loaded machine delivers late and together (times are taken at the server); unpaced, all
    # 60 arrive within the first second.
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest <= 48, busiest
    assert times[-1] - times[0] >= 1.5  # 60 requests at 20/s after a burst of 20 cannot all go at once


def test_a_capacity_error_slows_the_async_budget_and_logs(emu: Emulator, caplog: pytest.LogCaptureFixture) -> None:
    ai = _client(emu, rate_limit=6000)
    emu.inject("capacity", retry_after=0.2)

    async def main() -> Any:
        try:
            return await ai.model(BGE).embed(text="x")
        finally:
            await ai.aclose()

    with caplog.at_level(logging.INFO, logger="workers_ai"):
        out = asyncio.run(main())
    assert len(out.data) == 1 and len(emu.requests) == 2
    pace = ai.rate_budget.pace(BGE)
    assert pace is not None and pace.current < 6000
    assert any("rate budget" in r.getMessage() for r in caplog.records)
