"""Batch benchmark: many texts through the async batch API against the project's emulator.

``python bench/_batch.py probe``: prints ``ok`` when ``workers_ai.testing.Emulator`` can be imported.
``python bench/_batch.py serve``: runs the emulator with fast queue settings in this process and prints
``EMULATOR {json}`` (base URL, account, token, settings) once it listens; it stops when stdin closes.
``python bench/_batch.py client SPEC N [lists|numpy]``: embeds N texts against it (``embed_many`` returning
lists, or ``as_numpy=True``) and prints one JSON object with the client's CPU seconds, wall seconds and
peak RSS (``ru_maxrss`` of this process; each mode runs in a fresh process).

The emulator and the client are separate processes, so the emulator's CPU never counts as the client's.
"""

from __future__ import annotations

import inspect
import json
import resource
import sys
import time
from typing import Any

MODEL = "@cf/baai/bge-m3"
# Settings that make the emulator's queue answer at once; only those its constructor takes are passed.
FAST: dict[str, Any] = {
    "batch_polls": (0, 0),  # no "queued"/"running" answers before the results
    "batch_delay": None,
    "models": [MODEL],  # load one model's schema, not the whole catalog
    "check_outputs": False,
}
POLL_INTERVAL = 0.05


def probe() -> None:
    try:
        from workers_ai.testing import Emulator
    except Exception as exc:
        print(f"workers_ai.testing.Emulator is not available: {type(exc).__name__}: {exc}")
        return
    print(f"ok {inspect.signature(Emulator)}")


def fast_settings(emulator_cls: Any) -> dict[str, Any]:
    try:
        params = inspect.signature(emulator_cls).parameters
    except (TypeError, ValueError):
        return {}
    return {name: value for name, value in FAST.items() if name in params}


def serve() -> None:
    from workers_ai.testing import Emulator

    settings = fast_settings(Emulator)
    with Emulator(**settings) as emu:
        spec = {
            "base_url": emu.base_url,
            "account_id": emu.account_id,
            "api_token": emu.api_token,
            "settings": settings,
        }
        print("EMULATOR " + json.dumps(spec), flush=True)
        sys.stdin.read()


def rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def client(spec_text: str, count: int, mode: str = "lists") -> None:
    spec = json.loads(spec_text)
    if mode == "numpy":
        import numpy  # noqa: F401  # part of the baseline: the interpreter with numpy loaded

    from workers_ai import WorkersAI

    ai = WorkersAI(account_id=spec["account_id"], api_token=spec["api_token"], base_url=spec["base_url"])
    bge = ai.model(MODEL)
    texts = [f"document {i}: a short passage about item {i % 97} and topic {i % 13}" for i in range(count)]
    base = rss_mb()
    c0 = time.process_time()
    w0 = time.perf_counter()
    if mode == "numpy":
        api = "bge.embed_many(texts, as_numpy=True)"
        array = bge.embed_many(texts, poll_interval=POLL_INTERVAL, as_numpy=True)
        vectors = array  # type: ignore[assignment]
    elif hasattr(bge, "embed_many"):
        api = "bge.embed_many(texts)"
        vectors = bge.embed_many(texts, poll_interval=POLL_INTERVAL)
    else:
        from workers_ai.models.cf.baai.bge_m3 import EmbeddingInput

        api = "bge.batch([...]).wait() (100 texts per request, 10 requests per batch)"
        requests = [EmbeddingInput(text=texts[i : i + 100]) for i in range(0, count, 100)]
        jobs = [bge.batch(requests[j : j + 10]) for j in range(0, len(requests), 10)]
        vectors = []
        for job in jobs:
            for item in job.wait(poll_interval=POLL_INTERVAL).items:
                vectors.extend(item.result.data)
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    # What the vectors alone take as Python lists of floats: the least any pure-Python client holds.
    if mode == "numpy":
        held = array.nbytes
    else:
        held = sum(sys.getsizeof(v) + sum(sys.getsizeof(x) for x in v) for v in vectors) + sys.getsizeof(vectors)
    out = {
        "api": api,
        "mode": mode,
        "texts": count,
        "vectors": len(vectors),
        "dims": len(vectors[0]) if len(vectors) else 0,
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_rss_mb": rss_mb(),
        "base_rss_mb": base,
        "vectors_mb": held / 2**20,
        "emulator_settings": ", ".join(f"{k}={v}" for k, v in spec.get("settings", {}).items()) or "defaults",
        "note": f"Poll interval {POLL_INTERVAL} s; wall time includes the emulator's work.",
    }
    print(json.dumps(out))


def ray_client(spec_text: str, count: int) -> None:
    """The same texts through workers_ai.ray.embed on a local 2-CPU Ray cluster (2 actors), and
    through one process's embed_many(as_numpy=True) for comparison; wall times and vectors/s."""
    import warnings

    warnings.simplefilter("ignore")
    spec = json.loads(spec_text)
    import numpy as np
    import ray
    import ray.data
    from workers_ai import WorkersAI
    from workers_ai.ray import embed

    ai = WorkersAI(account_id=spec["account_id"], api_token=spec["api_token"], base_url=spec["base_url"])
    texts = [f"document {i}: a short passage about item {i % 97} and topic {i % 13}" for i in range(count)]
    w0 = time.perf_counter()
    single = ai.model(MODEL).embed_many(texts, poll_interval=POLL_INTERVAL, as_numpy=True)
    single_wall = time.perf_counter() - w0
    i0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    init = time.perf_counter() - i0
    ds = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=20).materialize()
    w0 = time.perf_counter()
    rows = embed(ds, MODEL, client=ai).materialize()
    ray_wall = time.perf_counter() - w0
    vectors = np.stack([r["embedding"] for r in rows.iter_rows()])
    same = bool(np.array_equal(vectors, single))
    ray.shutdown()
    out = {
        "texts": count,
        "single_api": "embed_many(texts, as_numpy=True) (batch API)",
        "single_wall_s": single_wall,
        "single_vps": count / single_wall,
        "ray_api": "workers_ai.ray.embed(ds, ...) (2 actors, synchronous requests of 100)",
        "ray_wall_s": ray_wall,
        "ray_vps": count / ray_wall,
        "ray_init_s": init,
        "same_vectors": same,
    }
    print(json.dumps(out))


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else "probe"
    if command == "probe":
        probe()
    elif command == "serve":
        serve()
    elif command == "ray":
        ray_client(sys.argv[2], int(sys.argv[3]))
    elif command == "client":
        client(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "lists")
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
