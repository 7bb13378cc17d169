"""SSE parsing: a seeded text-generation stream fed to the parsers in random-size chunks, CPU-bound and
without a socket (``bench/_sse.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import run_json


def measure(ctx: Context) -> dict[str, Any]:
    megabytes, runs = ctx.pick(quick=2.0, full=10.0), ctx.pick(quick=2, full=5)
    res: dict[str, Any] = run_json([PY, str(BENCH / "_sse.py"), str(megabytes), str(runs)])
    return res
