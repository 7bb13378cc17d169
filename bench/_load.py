"""Two rows against bench/_server.py, each as a ratio to the floor measured in the same process.

``python bench/_load.py stream PORT ROUNDS``: CPU seconds (``time.process_time``) to read one stream of
5,000 small Workers AI events as typed events. Ours: ``ai.model(...).stream(...)`` yielding
``StreamEvent``. Floor: a urllib3 stream, split on blank lines, each payload decoded by msgspec into a
small typed struct. The two alternate, one sample each per round.

``python bench/_load.py threads PORT SECONDS``: calls per second (wall) from 64 threads sharing one
client against the server started with a 20 ms delay per reply. Ours: the default ``WorkersAI`` (no
pool option). Floor: one ``urllib3.PoolManager(maxsize=64)`` plus msgspec typed decoding, and the same
floor with a read timeout (CPython polls before every read and write of a socket with a timeout, one
more GIL release each: the cost of having a deadline at all). Also counts the "Connection pool is full"
warnings urllib3 logged. Prints one JSON object.
"""

from __future__ import annotations

import gc
import json
import logging
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec
import urllib3

MODEL_STREAM = "@cf/meta/llama-3-8b-instruct"
MODEL_RANK = "@cf/baai/bge-m3"
EVENTS = 5000
THREADS = 64


class FloorChunk(msgspec.Struct):
    response: str = ""
    usage: dict[str, int] | None = None


class Score(msgspec.Struct):
    id: int
    score: float


class Rank(msgspec.Struct):
    response: list[Score]


class Envelope(msgspec.Struct):
    result: Rank
    success: bool


def _root(port: int) -> str:
    return f"http://127.0.0.1:{port}/client/v4"


def stream_floor(port: int) -> Callable[[], int]:
    pool = urllib3.PoolManager(maxsize=4)
    url = f"{_root(port)}/accounts/a/ai/run/{MODEL_STREAM}"
    body = msgspec.json.encode({"prompt": "hi", "stream": True, "events": EVENTS})
    headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}
    decode = msgspec.json.Decoder(FloorChunk).decode

    def run() -> int:
        resp = pool.urlopen("POST", url, body=body, headers=headers, preload_content=False)
        count = 0
        rest = b""
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            parts = (rest + chunk).split(b"\n\n")
            rest = parts.pop()
            for part in parts:
                payload = part[6:]
                if payload == b"[DONE]":
                    resp.release_conn()
                    return count
                decode(payload)
                count += 1
        resp.release_conn()
        return count

    return run


def stream_ours(port: int) -> Callable[[], int]:
    from workers_ai import WorkersAI

    ai = WorkersAI(account_id="a" * 32, api_token="t", base_url=_root(port), rate_limit=None)
    llm = ai.model(MODEL_STREAM)

    def run() -> int:
        count = 0
        for _event in llm.stream({"prompt": "hi", "events": EVENTS}):
            count += 1
        return count

    return run


def bench_stream(port: int, rounds: int) -> dict[str, Any]:
    cases = {"floor": stream_floor(port), "ours": stream_ours(port)}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    events: dict[str, int] = {}
    for fn in cases.values():
        fn()  # warm: connection, imports, caches
    for _ in range(rounds):
        for name, fn in cases.items():
            gc.collect()
            t0 = time.process_time()
            events[name] = fn()
            samples[name].append(time.process_time() - t0)
    floor, ours = statistics.median(samples["floor"]), statistics.median(samples["ours"])
    return {"events": events, "cpu": samples, "floor_s": floor, "ours_s": ours, "ratio": ours / floor}


class _PoolFull(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Connection pool is full" in record.getMessage():
            self.count += 1


def threads_floor(port: int, timeout: float | None = None) -> Callable[[], object]:
    limits = urllib3.Timeout(connect=10.0, read=timeout) if timeout else urllib3.Timeout.DEFAULT_TIMEOUT
    pool = urllib3.PoolManager(maxsize=THREADS, timeout=limits)
    url = f"{_root(port)}/accounts/a/ai/run/{MODEL_RANK}"
    body = msgspec.json.encode({"query": "q", "contexts": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})
    headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}
    decode = msgspec.json.Decoder(Envelope).decode
    return lambda: decode(pool.urlopen("POST", url, body=body, headers=headers).data)


def threads_ours(port: int) -> Callable[[], object]:
    from workers_ai import WorkersAI
    from workers_ai.models.cf.baai.bge_m3 import Context

    ai = WorkersAI(account_id="a" * 32, api_token="t", base_url=_root(port), rate_limit=None)
    bge = ai.model(MODEL_RANK)
    contexts = [Context(text=t) for t in "abc"]
    return lambda: bge.rank(query="q", contexts=contexts)


def _throughput(call: Callable[[], object], seconds: float) -> float:
    stop = time.monotonic() + seconds
    counts = [0] * THREADS

    def worker(i: int) -> None:
        while time.monotonic() < stop:
            call()
            counts[i] += 1

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    t0 = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts) / (time.monotonic() - t0)


def bench_threads(port: int, seconds: float, rounds: int = 3) -> dict[str, Any]:
    watcher = _PoolFull()
    logging.getLogger("urllib3").addHandler(watcher)
    cases = {"floor": threads_floor(port), "ours": threads_ours(port), "floor_timeout": threads_floor(port, 60.0)}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for call in cases.values():
        _throughput(call, 0.5)  # warm: open the connections
    for _ in range(rounds):
        for name, call in cases.items():
            samples[name].append(_throughput(call, seconds))
    floor, ours = statistics.median(samples["floor"]), statistics.median(samples["ours"])
    return {
        "threads": THREADS,
        "calls_per_s": samples,
        "floor": floor,
        "ours": ours,
        "ratio": ours / floor,
        "floor_timeout": statistics.median(samples["floor_timeout"]),
        "ratio_vs_floor_timeout": ours / statistics.median(samples["floor_timeout"]),
        "pool_full_warnings": watcher.count,
    }


def main() -> None:
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "stream":
        out = bench_stream(port, int(sys.argv[3]) if len(sys.argv) > 3 else 9)
    else:
        out = bench_threads(port, float(sys.argv[3]) if len(sys.argv) > 3 else 3.0)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
