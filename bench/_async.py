"""Async rows against bench/_server.py started with a 20 ms delay per reply.

``python bench/_async.py PORT SECONDS``: calls per second (wall) and CPU microseconds per call
(``time.process_time``) at concurrency 1, 16 and 64 for:

- ``aiohttp`` and ``httpx``: each library used directly (one shared session, keep-alive, the body
  decoded by msgspec into the same small typed struct), the measurement behind the choice of the
  library under ``AsyncWorkersAI``;
- ``ours_async``: ``AsyncWorkersAI`` with ``asyncio.gather`` of N tasks, each looping calls;
- ``ours_threads``: the sync ``WorkersAI`` shared by N threads.

Each row alternates with the others per round so drift on a shared machine hits them alike.
Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

MODEL = "@cf/baai/bge-m3"
LEVELS = (1, 16, 64)


class Score(msgspec.Struct):
    id: int
    score: float


class Rank(msgspec.Struct):
    response: list[Score]


class Envelope(msgspec.Struct):
    result: Rank
    success: bool


_decode = msgspec.json.Decoder(Envelope).decode
BODY = msgspec.json.encode({"query": "q", "contexts": [{"text": "a"}, {"text": "b"}]})
HEADERS = {"Authorization": "Bearer t", "Content-Type": "application/json"}


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/client/v4/accounts/a/ai/run/{MODEL}"


async def _drive(call: Callable[[], Awaitable[Any]], concurrency: int, seconds: float) -> tuple[float, float]:
    """(calls/s, CPU µs per call) with ``concurrency`` tasks calling until ``seconds`` pass."""
    for _ in range(concurrency):  # warm the pool: one connection per task
        await asyncio.gather(*(call() for _ in range(concurrency)))
        break
    count = 0
    stop = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal count
        while time.monotonic() < stop:
            await call()
            count += 1

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return count / wall, cpu / count * 1e6


async def aiohttp_row(port: int, concurrency: int, seconds: float) -> tuple[float, float]:
    import aiohttp

    url = _url(port)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:

        async def call() -> Any:
            async with session.post(url, data=BODY, headers=HEADERS) as resp:
                return _decode(await resp.read())

        return await _drive(call, concurrency, seconds)


async def httpx_row(port: int, concurrency: int, seconds: float) -> tuple[float, float]:
    import httpx

    url = _url(port)
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits) as client:

        async def call() -> Any:
            resp = await client.post(url, content=BODY, headers=HEADERS)
            return _decode(resp.content)

        return await _drive(call, concurrency, seconds)


async def ours_async_row(port: int, concurrency: int, seconds: float) -> tuple[float, float]:
    from workers_ai import AsyncWorkersAI

    # rate_limit=None: the published per-model budget (3000/min for embeddings) would cap the rows.
    async with AsyncWorkersAI("a" * 32, "t", base_url=f"http://127.0.0.1:{port}/client/v4", rate_limit=None) as ai:
        model = ai.model(MODEL)

        async def call() -> Any:
            return await model.rank(query="q", contexts=[{"text": "a"}, {"text": "b"}])

        return await _drive(call, concurrency, seconds)


def ours_threads_row(port: int, concurrency: int, seconds: float) -> tuple[float, float]:
    from workers_ai import WorkersAI

    ai = WorkersAI("a" * 32, "t", base_url=f"http://127.0.0.1:{port}/client/v4", rate_limit=None)
    model = ai.model(MODEL)

    def call() -> Any:
        return model.rank(query="q", contexts=[{"text": "a"}, {"text": "b"}])

    for _ in range(2):
        threads = [threading.Thread(target=call) for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    count = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker() -> None:
        nonlocal count
        n = 0
        while time.monotonic() < stop:
            call()
            n += 1
        with lock:
            count += n

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    ai.close()
    return count / wall, cpu / count * 1e6


ROWS: dict[str, Callable[[int, int, float], Any]] = {
    "aiohttp": aiohttp_row,
    "httpx": httpx_row,
    "ours_async": ours_async_row,
    "ours_threads": ours_threads_row,
}


def main() -> None:
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(ROWS)
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    samples: dict[str, dict[int, list[tuple[float, float]]]] = {n: {c: [] for c in LEVELS} for n in names}
    for _ in range(rounds):
        for concurrency in LEVELS:
            for name in names:
                row = ROWS[name]
                if asyncio.iscoroutinefunction(row):
                    got = asyncio.run(row(port, concurrency, seconds))
                else:
                    got = row(port, concurrency, seconds)
                samples[name][concurrency].append(got)
    out: dict[str, Any] = {}
    for name, by_level in samples.items():
        out[name] = {
            str(c): {
                "calls_per_s": sorted(s[0] for s in vals)[len(vals) // 2],
                "cpu_us_per_call": sorted(s[1] for s in vals)[len(vals) // 2],
            }
            for c, vals in by_level.items()
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
