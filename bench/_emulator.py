"""How fast the emulator answers when a user's test suite leans on it: 64 client threads.

``python bench/_emulator.py serve``: an ``Emulator`` (8 workers, quiet) in this process; prints
``EMULATOR <base_url> <account> <token>`` and serves until stdin closes.

``python bench/_emulator.py client BASE ACCOUNT TOKEN SECONDS [FLOOR]``: 64 threads share one
``urllib3.PoolManager(maxsize=64)`` and post, for ``SECONDS`` each, one workload at a time: a bge-m3
rank of 3 contexts, a 2-text bge-m3 embedding (1024 floats each), a llama chat reply, and the same rank
against ``bench/_server.py`` at ``FLOOR`` (a server that only returns cached bytes, started by
``run.py``). Prints one JSON object of calls/s per workload. Client and server are separate processes
on the same 2 cores, so these are throughputs of the pair, not of the emulator alone.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import urllib3

THREADS = 64
WORKLOADS: dict[str, tuple[str, dict[str, Any]]] = {
    "rank": ("@cf/baai/bge-m3", {"query": "llamas", "contexts": [{"text": t} for t in ("a llama", "stocks", "grass")]}),
    "embed": ("@cf/baai/bge-m3", {"text": ["a llama in the Andes", "quarterly stock report"]}),
    "chat": ("@cf/meta/llama-3.1-8b-instruct", {"messages": [{"role": "user", "content": "What is Lisbon?"}]}),
}


def serve() -> None:
    from workers_ai.testing import Emulator

    with Emulator(workers=8) as emu:
        print(f"EMULATOR {emu.base_url} {emu.account_id} {emu.api_token}", flush=True)
        sys.stdin.read()


def _hammer(url: str, body: bytes, headers: dict[str, str], seconds: float) -> dict[str, float]:
    pool = urllib3.PoolManager(maxsize=THREADS, retries=False, timeout=urllib3.Timeout(connect=5, read=30))
    count = [0] * THREADS
    errors = [0] * THREADS
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        while time.perf_counter() < stop:
            resp = pool.request("POST", url, body=body, headers=headers)
            if resp.status == 200:
                count[i] += 1
            else:
                errors[i] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    pool.clear()
    return {"calls_per_s": sum(count) / elapsed, "errors": float(sum(errors))}


def client(base: str, account: str, token: str, seconds: float, floor: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    out: dict[str, Any] = {"threads": THREADS, "seconds": seconds}
    for name, (model, payload) in WORKLOADS.items():
        url = f"{base}/accounts/{account}/ai/run/{model}"
        out[name] = _hammer(url, json.dumps(payload).encode(), headers, seconds)
    if floor is not None:
        model, payload = WORKLOADS["rank"]
        out["floor_rank"] = _hammer(
            f"{floor}/accounts/{account}/ai/run/{model}", json.dumps(payload).encode(), headers, seconds
        )
        out["rank_vs_floor"] = out["rank"]["calls_per_s"] / out["floor_rank"]["calls_per_s"]
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    else:
        client(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6] if len(sys.argv) > 6 else None)
