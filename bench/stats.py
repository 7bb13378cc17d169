"""The few statistics the measurements report: medians and the middle half of a set of samples."""

from __future__ import annotations

import statistics


def median(values: list[float]) -> float:
    return statistics.median(values)


def iqr(values: list[float]) -> list[float] | None:
    """The 25th and 75th percentiles of ``values`` (None for fewer than 4)."""
    if len(values) < 4:
        return None
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 3), round(q[2], 3)]


def spread(values: list[float]) -> list[float]:
    """The 25th and 75th percentiles (the middle half of the samples), as the telemetry rows give them."""
    ordered = sorted(values)
    if not ordered:
        return []
    return [round(ordered[len(ordered) // 4], 3), round(ordered[(3 * len(ordered)) // 4], 3)]
