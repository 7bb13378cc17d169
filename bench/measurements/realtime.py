"""Realtime sessions against the emulator in another process (``bench/_realtime.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, run_json


def measure(ctx: Context) -> dict[str, Any]:
    """Realtime sessions (issue 21) against the emulator in another process: client CPU per audio
    second vs websockets and aiohttp used directly, 32 concurrent sessions, first interim latency."""
    seconds, rounds = ctx.pick(quick=5.0, full=10.0), ctx.pick(quick=2, full=5)
    with background([PY, str(BENCH / "_realtime.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        out: dict[str, Any] = run_json([PY, str(BENCH / "_realtime.py"), "client", spec, str(seconds), str(rounds)])
    return out
