"""Streaming and many threads (``bench/_load.py``), each a ratio to the floor in the same process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, run_json


def measure(ctx: Context) -> dict[str, Any]:
    """The streaming row (5,000 typed events, client CPU vs floor) and the 64-thread row (calls/s
    against a server holding every reply 20 ms, vs floor), each in one process of the wheel's venv."""
    stream_rounds, thread_seconds = ctx.pick(quick=5, full=15), ctx.pick(quick=1.0, full=3.0)
    python = ctx.envs.python_for("ours") or Path(PY)
    out: dict[str, Any] = {}
    with background([str(python), str(BENCH / "_server.py"), "0", "0"], "PORT ") as port:
        out["stream"] = run_json([str(python), str(BENCH / "_load.py"), "stream", port, str(stream_rounds)])
    with background([str(python), str(BENCH / "_server.py"), "0", "20"], "PORT ") as port:
        out["threads"] = run_json([str(python), str(BENCH / "_load.py"), "threads", port, str(thread_seconds)])
    return out
