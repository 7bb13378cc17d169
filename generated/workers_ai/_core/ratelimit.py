"""The client-side rate budget: requests per minute per model, shared by every thread or task of a client,
and (given a keeper) by every process of a host or every actor of a Ray job.

A :class:`RateBudget` holds one pace per model, made on first use with the model's rate: ``rate_limit``
given to the client (a number for every model, a mapping ``model id -> rpm`` with the published defaults
for the others, or None for no budget), else the published per-model or per-task default (:data:`TASK_RPM`,
:data:`MODEL_RPM`); models of other tasks, and models this package was not generated for, are not paced
unless ``rate_limit`` names them.

The rule is one :class:`Schedule` per model (a GCRA): requests are spaced evenly (``60 / rpm`` seconds
apart) and up to half a second's worth may go at once, so any 60-second window sees at most
``rpm + rpm / 120`` requests, and a server that lets a second's worth through at once never sees the client
at its edge (a request that reaches it a little late, or early, is still inside what it allows). On a 429
or 3040 reply :meth:`Schedule.slow_down` halves the rate (down to a tenth of the configured one; a refusal
of a request sent before the last slow-down does not halve it again: it was sent at the old rate) and books
nothing until the server's ``Retry-After`` has passed, or :data:`MAX_BLOCK` seconds, whichever is sooner;
every later success gives back a fiftieth of the configured rate.

Where the schedule lives is the only difference between the budgets:

- :class:`Pace`, in this process (the default): a lock around the schedule. It never sleeps itself:
  :meth:`Pace.reserve` books the next slot and returns how long to wait for it, so a thread calls
  ``time.sleep`` on that and an asyncio task ``await asyncio.sleep``.
- a *keeper* shared by processes (:mod:`.shared_pace`): one schedule per model for the whole host
  (``workers_ai.budget.host_budget``, a locked file) or the whole Ray job (``workers_ai.ray``, one
  actor). Each process takes slots from it in small leases, so a request does not wait on a round trip.

Throttling is logged at INFO on the ``workers_ai`` logger (at most every 10 s per model). A budget without
a keeper is configuration when pickled: each process that unpickles a client starts a budget of its own;
a budget with a keeper pickles as its keeper's address, so every copy shares it.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .._error_base import ConfigurationError
from .retry import MAX_RETRY_AFTER

if TYPE_CHECKING:
    from .shared_pace import Keeper, LeasedPace

__all__ = [
    "BURST",
    "DEFAULT_RPM",
    "MAX_BLOCK",
    "MODEL_RPM",
    "TASK_RPM",
    "Pace",
    "RateBudget",
    "RateLimit",
    "Schedule",
    "throttled",
]

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
the published defaults). The default is the published limits. A :class:`RateBudget` (for example a
host's or a Ray job's shared budget) is taken as it is."""

BURST = 0.5
"""Seconds' worth of requests a pace lets go at once (after being idle)."""
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


