"""The goals a run is held to: each with its target, the value measured and whether it is met.

A run never asserts: a goal that is missed shows as missed in the results, and one whose measurement did
not run shows as not measured. ``goals`` lists them in the order of the results' goals table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Goal = dict[str, Any]  # goal, target, measured (the value as printed), value, met (None: not measured)
Result = dict[str, Any]  # one measurement's result, {} when it did not run


def goals(results: dict[str, Any]) -> list[Goal]:
    """Each goal: what it is, the target, the measured value, and whether it is met (None: not measured)."""
    return [
        *_telemetry(results.get("otel", {})),
        *_cold_start(results.get("cold", {})),
        *_per_call(results.get("calls", {})),
        *_batch(results.get("batch") or {}),
        *_load(results.get("load", {})),
        *_async(results.get("async", {})),
        *_realtime(results.get("realtime", {})),
        *_generator(results.get("generator", {})),
        *_footprint(results.get("footprint", {})),
        *_typing(results.get("typing", {})),
        *_size(results.get("size", {})),
    ]


def goal(name: str, target: str, value: float | None, ok: Callable[[float], bool], fmt: str) -> Goal:
    return {
        "goal": name,
        "target": target,
        "measured": None if value is None else fmt.format(value),
        "value": value,
        "met": None if value is None else bool(ok(value)),
    }


def _telemetry(otel: Result) -> list[Goal]:
    return [
        goal(
            "Telemetry, no opentelemetry-api: CPU per call vs telemetry=False",
            "<= 1.02x",
            otel.get("noapi", {}).get("on_vs_off"),
            lambda v: v <= 1.02,
            "{:.3f}x",
        ),
        goal(
            "Telemetry, API without SDK: CPU per call vs telemetry=False",
            "<= 1.05x",
            otel.get("api", {}).get("on_vs_off"),
            lambda v: v <= 1.05,
            "{:.3f}x",
        ),
        goal(
            "Cold start without vs with opentelemetry-api importable",
            "<= 1.02x",
            otel.get("import", {}).get("noapi_vs_api"),
            lambda v: v <= 1.02,
            "{:.3f}x",
        ),
    ]


def _cold_start(cold: Result) -> list[Goal]:
    return [
        goal(
            "Cold start (import + client + model handle) vs floor (issue 28)",
            "<= 1.10x",
            _get(cold.get("rows", {}), "ours", "vs_floor"),
            lambda v: v <= 1.10,
            "{:.2f}x",
        )
    ]


def _per_call(calls: Result) -> list[Goal]:
    small = calls.get("small", {})
    big = calls.get("big", {})
    return [
        goal(
            "Per-call client CPU, small reply, vs floor (issue 28)",
            "<= 1.10x",
            _get(small, "ours", "vs_floor"),
            lambda v: v <= 1.10,
            "{:.2f}x",
        ),
        goal(
            "Per-call client CPU, small reply: official SDK / ours",
            ">= 2.5x",
            _inverse(_get(small, "ours", "vs_official")),
            lambda v: v >= 2.5,
            "{:.2f}x",
        ),
        goal(
            "Per-call client CPU, small reply (notes: peers 1.0-1.1 ms)",
            "<= 0.5 ms",
            _scale(_get(small, "ours", "cpu_us"), 1e-3),
            lambda v: v <= 0.5,
            "{:.3f} ms",
        ),
        goal(
            "100x1024 typed embeddings decode, client CPU vs floor (typed msgspec; issue 28)",
            "<= 1.15x",
            _get(big, "ours", "vs_floor"),
            lambda v: v <= 1.15,
            "{:.2f}x",
        ),
        goal(
            "100x1024 typed embeddings, client CPU per call (notes)",
            "<= 5 ms",
            _scale(_get(big, "ours", "cpu_us"), 1e-3),
            lambda v: v <= 5.0,
            "{:.2f} ms",
        ),
    ]


def _batch(batch: Result) -> list[Goal]:
    num = batch.get("numpy") or {}
    over = num["peak_rss_mb"] - num["base_rss_mb"] if "peak_rss_mb" in num else None
    return [
        goal(
            "10k x 1024 via embed_many(as_numpy=True): peak RSS above the interpreter's (numpy loaded)",
            "<= 60 MB (1.5x the 40 MB of float32)",
            over,
            lambda v: v <= 60,
            "{:.0f} MB",
        )
    ]


def _load(load: Result) -> list[Goal]:
    full = load.get("threads", {}).get("pool_full_warnings")
    return [
        goal(
            "5,000 typed SSE events, client CPU vs floor (urllib3 + split + msgspec)",
            "<= 1.25x",
            load.get("stream", {}).get("ratio"),
            lambda v: v <= 1.25,
            "{:.2f}x",
        ),
        goal(
            "64 threads, 20 ms server, calls/s vs floor (PoolManager(maxsize=64) + msgspec; issue 28)",
            ">= 0.97x",
            load.get("threads", {}).get("ratio"),
            lambda v: v >= 0.97,
            "{:.2f}x",
        ),
        goal(
            "'Connection pool is full' warnings at 64 threads, default client",
            "0",
            None if full is None else float(full),
            lambda v: v == 0,
            "{:.0f}",
        ),
    ]


def _async(aio: Result) -> list[Goal]:
    return [
        goal(
            "AsyncWorkersAI at 64 tasks, 20 ms server, calls/s vs aiohttp used directly (issue 12)",
            ">= 0.9x",
            aio.get("ratio_vs_aiohttp", {}).get("64"),
            lambda v: v >= 0.9,
            "{:.2f}x",
        )
    ]


def _realtime(live: Result) -> list[Goal]:
    drivers = [
        goal(
            f"Realtime {driver.split('_')[1]} session: client CPU per audio second vs bare websockets "
            "+ msgspec (issue 21)",
            "<= 1.2x",
            live.get("ratio_vs_bare", {}).get(driver),
            lambda v: v <= 1.2,
            "{:.2f}x",
        )
        for driver in ("ours_async", "ours_sync")
    ]
    lost = live.get("concurrent", {}).get("lost")
    return [
        *drivers,
        goal("Realtime: 32 concurrent async sessions, events lost", "0", lost, lambda v: v == 0, "{:.0f}"),
        goal(
            "Realtime: first interim result after the chunk that produced it, in chunks (100 ms)",
            "<= 1",
            live.get("first_interim", {}).get("fraction_of_chunk"),
            lambda v: v <= 1.0,
            "{:.3f}",
        ),
    ]


def _generator(gen: Result) -> list[Goal]:
    full_s = gen.get("full_s")
    return [goal("Regenerate the whole catalog (issue #5)", "<= 10 s", full_s, lambda v: v <= 10.0, "{:.1f} s")]


def _footprint(footprint: Result) -> list[Goal]:
    foot = footprint.get("ours", {})
    deps = foot.get("deps")
    return [
        goal(
            "Installed size of workers_ai + runtime deps",
            "< 3 MB",
            _scale(foot.get("bytes"), 1e-6),
            lambda v: v < 3.0,
            "{:.2f} MB",
        ),
        goal("Runtime dependencies", "2", None if deps is None else float(len(deps)), lambda v: v <= 2, "{:.0f}"),
    ]


def _typing(typing_result: Result) -> list[Goal]:
    rows = typing_result.get("rows", {})
    return [
        goal(
            "mypy on a small user file, cold cache (notes)",
            "<= 3 s",
            _get(rows, "ours", "wall_s"),
            lambda v: v <= 3.0,
            "{:.2f} s",
        ),
        goal(
            "mypy --strict, cold, 10-line user file using 3 models, numpy/aiohttp/pydantic installed (issue 18)",
            "<= 2.0 s",
            _get(rows, "ours-3-models", "wall_s"),
            lambda v: v <= 2.0,
            "{:.2f} s",
        ),
        goal(
            "... its peak RSS (issue 18)",
            "<= 250 MB",
            _get(rows, "ours-3-models", "peak_rss_mb"),
            lambda v: v <= 250,
            "{:.0f} MB",
        ),
    ]


def _size(size: Result) -> list[Goal]:
    lines = size.get("lines")
    pairs = size.get("model_duplicate_pairs")
    return [
        goal(
            "Generated package, lines of code, docstrings apart (issue 18)",
            "<= 40k",
            float(lines) if isinstance(lines, int) else None,
            lambda v: v <= 40_000,
            "{:,.0f}",
        ),
        goal(
            "Repeated 6+ line blocks across generated model modules, pairs (issue 18)",
            "<= 50",
            float(pairs) if isinstance(pairs, int) else None,
            lambda v: v <= 50,
            "{:.0f}",
        ),
    ]


def _get(rows: dict[str, Any], impl: str, key: str) -> float | None:
    row = rows.get(impl)
    if not isinstance(row, dict):
        return None
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) else None


def _inverse(value: float | None) -> float | None:
    return None if not value else 1.0 / value


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
