"""The client-side rate budget: requests per minute per model, shared by every thread or task of a client.

A :class:`RateBudget` holds one :class:`Pace` per model, made on first use with the model's rate:
``rate_limit`` given to the client (a number for every model, a mapping ``model id -> rpm`` with the
published defaults for the others, or None for no budget), else the published per-model or per-task
default (:data:`TASK_RPM`, :data:`MODEL_RPM`); models of other tasks, and models this package was not
generated for, are not paced unless ``rate_limit`` names them.

A pace spaces requests evenly (``60 / rpm`` seconds apart) and lets up to one second's worth through at
once, so any 60-second window sees at most ``rpm + rpm / 60`` requests. It never sleeps itself:
:meth:`Pace.reserve` books the next slot and returns how long to wait for it, so a thread calls
``time.sleep`` on that and an asyncio task ``await asyncio.sleep``. On a 429 or 3040 reply,
:meth:`Pace.slow_down` halves the rate (down to a tenth of the configured one) and books nothing until
the server's ``Retry-After`` has passed, or :data:`MAX_BLOCK` seconds, whichever is sooner (the call that
got the header honours all of it; one bad header, ``1e12`` or ``3600``, must not shut a long-lived client
out of a model that answers again); every later success gives back a fiftieth of the configured rate.
Throttling is logged at INFO on the ``workers_ai`` logger (at most every 10 s per model).

A budget is configuration when pickled: each process that unpickles a client starts a budget of its
own, with the same rates (split it yourself across workers with :meth:`RateBudget.scaled`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TypeAlias

from .._error_base import ConfigurationError
from .retry import MAX_RETRY_AFTER

__all__ = ["DEFAULT_RPM", "MAX_BLOCK", "MODEL_RPM", "TASK_RPM", "Pace", "RateBudget", "RateLimit", "throttled"]

_log = logging.getLogger("workers_ai")

# Published requests-per-minute limits by task, and the models with limits of their own.
TASK_RPM: dict[str, float] = {
    "Automatic Speech Recognition": 720,
    "Image Classification": 3000,
    "Image-to-Text": 720,
    "Object Detection": 3000,
    "Summarization": 1500,
    "Text Classification": 2000,
    "Text Embeddings": 3000,
    "Text Generation": 300,
    "Text-to-Image": 720,
    "Translation": 720,
}
MODEL_RPM: dict[str, float] = {
    "@cf/baai/bge-large-en-v1.5": 1500,
    "@cf/mistral/mistral-7b-instruct-v0.1-awq": 400,
    "@cf/microsoft/phi-2": 720,
    "@cf/qwen/qwen1.5-0.5b-chat": 1500,
    "@cf/qwen/qwen1.5-1.8b-chat": 720,
    "@cf/qwen/qwen1.5-14b-chat-awq": 150,
    "@cf/tinyllama/tinyllama-1.1b-chat-v1.0": 720,
    "@cf/runwayml/stable-diffusion-v1-5-img2img": 1500,
}
# A task the table does not list, or a model this package was not generated for: no published limit
# to keep to, so no pacing (give one with ``rate_limit={model_id: rpm}``).
DEFAULT_RPM: float | None = None

RateLimit: TypeAlias = "float | Mapping[str, float | None] | None"
"""What ``WorkersAI(rate_limit=...)`` takes: None (no budget), a number of requests per minute for
every model, or a mapping ``model id -> rpm`` (None: no budget for that model; models not listed keep
the published defaults). The default is the published limits."""

_FLOOR = 0.1  # slowing down never goes below this share of the configured rate
_RECOVER = 1 / 50  # each success gives back this share of the configured rate
_LOG_EVERY = 10.0
MAX_BLOCK = 5 * MAX_RETRY_AFTER
"""The longest a server's ``Retry-After`` holds the shared budget (every call to that model): five minutes.
A call while it holds longer than a call waits (``MAX_RETRY_AFTER``) is refused at once, saying how long
is left; after it, calls go to the server again."""


def throttled(status: int, headers: Mapping[str, str], data: bytes) -> bool:
    """Whether a reply should slow the budget down: a 429, or a capacity error (3040) whatever its status.
    (A daily-quota 429 is told apart by the caller: slowing down cannot help it.)"""
    if status == 429:
        return True
    if status < 400 or b"3040" not in data:
        return False
    from ..errors import QuotaExceededError, RateLimitError
    from .error_replies import error_from

    error = error_from(status, headers, data, model_id=None)
    return isinstance(error, RateLimitError) and not isinstance(error, QuotaExceededError)


def _check_rpm(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigurationError(f"{where} must be a positive number of requests per minute, got {value!r}")
    return float(value)


class Pace:
    """The pace of one model's requests (see the module docs). Thread-safe; never sleeps."""

    def __init__(
        self, model_id: str, rpm: float, *, clock: Callable[[], float] = time.monotonic, burst: float | None = None
    ) -> None:
        self.model_id = model_id
        self.rpm = rpm  # as configured
        self.current = rpm  # after slow-downs
        self._clock = clock
        self._burst_seconds = 1.0 if burst is None else burst
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._next = clock()  # the theoretical time of the next request at the current rate
        self._blocked_until = 0.0
        self._logged = -math.inf

    def _guard(self) -> threading.Lock:
        if self._pid != os.getpid():  # a forked child: the parent's lock may have been held at the fork
            self._lock = threading.Lock()
            self._pid = os.getpid()
        return self._lock

    @property
    def interval(self) -> float:
        return 60.0 / self.current

    def reserve(self, max_wait: float = math.inf) -> float:
        """Book the next request; returns the seconds to wait before sending it (0 when it may go now).

        A wait longer than ``max_wait`` (what is left of the caller's deadline) is not booked: it raises
        :class:`~.errors.RateLimitError` saying how long the budget asks to wait (``.retry_after``), so
        the budget never holds a call past its deadline.
        """
        with self._guard():
            now = self._clock()
            interval = self.interval
            ahead = max(0.0, self._burst_seconds - interval)  # how far ahead of the even pace a request may go
            start = max(now, self._next - ahead, self._blocked_until)
            wait = start - now
            if wait > max_wait:
                from ..errors import RateLimitError  # here: a call that waits its turn never needs it

                raise RateLimitError(
                    f"{self.model_id}: the client's rate budget asks to wait {wait:.1f}s before the next request"
                    f" (the server throttled it), longer than a call waits ({max(0.0, max_wait):g}s);"
                    " nothing was sent",
                    model_id=self.model_id,
                    retry_after=wait,
                )
            self._next = max(self._next, start) + interval
            if wait > 0 and now - self._logged >= _LOG_EVERY:
                self._logged = now
                _log.info(
                    "rate budget for %s: %.0f requests/min; waiting %.2fs before the next request",
                    self.model_id,
                    self.current,
                    wait,
                )
            return wait

    def slow_down(self, retry_after: float | None = None) -> None:
        """The server said 429 or 3040: halve the rate and send nothing until ``retry_after`` has passed
        (at most :data:`MAX_BLOCK` seconds from now)."""
        with self._guard():
            now = self._clock()
            before = self.current
            self.current = max(self.rpm * _FLOOR, self.current / 2)
            if retry_after is not None and retry_after > 0:
                retry_after = min(retry_after, MAX_BLOCK)
                self._blocked_until = max(self._blocked_until, now + retry_after)
                # No burst when the block ends: requests resume at the (lowered) even pace.
                self._next = max(self._next, self._blocked_until + max(0.0, self._burst_seconds - self.interval))
            self._logged = now
        _log.info(
            "rate budget for %s: the server is throttling; %.0f -> %.0f requests/min%s",
            self.model_id,
            before,
            self.current,
            f", nothing sent for {retry_after:.2f}s" if retry_after else "",
        )

    def succeeded(self) -> None:
        """A request got through: recover a little of the configured rate."""
        if self.current < self.rpm:
            with self._guard():
                self.current = min(self.rpm, self.current + self.rpm * _RECOVER)


