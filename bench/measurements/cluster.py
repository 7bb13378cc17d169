"""Bulk at the rate limit on a local Ray cluster, against the emulator enforcing it (``bench/_cluster.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import run_json

SCENARIOS = ("placed", "killed", "unplaced")


def measure(ctx: Context) -> dict[str, Any]:
    """4 actors embedding ``per_actor`` requests' worth each at R requests/min, one fresh process (its own
    Ray cluster on 2 CPUs and its emulator, 50-200 ms latency) per scenario: all placed, one SIGKILLed
    half-way, one never placed. Then 2,000 rows through ``embed`` and through ``map_model(queue=True)``."""
    rpm = 600.0
    per_actor = ctx.pick(quick=25, full=100)
    out: dict[str, Any] = {"rpm": rpm, "actors": 4, "per_actor": per_actor}
    for scenario in SCENARIOS:
        cmd = [PY, str(BENCH / "_cluster.py"), scenario, "--rpm", str(rpm), "--per-actor", str(per_actor)]
        out[scenario] = run_json(cmd, timeout=600)
    out["queue"] = run_json([PY, str(BENCH / "_cluster.py"), "queue", "--rpm", str(rpm), "--rows", "2000"], timeout=600)
    return out
