"""The emulator as the account's limits: requests per minute per model (``rate_limits=``) and the time a
model takes to answer (``latency=``).

**Rate limits.** ``rate_limits="published"`` holds each model to Workers AI's published limit (by model,
else by its task: the client's own table, ``workers_ai._core.ratelimit``); a number holds every model to
it; a mapping names models or tasks (``{"@cf/baai/bge-m3": 600, "Text Generation": 120}``: a task's number
holds each model of that task, counted apart), and leaves the others unlimited. None (the default):
no limit. Every request that names a limited model counts: runs, batch submissions and polls, the
OpenAI-compatible routes. Each model is a token bucket: ``rpm / 60`` tokens a second, holding up to a
second's worth plus one (the client's pace lets at most half a second's worth go at once, so a client
paced at the same limit is never at its edge). A request finding no token gets 429 with the API's code
3021 and message, ``Retry-After`` (whole seconds, rounded up) and ``retry-after-ms`` (the exact wait), and
takes nothing from the bucket. ``emu.rate_limited`` counts the 429s by model.

**Latency.** ``latency=0.1`` holds every reply to a model 0.1 s; ``latency=(0.05, 0.2)`` a uniformly
random time in that range, per request. It is a timer on the server's loop, not a busy worker, so it
costs nothing while it runs. A 429 is not held (it comes from the edge, before any model).
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._reply import Reply, error_reply

if TYPE_CHECKING:
    from ._catalog import ModelSpec

__all__ = ["RATE_LIMITED", "Limits", "check_latency", "check_rate_limits", "parse_rate_limits"]

RATE_LIMITED = (3021, "rate limiting: inference request per min rate reached")
"""The code and message the API answers a request over its per-minute limit with (429)."""


def check_rate_limits(value: Any) -> Any:
    """``rate_limits`` in the form :class:`Limits` takes; ValueError names what is wrong."""
    if value is None or value == "published":
        return value
    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for key, rpm in value.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(key, str) or not key:
                raise ValueError(f"Emulator(rate_limits=...) keys are model ids or task names, got {key!r}")
            out[key] = _rpm(rpm)
        return out
    return _rpm(value)


def parse_rate_limits(words: list[str]) -> Any:
    """``workers-ai serve --rate-limits ...``: ``published``, one number, or ``MODEL_OR_TASK=RPM`` words."""
    if words == ["published"]:
        return "published"
    if len(words) == 1 and "=" not in words[0]:
        try:
            return check_rate_limits(float(words[0]))
        except ValueError:
            raise ValueError(f"takes 'published', a number or NAME=RPM pairs, got {words[0]!r}") from None
    table: dict[str, float] = {}
    for word in words:
        name, sep, number = word.rpartition("=")
        try:
            table[name] = float(number)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise ValueError(f"{word!r} is not NAME=RPM (a model id or task, '=', requests per minute)")
    return check_rate_limits(table)


def _rpm(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(
            "Emulator(rate_limits=...) takes 'published', a number of requests per minute, or a mapping of "
            f"model ids or tasks to numbers, got {value!r}"
        )
    return float(value)


def check_latency(value: Any) -> tuple[float, float]:
    """``latency`` as ``(low, high)`` seconds; one number is both ends."""
    pair: Any = (value, value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:  # pyright: ignore[reportUnknownArgumentType]
        raise ValueError(f"Emulator(latency=...) takes seconds or a (low, high) range of seconds, got {value!r}")
    low, high = pair  # pyright: ignore[reportUnknownVariableType]
    for end in (low, high):  # pyright: ignore[reportUnknownVariableType]
        if isinstance(end, bool) or not isinstance(end, (int, float)) or not math.isfinite(end) or end < 0:
            raise ValueError(f"Emulator(latency=...) takes finite seconds >= 0, got {value!r}")
    if low > high:
        raise ValueError(f"Emulator(latency=(low, high)) needs low <= high, got {value!r}")
    return (float(low), float(high))  # pyright: ignore[reportUnknownArgumentType]


class _Bucket:
    __slots__ = ("at", "capacity", "rate", "tokens")

    def __init__(self, rpm: float, now: float) -> None:
        self.rate = rpm / 60.0
        self.capacity = self.rate + 1.0  # a second's worth, plus one
        self.tokens = self.capacity
        self.at = now

    def take(self, now: float) -> float:
        """0.0 when a token was taken, else the seconds until one is there."""
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class Limits:
    """One emulator's rate limits and latency (read from its settings at every request, so both can be
    changed on a running emulator: ``emu.rate_limits = 600``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, float], _Bucket] = {}
        self._random = random.Random()
        self.refused: dict[str, int] = {}

    def rpm(self, limits: Any, spec: ModelSpec) -> float | None:
        """The model's limit under ``limits`` (the ``rate_limits`` setting), None when unlimited."""
        if limits is None:
            return None
        if isinstance(limits, float):
            return limits
        if limits == "published":
            from .._core.ratelimit import MODEL_RPM, TASK_RPM

            return MODEL_RPM.get(spec.model_id, TASK_RPM.get(spec.task_name))
        table: Mapping[str, float] = limits
        return table.get(spec.model_id, table.get(spec.task_name))

    def admit(self, limits: Any, spec: ModelSpec) -> Reply | None:
        """None when the request may go on, else the 429 that refuses it."""
        rpm = self.rpm(limits, spec)
        if rpm is None:
            return None
        with self._lock:
            key = (spec.model_id, rpm)
            bucket = self._buckets.get(key)
            now = time.monotonic()
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(rpm, now)
            wait = bucket.take(now)
            if wait <= 0:
                return None
            self.refused[spec.model_id] = self.refused.get(spec.model_id, 0) + 1
        code, message = RATE_LIMITED
        headers = [
            ("retry-after", str(max(1, math.ceil(wait)))),
            ("retry-after-ms", str(max(1, math.ceil(wait * 1000)))),
        ]
        return error_reply(429, code, message, headers)

    def hold(self, latency: tuple[float, float] | None, reply: Reply) -> None:
        """Hold ``reply`` for the latency the settings ask (added to any delay a fault set)."""
        if latency is None or latency[1] <= 0:
            return
        low, high = latency
        with self._lock:
            extra = low if low == high else self._random.uniform(low, high)
        reply.delay += extra

    def reset(self) -> None:
        with self._lock:
            self._buckets.clear()
            self.refused.clear()