class RateBudget:
    """Every model's :class:`Pace` for one client, made on first use. ``task_of(model_id)`` names a
    model's task (for the per-task defaults); None when unknown."""

    def __init__(
        self,
        limit: RateLimit | str = "published",
        *,
        task_of: Callable[[str], str | None] = lambda _: None,
        scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit != "published" and limit is not None and not isinstance(limit, Mapping):
            limit = _check_rpm(limit, "rate_limit")
        if isinstance(limit, Mapping):
            checked: dict[str, float | None] = {}
            for key, value in limit.items():  # pyright: ignore[reportUnknownVariableType]
                if not isinstance(key, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise ConfigurationError(f"rate_limit keys must be model ids, got {key!r}")
                checked[key] = None if value is None else _check_rpm(value, f"rate_limit[{key!r}]")
            limit = checked
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"a rate budget's share must be in (0, 1], got {scale!r}")
        self.limit = limit
        self.scale = float(scale)
        self._task_of = task_of
        self._clock = clock
        self._paces: dict[str, Pace | None] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        share = f", share={self.scale:g}" if self.scale != 1 else ""
        return f"RateBudget({self.limit!r}{share})"

    def scaled(self, share: float) -> RateBudget:
        """A fresh budget with ``share`` of these rates (e.g. ``1 / n`` for each of ``n`` workers)."""
        return RateBudget(self.limit, task_of=self._task_of, scale=self.scale * share, clock=self._clock)

    def rpm(self, model_id: str) -> float | None:
        """The configured requests per minute for ``model_id`` (this budget's share), None when unpaced."""
        limit = self.limit
        if limit is None:
            return None
        if isinstance(limit, float):
            rpm: float | None = limit
        elif isinstance(limit, Mapping) and model_id in limit:
            rpm = limit[model_id]  # pyright: ignore[reportUnknownVariableType]
        elif model_id in MODEL_RPM:
            rpm = MODEL_RPM[model_id]
        else:
            task = self._task_of(model_id)
            rpm = TASK_RPM.get(task, DEFAULT_RPM) if task else DEFAULT_RPM
        return None if rpm is None else rpm * self.scale

    def pace(self, model_id: str) -> Pace | None:
        """The pace of ``model_id``'s requests, or None when it has no budget."""
        try:
            return self._paces[model_id]
        except KeyError:
            pass
        rpm = self.rpm(model_id)
        with self._lock:
            if model_id not in self._paces:
                self._paces[model_id] = None if rpm is None else Pace(model_id, rpm, clock=self._clock)
            return self._paces[model_id]

    def __reduce__(self) -> tuple[Callable[[RateLimit | str, float], RateBudget], tuple[object, float]]:
        # Configuration only: an unpickled budget starts afresh in its process (a client given one
        # binds its own task lookup).
        return (_budget, (self.limit, self.scale))


def _budget(limit: RateLimit | str, scale: float) -> RateBudget:
    return RateBudget(limit, scale=scale)
