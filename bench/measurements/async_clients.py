"""The async client against the libraries it could have been built on (``bench/_async.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, run_json


def measure(ctx: Context) -> dict[str, Any]:
    """``AsyncWorkersAI`` vs aiohttp and httpx used directly and vs the sync client on threads: calls/s
    and CPU per call at concurrency 1, 16 and 64 against a server holding every reply 20 ms. Runs in
    the project's .venv (it has the ``async`` extra and httpx; the wheel venv has only the core deps)."""
    seconds, rounds = ctx.pick(quick=1.0, full=2.0), ctx.pick(quick=1, full=3)
    rows = "aiohttp,httpx,ours_async,ours_threads"
    with background([PY, str(BENCH / "_server.py"), "0", "20"], "PORT ") as port:
        out: dict[str, Any] = run_json([PY, str(BENCH / "_async.py"), port, str(seconds), rows, str(rounds)])
    for level in ("1", "16", "64"):
        base = out["aiohttp"][level]["calls_per_s"]
        out.setdefault("ratio_vs_aiohttp", {})[level] = out["ours_async"][level]["calls_per_s"] / base
        out.setdefault("ratio_vs_threads", {})[level] = (
            out["ours_async"][level]["calls_per_s"] / out["ours_threads"][level]["calls_per_s"]
        )
    return out
