"""One rate budget for a Ray job, on a real local Ray cluster (2 CPUs, one for the whole module) against
the emulator enforcing the same limit: 4 actors at the limit without 429s, an actor killed with SIGKILL, an
actor never placed, a 429 slowing every actor, no double split; nothing lost quietly.

The limit is scaled down (600 requests/min) and the jobs are tiny (about 60 requests), so each job runs a
few seconds past Ray's start-up; rates are measured on the server's arrival times, never as wall time."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray
import ray.data
from workers_ai import WorkersAI
from workers_ai._core.ratelimit import RateBudget
from workers_ai._ray.budget import _HANDLES  # pyright: ignore[reportPrivateUsage]
from workers_ai.budget import host_budget
from workers_ai.ray import RowsFailedWarning, cluster_budget, embed, failures, map_model
from workers_ai.testing import Emulator

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
RPM = 600.0  # 10 a second for the whole job
ACTOR = "ray::MapWorker(MapBatches("


def _limited(**options: Any) -> Emulator:
    return Emulator(models=[BGE, LLAMA], rate_limits={BGE: RPM}, latency=(0.02, 0.08), **options)


def _client(emu: Emulator, **options: Any) -> WorkersAI:
    options.setdefault("rate_limit", RPM)
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **options)


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "text": f"row {i}: a note about topic {i % 17}"} for i in range(n)]


def _workers(title: str = ACTOR) -> list[int]:
    """Pids of this cluster's Ray Data actor processes (children of this session's raylet only)."""
    import ray._private.worker as worker

    node: Any = worker._global_node  # pyright: ignore[reportPrivateUsage]
    raylet = node.all_processes["raylet"][0].process.pid
    found: list[int] = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == raylet and cmdline.startswith(title):
            found.append(int(pid))
    return found


def _rate(emu: Emulator, since: int = 0) -> float:
    """Answered requests per second over the job's steady part (its first second and last half second left
    out: the burst, and the tail where fewer actors have work)."""
    times = sorted(r.at for r in emu.requests[since:] if r.status == 200 and r.model == BGE)
    start, end = times[0] + 1.0, times[-1] - 0.5
    return sum(1 for t in times if start <= t < end) / (end - start)


def _embed(emu: Emulator, ai: WorkersAI, rows: int, **options: Any) -> list[dict[str, Any]]:
    ds = ray.data.from_items(_rows(rows), override_num_blocks=16)
    options = {"request_size": 2, "batch_size": 8, "concurrency": 4, **options}
    return embed(ds, BGE, client=ai, **options).take_all()


def _check_rows(out: list[dict[str, Any]], rows: int) -> None:
    assert [r["id"] for r in out] == list(range(rows))  # rows in = rows out, in order, none twice
    vectors = np.stack([r["embedding"] for r in out])
    assert vectors.shape == (rows, 1024) and not np.isnan(vectors).any()


def test_four_actors_keep_to_one_budget_for_the_job_without_429s(cluster: None) -> None:
    with _limited() as emu:
        out = _embed(emu, _client(emu), 120)  # 60 requests
        _check_rows(out, 120)
        assert emu.rate_limited == {}
        rate = _rate(emu)
        assert 0.85 * RPM / 60 <= rate <= 1.1 * RPM / 60, rate
        ledgers = [ray.get(h.state.remote()) for h in _HANDLES.values()]
        assert [ledger[BGE][0] for ledger in ledgers if BGE in ledger] == [RPM]  # the whole limit, kept once


def _no_workers_left() -> None:
    """Wait for the actors of earlier jobs to exit (Ray ends them after their job, not at once)."""
    deadline = time.monotonic() + 60
    while _workers() and time.monotonic() < deadline:
        time.sleep(0.2)


def test_an_actor_never_placed_leaves_its_share_to_the_others(cluster: None) -> None:
    seen: list[tuple[float, int]] = []
    stop = threading.Event()
    _no_workers_left()

    def watch() -> None:
        while not stop.is_set():
            seen.append((time.time(), len(_workers())))  # the emulator records wall time
            time.sleep(0.1)

    with _limited() as emu:
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            out = _embed(emu, _client(emu), 120, num_cpus=0.75)  # 4 actors of 0.75 CPU: 2 fit on 2 CPUs
        finally:
            stop.set()
            watcher.join()
        _check_rows(out, 120)
        times = [r.at for r in emu.requests]
        assert max(n for at, n in seen if min(times) <= at <= max(times)) == 2
        assert emu.rate_limited == {}
        rate = _rate(emu)
        assert rate >= 0.85 * RPM / 60, rate  # a fixed share per actor would give half


def test_an_actor_killed_with_sigkill_leaves_its_share_and_loses_no_row(cluster: None) -> None:
    killed: list[float] = []

    with _limited() as emu:

        def kill_one() -> None:
            while len(emu.requests) < 20:
                time.sleep(0.02)
            pids = _workers()
            os.kill(pids[0], signal.SIGKILL)
            killed.append(time.time())

        killer = threading.Thread(target=kill_one)
        killer.start()
        out = _embed(emu, _client(emu), 140)
        killer.join()
        assert killed
        _check_rows(out, 140)  # the killed actor's batch was done again by another: no row lost or twice
        assert emu.rate_limited == {}
        after = sorted(r.at for r in emu.requests if r.at > killed[0] and r.status == 200)
        span = after[-1] - 0.5 - (killed[0] + 0.5)
        rate = sum(1 for t in after if killed[0] + 0.5 <= t < after[-1] - 0.5) / span
        assert rate >= 0.8 * RPM / 60, rate  # the three others took its share at once


def test_a_429_with_retry_after_slows_every_actor(cluster: None) -> None:
    with _limited() as emu:
        refused: list[float] = []

        def refuse_once() -> None:
            while len(emu.requests) < 15:
                time.sleep(0.01)
            emu.inject("rate_limit", times=1, model=BGE, retry_after=1.5)

        injector = threading.Thread(target=refuse_once)
        injector.start()
        out = _embed(emu, _client(emu), 100)
        injector.join()
        _check_rows(out, 100)
        refused = [r.at for r in emu.requests if r.status == 429]
        assert len(refused) == 1
        # From 0.9 s on: slots leased before the 429 reached the keeper (at most 0.5 s ahead) have been sent by
        # then, their replies' latency (up to 0.2 s) and a loaded machine's Ray round trip included.
        during = [r.at for r in emu.requests if refused[0] + 0.9 < r.at < refused[0] + 1.4]
        # One actor got the 429; with a budget per actor the three others would send about 4 meanwhile.
        assert len(during) <= 1, [round(t - refused[0], 2) for t in during]


def test_the_clients_budget_is_the_jobs_never_split_again(cluster: None, caplog: pytest.LogCaptureFixture) -> None:
    with _limited() as emu:
        ds = ray.data.from_items(_rows(8))
        with caplog.at_level(logging.INFO, logger="workers_ai"):
            embed(ds, BGE, client=_client(emu), concurrency=4)
        assert "one rate budget for the whole job, 600 requests/min for @cf/baai/bge-m3" in caplog.text
        assert "shared by 4 actors" in caplog.text
        # A client that already holds the job's budget keeps it (the same coordinator, not a new split).
        mine = cluster_budget(RPM, name="test-budget")
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="workers_ai"):
            out = embed(ds, BGE, client=_client(emu, rate_limit=mine), concurrency=4).take_all()
        assert len(out) == 8 and "through test-budget" in caplog.text
        state = ray.get(ray.get_actor("test-budget").state.remote())
        assert state[BGE][0] == RPM
        # A share of a limit (the old advice, divided by hand) is used as it is, with a warning saying so.
        with pytest.warns(UserWarning, match=r"0.25 of its limit \(150 requests/min"):
            embed(ds, BGE, client=_client(emu, rate_limit=RateBudget(RPM).scaled(0.25)), concurrency=4)
        # A host budget reaches one machine: the job gets one of the same limits instead.
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="workers_ai"):
            embed(ds, BGE, client=_client(emu, rate_limit=host_budget(RPM, name="ray-test")), concurrency=2)
        assert "600 requests/min" in caplog.text and "workers-ai-budget-" in caplog.text


def test_a_failed_row_fails_the_job_by_default_naming_the_row_and_its_error(cluster: None) -> None:
    with _limited() as emu:
        emu.inject("internal_error", times=None, model=LLAMA, match=lambda r: b"question 7" in r.body)
        ds = ray.data.from_items([{"doc": f"d{i}", "q": f"question {i}"} for i in range(12)])
        with pytest.raises(Exception, match=r"1 of 12 rows of a batch failed after retries: row \{'doc': 'd7'") as info:
            map_model(
                ds, LLAMA, build=lambda row: {"prompt": row["q"]}, client=_client(emu, max_retries=0), batch_size=12
            ).take_all()
        assert "InternalServerError" in str(info.value) and "3043" in str(info.value)


def test_queue_mode_merges_rows_into_requests_of_many_texts(cluster: None) -> None:
    with _limited(batch_polls=(0, 0)) as emu:
        ai = _client(emu)
        texts = [r["text"] for r in _rows(450)]
        ds = ray.data.from_items([{"text": t} for t in texts])
        out = map_model(
            ds,
            BGE,
            build=lambda row: {"text": row["text"]},
            parse=lambda o: list(o.data[0]),
            client=ai,
            queue=True,
            concurrency=1,
            queue_options={"poll_interval": 0.05},
        ).take_all()
        submitted = [r.json() for r in emu.requests if "requests" in r.json()]
        assert len(submitted) == 1  # 450 rows: one queued batch...
        assert [len(q["text"]) for q in submitted[0]["requests"]] == [100, 100, 100, 100, 50]  # ...of 5 requests
        assert len(emu.requests) <= 3  # the submission and its polls, against 5 direct requests
        direct = np.asarray(ai.model(BGE).embed(text=texts[:100]).data, dtype=np.float32)
        assert np.allclose(np.asarray([r["output"] for r in out[:100]], dtype=np.float32), direct)


def test_on_error_column_counts_the_failed_rows_and_a_rerun_retries_only_them(cluster: None, tmp_path: Path) -> None:
    with _limited(batch_polls=(0, 0)) as emu:
        ai = _client(emu)
        ds = ray.data.from_items([{"id": i} for i in range(20)])

        def run() -> Any:
            return map_model(
                ds,
                LLAMA,
                build=lambda row: {"prompt": f"question {row['id']}", "external_reference": f"row-{row['id']}"},
                client=ai,
                queue=True,
                queue_options={"poll_interval": 0.05},
                batch_size=20,
                on_error="column",
                output_path=str(tmp_path),
            )

        emu.inject("batch_item_error", items=(3, 7), code=5006, message="input rejected")
        with pytest.warns(RowsFailedWarning, match=r"2 of 20 rows failed .*row 3: .*5006.*same output_path"):
            first = run()
        found = failures(first)
        assert found is not None and (found.count, found.rows) == (2, 20)
        assert [row for row, _ in found.examples] == [3, 7]
        rows = first.take_all()
        assert [i for i, r in enumerate(rows) if r["error"] is not None] == [3, 7]
        assert rows[3]["output"] is None and rows[4]["output"] is not None
        before = emu.batch_items_received
        second = run()  # no warning: everything succeeds now
        sent_again = {k: v - before.get(k, 0) for k, v in emu.batch_items_received.items() if v > before.get(k, 0)}
        assert sent_again == {"row-3": 1, "row-7": 1}
        again = failures(second)
        assert again is not None and again.count == 0
        assert all(r["error"] is None and "question" in r["output"] for r in second.take_all())