class Schedule:
    """One model's pace as numbers (a GCRA), on whatever clock its keeper uses: the one rule every budget
    books with (see the module docs). Not thread-safe: its keeper holds the lock."""

    __slots__ = ("blocked_until", "burst", "current", "next", "rpm", "slowed_at")

    def __init__(self, rpm: float, now: float, burst: float = BURST) -> None:
        self.rpm = rpm  # as configured
        self.current = rpm  # after slow-downs
        self.next = now  # the theoretical time of the next request at the current rate
        self.blocked_until = 0.0
        self.slowed_at = -math.inf
        self.burst = burst

    @property
    def interval(self) -> float:
        return 60.0 / self.current

    def start(self, now: float) -> float:
        """When the next request may go: on the even pace, up to ``burst`` seconds ahead of it, never while blocked."""
        ahead = max(0.0, self.burst - self.interval)
        return max(now, self.next - ahead, self.blocked_until)

    def take(self, start: float) -> None:
        """Book the slot at ``start`` (what :meth:`start` gave)."""
        self.next = max(self.next, start) + self.interval

    def book(self, now: float, count: int) -> list[float]:
        """``count`` slots booked one after the other: their times."""
        slots: list[float] = []
        for _ in range(count):
            at = self.start(now)
            self.take(at)
            slots.append(at)
        return slots

    def slow_down(self, now: float, retry_after: float | None, sent_at: float | None = None) -> float:
        """A 429 or 3040: halve the rate (unless the refused request was sent before the last slow-down) and
        book nothing until ``retry_after`` has passed (at most :data:`MAX_BLOCK`). Returns the rate before."""
        before = self.current
        if sent_at is None or sent_at >= self.slowed_at:
            self.current = max(self.rpm * _FLOOR, self.current / 2)
            self.slowed_at = now
        if retry_after is not None and retry_after > 0:
            self.blocked_until = max(self.blocked_until, now + min(retry_after, MAX_BLOCK))
            # No burst when the block ends: requests resume at the (lowered) even pace.
            self.next = max(self.next, self.blocked_until + max(0.0, self.burst - self.interval))
        return before

    def recover(self, successes: int = 1) -> None:
        """Requests got through: give back a fiftieth of the configured rate for each."""
        if self.current < self.rpm:
            self.current = min(self.rpm, self.current + self.rpm * _RECOVER * successes)


def log_throttled(model_id: str, before: float, after: float, retry_after: float | None) -> None:
    _log.info(
        "rate budget for %s: the server is throttling; %.0f -> %.0f requests/min%s",
        model_id,
        before,
        after,
        f", nothing sent for {retry_after:.2f}s" if retry_after else "",
    )


def budget_refusal(model_id: str, wait: float, max_wait: float) -> Exception:
    """The error of a budget that asks to wait longer than the call may (nothing was sent)."""
    from ..errors import RateLimitError  # here: a call that waits its turn never needs it

    return RateLimitError(
        f"{model_id}: the client's rate budget asks to wait {wait:.1f}s before the next request"
        f" (the server throttled it), longer than a call waits ({max(0.0, max_wait):g}s); nothing was sent",
        model_id=model_id,
        retry_after=wait,
    )


class Pace:
    """The pace of one model's requests in this process (see the module docs). Thread-safe; never sleeps."""

    lease_due = False  # a keeper's pace (:class:`.shared_pace.LeasedPace`) fetches slots; this one has them

    def __init__(
        self, model_id: str, rpm: float, *, clock: Callable[[], float] = time.monotonic, burst: float | None = None
    ) -> None:
        self.model_id = model_id
        self._clock = clock
        self._schedule = Schedule(rpm, clock(), BURST if burst is None else burst)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._logged = -math.inf

    @property
    def rpm(self) -> float:
        """The configured requests per minute."""
        return self._schedule.rpm

    @property
    def current(self) -> float:
        """The requests per minute after slow-downs."""
        return self._schedule.current

    @property
    def interval(self) -> float:
        return self._schedule.interval

    def _guard(self) -> threading.Lock:
        if self._pid != os.getpid():  # a forked child: the parent's lock may have been held at the fork
            self._lock = threading.Lock()
            self._pid = os.getpid()
        return self._lock

    def reserve(self, max_wait: float = math.inf) -> float:
        """Book the next request; returns the seconds to wait before sending it (0 when it may go now).

        A wait longer than ``max_wait`` (what is left of the caller's deadline) is not booked: it raises
        :class:`~.errors.RateLimitError` saying how long the budget asks to wait (``.retry_after``), so
        the budget never holds a call past its deadline.
        """
        with self._guard():
            now = self._clock()
            start = self._schedule.start(now)
            wait = start - now
            if wait > max_wait:
                raise budget_refusal(self.model_id, wait, max_wait)
            self._schedule.take(start)
            if wait > 0 and now - self._logged >= _LOG_EVERY:
                self._logged = now
                _log.info(
                    "rate budget for %s: %.0f requests/min; waiting %.2fs before the next request",
                    self.model_id,
                    self._schedule.current,
                    wait,
                )
            return wait

    def refill(self) -> None:
        """Nothing to fetch: a pace in this process books its own slots."""

    def release(self) -> None:
        """Nothing held for later: a pace in this process books each slot as it is asked for."""

    def slow_down(self, retry_after: float | None = None, sent_at: float | None = None) -> None:
        """The server said 429 or 3040: halve the rate and send nothing until ``retry_after`` has passed
        (at most :data:`MAX_BLOCK` seconds from now). ``sent_at`` (this pace's clock): when the refused
        request went; one sent before the last slow-down does not halve the rate again."""
        with self._guard():
            now = self._clock()
            before = self._schedule.slow_down(now, retry_after, sent_at)
            self._logged = now
        log_throttled(self.model_id, before, self._schedule.current, retry_after)

    def succeeded(self) -> None:
        """A request got through: recover a little of the configured rate."""
        if self._schedule.current < self._schedule.rpm:
            with self._guard():
                self._schedule.recover()


