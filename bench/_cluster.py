"""Bulk at the account's rate limit on a local Ray cluster, against the emulator enforcing that limit.

``python bench/_cluster.py SCENARIO [--rpm R] [--per-actor N] [--actors A]``: one run in this (fresh)
process; prints one JSON object. The emulator runs in this process (its own threads) with
``rate_limits={model: R}`` and ``latency=(0.05, 0.2)``; Ray starts with 2 CPUs (this machine's cores).
Scenarios:

- ``placed``: ``embed`` with A actors, N requests' worth each, the client's ``rate_limit=R`` as the job's
  one budget (the helper's default), every actor placed.
- ``killed``: the same; once half the requests are in, one actor process is killed with SIGKILL.
- ``unplaced``: the same with each actor asking for 0.6 CPU: only 3 of 4 fit on 2 CPUs.
- ``queue``: the same texts (at least 2,000) through ``embed`` (direct requests) and through
  ``map_model(queue=True)`` (rows merged into requests of 100 texts): HTTP requests and wall time.

For every run: the fraction of R the server answered in each 10 s window, from the first request's window
to the last (the last one is partial: its fraction is of its own length), 429s received and in which
windows, rows in and out, rows seen twice, NaN vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

MODEL = "@cf/baai/bge-m3"
WINDOW = 10.0
REQUEST_SIZE = 2


def _texts(n: int) -> list[str]:
    return [f"row {i}: a note about topic {i % 17} and thing {i % 5}" for i in range(n)]


def _raylet_children(name: str) -> list[int]:
    """Pids of this cluster's worker processes titled ``name`` (children of this session's raylet)."""
    import ray._private.worker as worker

    node: Any = worker._global_node  # pyright: ignore[reportPrivateUsage]
    raylet = node.all_processes["raylet"][0].process.pid
    found: list[int] = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                title = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == raylet and title.startswith(name):
            found.append(int(pid))
    return found


def windows(times: list[float], rpm: float, start: float, end: float) -> list[float]:
    """The fraction of ``rpm`` reached in each WINDOW-second window from ``start`` (the last, partial one
    measured over its own length)."""
    per_second = rpm / 60.0
    out: list[float] = []
    t = start
    while t < end:
        length = min(WINDOW, end - t)
        count = sum(1 for x in times if t <= x < t + length)
        out.append(round(count / (per_second * length), 3) if length > 0.5 else float("nan"))
        t += WINDOW
    return out


def run_embed(scenario: str, rpm: float, per_actor: int, actors: int) -> dict[str, Any]:
    import numpy as np
    import ray
    import ray.data
    from workers_ai import WorkersAI
    from workers_ai.ray import embed
    from workers_ai.testing import Emulator

    rows = per_actor * actors * REQUEST_SIZE
    texts = _texts(rows)
    with Emulator(models=[MODEL], rate_limits={MODEL: rpm}, latency=(0.05, 0.2), keep_requests=10**6) as emu:
        ai = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, rate_limit=rpm)
        ds = ray.data.from_items([{"id": i, "text": t} for i, t in enumerate(texts)], override_num_blocks=actors * 4)
        killed: list[int] = []
        done = threading.Event()

        placed = [0]

        def watch() -> None:  # counts the actor processes; for "killed", SIGKILLs one once half the requests are in
            while not done.is_set():
                pids = _raylet_children("ray::MapWorker(MapBatches(Embedder))")
                placed[0] = max(placed[0], len(pids))
                if scenario == "killed" and not killed and pids and len(emu.requests) >= per_actor * actors // 2:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(time.time())
                time.sleep(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        started = time.monotonic()
        out = embed(
            ds,
            MODEL,
            client=ai,
            request_size=REQUEST_SIZE,
            batch_size=REQUEST_SIZE * 8,
            concurrency=actors,
            threads=4,
            num_cpus=0.6 if scenario == "unplaced" else 0.25,
        ).take_all()
        wall = time.monotonic() - started
        done.set()
        recs = emu.requests
    answered = sorted(r.at for r in recs if r.status == 200)
    refused = sorted(r.at for r in recs if r.status == 429)
    first = min(r.at for r in recs)
    last = max(r.at for r in recs)
    vectors = np.stack([r["embedding"] for r in out])
    ids = [r["id"] for r in out]
    return {
        "scenario": scenario,
        "rpm": rpm,
        "actors": actors,
        "requests": len(recs),
        "answered": len(answered),
        "wall_s": round(wall, 2),
        "windows": windows(answered, rpm, first, last),
        "refused_429": len(refused),
        "refused_windows": sorted({int((t - first) // WINDOW) for t in refused}),
        "rows_in": rows,
        "rows_out": len(out),
        "rows_twice": len(ids) - len(set(ids)),
        "in_order": ids == list(range(rows)),
        "nan_rows": int(np.isnan(vectors).any(axis=1).sum()),
        "killed_at_s": round(killed[0] - first, 2) if killed else None,
        "actors_placed": placed[0],  # the most actor processes seen at once (a restarted one replaces the killed)
    }


def run_queue(rpm: float, rows: int) -> dict[str, Any]:
    import ray
    import ray.data
    from workers_ai import WorkersAI
    from workers_ai.ray import embed, map_model
    from workers_ai.testing import Emulator

    texts = _texts(rows)
    result: dict[str, Any] = {"scenario": "queue", "rpm": rpm, "rows": rows}
    with Emulator(models=[MODEL], rate_limits={MODEL: rpm}, latency=(0.05, 0.2), keep_requests=10**6) as emu:
        ai = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, rate_limit=rpm)
        for mode in ("direct", "queue"):
            ds = ray.data.from_items([{"id": i, "text": t} for i, t in enumerate(texts)], override_num_blocks=4)
            emu.reset()
            started = time.monotonic()
            if mode == "direct":
                out = embed(ds, MODEL, client=ai, concurrency=2).take_all()
            else:
                out = map_model(
                    ds,
                    MODEL,
                    build=lambda row: {"text": row["text"]},
                    parse=lambda o: len(o.data),
                    client=ai,
                    queue=True,
                    concurrency=2,
                    queue_options={"poll_interval": 0.2},
                ).take_all()
            wall = time.monotonic() - started
            recs = emu.requests
            result[mode] = {
                "http_requests": len(recs),
                "refused_429": sum(1 for r in recs if r.status == 429),
                "wall_s": round(wall, 2),
                "rows_out": len(out),
            }
    result["requests_ratio"] = round(result["queue"]["http_requests"] / result["direct"]["http_requests"], 3)
    result["wall_ratio"] = round(result["queue"]["wall_s"] / result["direct"]["wall_s"], 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["placed", "killed", "unplaced", "queue"])
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--per-actor", type=int, default=100)
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        if args.scenario == "queue":
            out = run_queue(args.rpm, args.rows)
        else:
            out = run_embed(args.scenario, args.rpm, args.per_actor, args.actors)
    finally:
        ray.shutdown()
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
