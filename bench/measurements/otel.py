"""What telemetry costs per call and at import (``bench/_otel.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, log, run_json
from bench.stats import median, spread

OTEL_MODES = {
    "noapi": "without `opentelemetry-api` (import refused)",
    "api": "API installed, no SDK (no-op global providers)",
    "sdk": "SDK + `SimpleSpanProcessor` into `InMemorySpanExporter`, `InMemoryMetricReader`",
}


def measure(ctx: Context) -> dict[str, Any]:
    """What telemetry costs (issue 29): client CPU per call with telemetry on vs ``telemetry=False`` in
    the same process (bge-m3 ``rank`` over keep-alive loopback, turns taken per round), in a process
    without ``opentelemetry-api``, with the API and no SDK, and with the SDK and in-memory exporters;
    and ``import workers_ai`` (``-X importtime``) with and without the API importable."""
    passes, rounds = ctx.pick(quick=1, full=3), ctx.pick(quick=5, full=15)
    imports = ctx.pick(quick=5, full=20)
    out: dict[str, Any] = {"passes": passes, "rounds": rounds}
    with background([PY, str(BENCH / "_server.py")], "PORT ") as port:
        for mode in OTEL_MODES:
            cpu: dict[str, list[float]] = {"floor": [], "off": [], "on": []}
            on_off: list[float] = []
            meta: dict[str, Any] = {}
            for _ in range(passes):
                res = run_json([PY, str(BENCH / "_otel.py"), mode, port, str(rounds)])
                meta = res.pop("meta")
                for key in cpu:
                    cpu[key] += res[key]["cpu"]
                on_off += [a / b for a, b in zip(res["on"]["cpu"], res["off"]["cpu"], strict=True) if b > 0]
            out[mode] = {
                "cpu_us": {k: round(median(v) * 1e6, 1) for k, v in cpu.items()},
                "on_vs_off": round(median(on_off), 3),
                "on_vs_off_p25_p75": spread(on_off),
                "off_vs_floor": round(median(cpu["off"]) / median(cpu["floor"]), 3),
                "samples": len(on_off),
                **meta,
            }
            log(f"otel/{mode}: on/off {out[mode]['on_vs_off']} {out[mode]['on_vs_off_p25_p75']}")
    times: dict[str, list[float]] = {"noapi": [], "api": []}
    loaded = False
    for _ in range(imports):
        for mode in times:
            got = run_json([PY, str(BENCH / "_otel.py"), "import", mode], cwd=BENCH)
            times[mode].append(got["seconds"])
            loaded = loaded or got["otel_loaded"]
    ratios = [a / b for a, b in zip(times["noapi"], times["api"], strict=True) if b > 0]
    out["import"] = {
        "noapi_ms": round(median(times["noapi"]) * 1000, 2),
        "api_ms": round(median(times["api"]) * 1000, 2),
        "noapi_vs_api": round(median(ratios), 3),
        "noapi_vs_api_p25_p75": spread(ratios),
        "repeats": imports,
        "otel_loaded_at_cold_start": loaded,
    }
    log(f"otel/import: {out['import']}")
    return out
