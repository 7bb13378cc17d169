"""One rate budget for the processes of a host (``workers_ai.budget.host_budget``): processes, threads and
asyncio tasks keep to the limit together against an emulator that enforces it; the ledger's rules on a
clock; the file lock goes with a process killed by SIGKILL."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai._core.shared_pace import EXPIRE, LeasedPace, Ledger
from workers_ai.budget import HostKeeper, host_budget
from workers_ai.errors import ConfigurationError
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"
RPM = 600.0  # 10 a second


def _embed_in_threads(blob: bytes, threads: int, each: int) -> None:
    handle = pickle.loads(blob)

    def loop() -> None:
        for _ in range(each):
            handle.embed(text="shared")

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


def _run_processes(blob: bytes, processes: int, method: str = "spawn") -> None:
    ctx = multiprocessing.get_context(method)
    procs = [ctx.Process(target=_embed_in_threads, args=(blob, 3, 5)) for _ in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0


def _client(emu: Emulator, rate_limit: Any) -> WorkersAI:
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, rate_limit=rate_limit)


def test_processes_sharing_a_host_budget_keep_to_the_limit_together(tmp_path: Path) -> None:
    with Emulator(models=[BGE], rate_limits={BGE: RPM}, latency=(0.01, 0.05)) as emu:
        budget = host_budget(RPM, name="procs", directory=str(tmp_path))
        _run_processes(pickle.dumps(_client(emu, budget).model(BGE)), 3)  # 45 requests, 9 threads
        assert emu.rate_limited == {}
        times = sorted(r.at for r in emu.requests)
        assert len(times) == 45
        assert times[-1] - times[0] >= (45 - 6) / 10 - 0.3  # half a second's burst, then 10 a second
        # The same three processes, each with a budget of its own at the same limit: three times the rate.
        time.sleep(1.2)
        emu.reset()
        _run_processes(pickle.dumps(_client(emu, RPM).model(BGE)), 3)
        assert emu.rate_limited.get(BGE, 0) > 0


def test_forked_children_threads_and_async_tasks_share_it_too(tmp_path: Path) -> None:
    with Emulator(models=[BGE], rate_limits={BGE: RPM}, latency=(0.01, 0.05)) as emu:
        budget = host_budget(RPM, name="mixed", directory=str(tmp_path))
        ai = _client(emu, budget)
        ai.model(BGE).embed(text="the parent leases first")

        async def tasks() -> None:
            async with AsyncWorkersAI(
                account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, rate_limit=budget
            ) as aai:
                bge = aai.model(BGE)
                await asyncio.gather(*(bge.embed(text="async") for _ in range(15)))

        in_async = threading.Thread(target=asyncio.run, args=(tasks(),))
        in_async.start()
        _run_processes(pickle.dumps(ai.model(BGE)), 2, "fork")  # 30 more from two forked children
        in_async.join()
        assert emu.rate_limited == {}
        times = sorted(r.at for r in emu.requests)
        assert len(times) == 46
        assert times[-1] - times[0] >= (46 - 6) / 10 - 0.3


def test_a_process_killed_while_holding_the_lock_leaves_it_free(tmp_path: Path) -> None:
    path = str(tmp_path / "budget.json")
    ready = multiprocessing.get_context("fork").Event()

    def hold() -> None:
        keeper = HostKeeper(path)
        keeper._update(lambda ledger, now: (ready.set(), time.sleep(60)))  # pyright: ignore[reportPrivateUsage]

    child = multiprocessing.get_context("fork").Process(target=hold)
    child.start()
    assert ready.wait(30)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    start = time.monotonic()
    offsets, current, blocked = HostKeeper(path).lease(BGE, RPM, 1, 0)
    assert time.monotonic() - start < 2 and len(offsets) == 1 and (current, blocked) == (RPM, 0.0)


def test_the_ledger_books_leases_back_to_back_and_gives_returned_slots_to_the_next() -> None:
    ledger = Ledger()
    first, _, _ = ledger.lease(100.0, BGE, RPM, 8, "a", 0)  # alone: up to half a second's worth (5)
    assert first == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.0])  # the burst: five at once
    second, _, _ = ledger.lease(100.0, BGE, RPM, 8, "b", 0)  # two holders: 2 each
    assert second == pytest.approx([0.1, 0.2])
    ledger.release(100.0, BGE, RPM, [0.2])  # "b" goes idle: its slot at +0.2 goes to the next to ask
    third, _, _ = ledger.lease(100.05, BGE, RPM, 1, "a", 0)
    assert third == pytest.approx([0.15])
    before = ledger.throttle(100.1, BGE, RPM, 2.0, age=0.05)  # a refusal: half the rate, blocked 2 s
    assert before == RPM and ledger.schedules[BGE].current == RPM / 2
    assert ledger.throttle(100.2, BGE, RPM, 2.0, age=0.5)  # sent before the first refusal: not halved again
    assert ledger.schedules[BGE].current == RPM / 2
    after, current, wait = ledger.lease(100.2, BGE, RPM, 1, "a", 0)  # blocked: nothing, ask again 0.5 s before
    assert after == [] and current == RPM / 2 and wait == pytest.approx(1.5)
    after, _, blocked = ledger.lease(101.7, BGE, RPM, 1, "a", 0)
    assert after == pytest.approx([0.5]) and blocked == pytest.approx(0.5)
    ledger.lease(103.0, BGE, RPM, 1, "a", 10)  # ten successes reported: a fiftieth of the limit each
    assert ledger.schedules[BGE].current == pytest.approx(RPM / 2 + RPM / 5)
    assert Ledger.from_builtins(ledger.to_builtins()).to_builtins() == ledger.to_builtins()
    assert Ledger.from_builtins("torn").schedules == {}


def test_the_ledger_books_no_slot_more_than_half_a_second_ahead() -> None:
    # Many processes asking at once get the next half second between them; the next to ask is told when to
    # come back, so slots already handed out never outlast a refusal by more than that.
    ledger = Ledger()
    got = [ledger.lease(100.0, BGE, RPM, 4, f"p{i}", 0) for i in range(20)]
    offsets = [o for slots, _, _ in got for o in slots]
    assert 5 <= len(offsets) <= 11 and max(offsets) <= 0.5 + 1e-9
    slots, _, wait = got[-1]
    assert slots == [] and 0 < wait <= 0.1 + 1e-9


def test_a_leased_pace_drops_expired_slots_and_a_refusal_reaches_the_other_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "b.json")
    now = [1000.0]
    one = LeasedPace(BGE, RPM, HostKeeper(path), clock=lambda: now[0])
    other = LeasedPace(BGE, RPM, HostKeeper(path))
    assert one.lease_due
    one.refill()
    assert not one.lease_due
    now[0] += EXPIRE + 1  # the slots it held passed unused: dropped, a new lease is taken
    assert one.lease_due
    one.slow_down(1.0)  # a 429 with Retry-After 1: the keeper blocks every process
    start = time.monotonic()
    wait = other.reserve()
    assert time.monotonic() - start + wait >= 0.8  # waited in the lease, then for its slot


def test_host_budget_names_are_checked_and_pickle_as_their_path(tmp_path: Path) -> None:
    budget = host_budget(RPM, name="ok.name-1", directory=str(tmp_path))
    copy = pickle.loads(pickle.dumps(budget))
    assert copy.keeper == budget.keeper and copy.rpm(BGE) == RPM and copy.shared
    for bad in ("", "a/b", "x" * 101, "spaces no"):
        with pytest.raises(ConfigurationError, match="name"):
            host_budget(RPM, name=bad, directory=str(tmp_path))
    with pytest.raises(ConfigurationError, match="not a folder"):
        host_budget(RPM, directory=str(tmp_path / "missing"))
