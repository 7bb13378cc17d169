"""Every measurement of ``make bench``, in the order a full run takes them.

A measurement is a module here with ``measure(ctx: Context) -> dict`` (what it measured, as JSON; it raises
or returns ``{"error": ...}`` when it cannot run) and one line in ``MEASUREMENTS``; its name is the one
``--only`` takes and the key of its result in ``latest.json``. ``bench/report.py`` prints it (``PAGE``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.context import Context
from bench.measurements import (
    async_clients,
    batch,
    bulk_queue,
    calls,
    cold,
    emulator,
    footprint,
    generator,
    load,
    otel,
    realtime,
    size,
    sse,
    type_check,
)


@dataclass(frozen=True)
class Measurement:
    name: str  # what --only takes and the key in latest.json
    measure: Callable[[Context], dict[str, Any]]
    uses_peers: bool = False  # runs the comparison SDKs (cloudflare, openai), so they are installed first


MEASUREMENTS = (
    Measurement("cold", cold.measure, uses_peers=True),
    Measurement("calls", calls.measure, uses_peers=True),
    Measurement("batch", batch.measure),
    Measurement("queue", bulk_queue.measure),
    Measurement("sse", sse.measure),
    Measurement("load", load.measure),
    Measurement("async", async_clients.measure),
    Measurement("realtime", realtime.measure),
    Measurement("emulator", emulator.measure),
    Measurement("otel", otel.measure),
    Measurement("generator", generator.measure),
    Measurement("size", size.measure),
    Measurement("footprint", footprint.measure, uses_peers=True),
    Measurement("typing", type_check.measure, uses_peers=True),
)
NAMES = [m.name for m in MEASUREMENTS]
