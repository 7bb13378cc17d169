"""The emulator under a test suite's load (``bench/_emulator.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, run_json


def measure(ctx: Context) -> dict[str, Any]:
    """The emulator under a test suite's load: calls/s from 64 client threads (another process) for a
    rank, an embedding and a chat reply, and the rank against bench/_server.py (cached bytes) as the floor."""
    seconds = ctx.pick(quick=1.0, full=3.0)
    with background([PY, str(BENCH / "_emulator.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        base, account, token = spec.split()
        with background([PY, str(BENCH / "_server.py"), "0", "0"], "PORT ") as port:
            floor = f"http://127.0.0.1:{port}/client/v4"
            cmd = [PY, str(BENCH / "_emulator.py"), "client", base, account, token, str(seconds), floor]
            out: dict[str, Any] = run_json(cmd, timeout=300)
    return out