class RateBudget:
    """Every model's pace for one client, made on first use. ``task_of(model_id)`` names a model's task
    (for the per-task defaults); None when unknown. ``keeper``: where the schedules are kept when processes
    share them (:mod:`.shared_pace`); None: in this process."""

    def __init__(
        self,
        limit: RateLimit | str = "published",
        *,
        task_of: Callable[[str], str | None] = lambda _: None,
        scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        keeper: Keeper | None = None,
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
        self.keeper = keeper
        self._task_of = task_of
        self._clock = clock
        self._paces: dict[str, Pace | LeasedPace | None] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        share = f", share={self.scale:g}" if self.scale != 1 else ""
        kept = f", keeper={self.keeper!r}" if self.keeper is not None else ""
        return f"RateBudget({self.limit!r}{share}{kept})"

    @property
    def shared(self) -> bool:
        """Whether other processes share this budget (it has a keeper)."""
        return self.keeper is not None

    def scaled(self, share: float) -> RateBudget:
        """A fresh budget with ``share`` of these rates, kept where this one is."""
        return RateBudget(
            self.limit, task_of=self._task_of, scale=self.scale * share, clock=self._clock, keeper=self.keeper
        )

    def bound(self, task_of: Callable[[str], str | None]) -> RateBudget:
        """This budget's configuration for a client that knows its models' tasks (``task_of``)."""
        return RateBudget(self.limit, task_of=task_of, scale=self.scale, keeper=self.keeper)

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

    def pace(self, model_id: str) -> Pace | LeasedPace | None:
        """The pace of ``model_id``'s requests, or None when it has no budget."""
        try:
            return self._paces[model_id]
        except KeyError:
            pass
        rpm = self.rpm(model_id)
        with self._lock:
            if model_id not in self._paces:
                pace: Pace | LeasedPace | None = None
                keeper = self.keeper
                if rpm is not None and keeper is None:
                    pace = Pace(model_id, rpm, clock=self._clock)
                elif rpm is not None and keeper is not None:
                    from .shared_pace import LeasedPace

                    pace = LeasedPace(model_id, rpm, keeper, clock=self._clock)
                self._paces[model_id] = pace
            return self._paces[model_id]

    def release(self) -> None:
        """Give the slots this process holds for later back to the keeper (an idle worker leaves its share to
        the others); nothing to do for a budget in this process."""
        for pace in list(self._paces.values()):
            if pace is not None:
                pace.release()

    def __reduce__(self) -> tuple[Callable[..., RateBudget], tuple[Any, ...]]:
        # Configuration only (and the keeper's address): an unpickled budget starts afresh in its process
        # (a client given one binds its own task lookup) and shares the keeper, if any.
        return (_budget, (self.limit, self.scale, self.keeper))


def _budget(limit: RateLimit | str, scale: float, keeper: Keeper | None = None) -> RateBudget:
    return RateBudget(limit, scale=scale, keeper=keeper)
