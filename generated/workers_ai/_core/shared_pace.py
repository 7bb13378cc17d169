"""A rate budget shared by processes: one :class:`~.ratelimit.Schedule` per model in a *keeper*, slots
taken from it in small leases.

A keeper (:class:`Keeper`) is where the schedules live: a locked file for the processes of one host
(``workers_ai.budget``) or one actor for a Ray job (``workers_ai._ray.budget``). Both keep them in a
:class:`Ledger`, so the rule that books, slows down and gives back is written once.

In each process a :class:`LeasedPace` stands in for the local :class:`~.ratelimit.Pace`, with the same
methods. It asks the keeper for a few slots at a time (a *lease*: as many as its threads or tasks are
waiting for, or used in the last half second, and at most its part of half a second of the model's rate),
so a request waits on a round trip only when the process has none left. The slots are times: a lease is
booked on the shared schedule, one after another, so however many processes take leases, the requests
of all of them together keep to the rate; a process that takes none (never started, gone, idle) leaves
the whole rate to the others.

- **Nothing is booked far ahead.** The keeper books slots at most :data:`LEASE_SECONDS` ahead of its now
  (a process asking when that much is booked already is told when to ask again), so after a refusal the
  slots already handed out run dry within half a second and every process waits for the block.
- **Leases expire.** A slot not used within :data:`EXPIRE` seconds of its time is dropped (a process that
  dies takes at most one lease with it; the others' next leases come after it).
- **Leases are given back.** :meth:`LeasedPace.release` returns the slots still ahead (a Ray actor does
  at the end of every batch): the keeper hands them to the next process that asks.
- **A refusal slows everyone.** A 429 or 3040 (``slow_down``) drops the process's own slots and tells the
  keeper, whose schedule then halves and blocks for ``Retry-After``: every process's next lease comes
  after the block, at the lowered rate. Each success is counted and reported with the next lease.

Times cross processes as offsets from the keeper's "now" (seconds), turned into this process's clock
when the lease arrives, so keepers on another machine need no common clock; the round trip only makes
the slots a little later than booked, never earlier.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, cast

from .ratelimit import Schedule, budget_refusal, log_throttled
from .retry import MAX_RETRY_AFTER

__all__ = ["ACTIVE", "EXPIRE", "LEASE_SECONDS", "Grant", "Keeper", "LeasedPace", "Ledger", "holder_id"]

Grant = tuple[list[float], float, float]
"""A lease: the slots as offsets (seconds) from the keeper's now, the current rate (requests/min), and how
long from now nothing can be leased (the schedule blocked, or booked to its horizon; 0 when neither)."""

LEASE_SECONDS = 0.5
"""A lease holds at most this much of the model's rate, split among the processes taking leases; no slot
is booked further ahead than this."""
EXPIRE = 0.25
"""A leased slot more than this many seconds in the past is dropped, not used late."""
ACTIVE = 5.0
"""A process that took a lease within this many seconds counts among those sharing the rate."""


def holder_id() -> str:
    """This process's name at a keeper: its pid and a random part (pids are reused, across hosts too)."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


class Keeper(Protocol):
    """Where the schedules of a shared budget are kept (a host's file, a Ray job's actor)."""

    def lease(self, model_id: str, rpm: float, want: int, successes: int) -> Grant: ...

    def throttle(self, model_id: str, rpm: float, retry_after: float | None, age: float | None) -> None: ...

    def release(self, model_id: str, rpm: float, offsets: list[float]) -> None: ...


class Ledger:
    """A keeper's schedules: one per model, the slots given back, and who took a lease lately. Every method
    takes the keeper's ``now``; none does I/O (the keeper locks and stores it)."""

    def __init__(self) -> None:
        self.schedules: dict[str, Schedule] = {}
        self.spare: dict[str, list[float]] = {}
        self.holders: dict[str, dict[str, float]] = {}

    def _schedule(self, now: float, model_id: str, rpm: float) -> Schedule:
        sched = self.schedules.get(model_id)
        if sched is None or sched.rpm != rpm:  # a new model, or its limit changed: the newest word holds
            fresh = Schedule(rpm, now)
            if sched is not None:
                fresh.blocked_until = sched.blocked_until
            self.schedules[model_id] = sched = fresh
        return sched

    def lease(self, now: float, model_id: str, rpm: float, want: int, holder: str, successes: int) -> Grant:
        sched = self._schedule(now, model_id, rpm)
        if successes > 0:
            sched.recover(successes)
        seen = self.holders.setdefault(model_id, {})
        seen[holder] = now
        for name in [h for h, at in seen.items() if now - at > ACTIVE]:
            del seen[name]
        cap = max(1, int(sched.current / 60.0 * LEASE_SECONDS / len(seen)))
        count = max(1, min(want, cap))
        usable = [s for s in self.spare.pop(model_id, []) if s >= max(now - EXPIRE, sched.blocked_until)]
        usable.sort()
        slots = usable[:count]
        if usable[count:]:
            self.spare[model_id] = usable[count:]
        horizon = now + LEASE_SECONDS
        while len(slots) < count and sched.start(now) <= horizon:
            slots += sched.book(now, 1)
        wait = sched.blocked_until - now if slots else sched.start(now) - horizon
        return [s - now for s in slots], sched.current, max(0.0, wait)

    def throttle(self, now: float, model_id: str, rpm: float, retry_after: float | None, age: float | None) -> float:
        """Slow the model's schedule down (see :meth:`Schedule.slow_down`); returns the rate before."""
        sched = self._schedule(now, model_id, rpm)
        self.spare.pop(model_id, None)
        return sched.slow_down(now, retry_after, None if age is None else now - age)

    def release(self, now: float, model_id: str, rpm: float, offsets: list[float]) -> None:
        sched = self._schedule(now, model_id, rpm)
        kept = [now + o for o in offsets if now + o >= max(now, sched.blocked_until)]
        if kept:
            self.spare.setdefault(model_id, []).extend(kept)

    def to_builtins(self) -> dict[str, Any]:
        return {
            model_id: [
                s.rpm, s.current, s.next, s.blocked_until, s.slowed_at if math.isfinite(s.slowed_at) else None,
                self.spare.get(model_id, []), self.holders.get(model_id, {}),
            ]
            for model_id, s in self.schedules.items()
        }  # fmt: skip

    @classmethod
    def from_builtins(cls, data: Any) -> Ledger:
        """A ledger from :meth:`to_builtins` output; anything else (a torn or foreign file) gives an empty one."""
        ledger = cls()
        rows: Any = data
        if not isinstance(rows, dict):
            return ledger
        for model_id, row in cast("dict[str, Any]", rows).items():
            try:
                rpm, current, nxt, blocked, slowed, spare, holders = cast("list[Any]", row)
                sched = Schedule(float(rpm), float(nxt))
                sched.current = float(current)
                sched.blocked_until = float(blocked)
                sched.slowed_at = -math.inf if slowed is None else float(slowed)
                ledger.spare[model_id] = [float(s) for s in cast("list[Any]", spare)]
                ledger.holders[model_id] = {str(h): float(t) for h, t in cast("dict[Any, Any]", holders).items()}
            except (TypeError, ValueError, AttributeError):
                continue
            ledger.schedules[model_id] = sched
        return ledger


class LeasedPace:
    """The pace of one model in this process, with its slots leased from a shared keeper (see the module
    docs): the methods of :class:`~.ratelimit.Pace`, and :meth:`refill` / :meth:`release`."""

    def __init__(self, model_id: str, rpm: float, keeper: Keeper, *, clock: Callable[[], float] = time.monotonic):
        self.model_id = model_id
        self.rpm = rpm
        self.current = rpm  # as the keeper last said
        self._keeper = keeper
        self._clock = clock
        self._slots: deque[float] = deque()
        self._blocked_until = 0.0
        self._waiting = 0
        self._successes = 0
        self._used: deque[float] = deque()  # when slots were taken lately (the demand a lease is sized to)
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __repr__(self) -> str:
        return f"LeasedPace({self.model_id!r}, {self.rpm:g}/min, {len(self._slots)} slots held)"

    @property
    def interval(self) -> float:
        return 60.0 / self.current

    def _guard(self) -> threading.Lock:
        if self._pid != os.getpid():  # a forked child: the parent's lock and slots are not its own
            self._lock = threading.Lock()
            self._slots.clear()
            self._pid = os.getpid()
        return self._lock

    @property
    def lease_due(self) -> bool:
        """Whether the next :meth:`reserve` needs a lease first (an async flow fetches it off its loop)."""
        slots = self._slots
        return not slots or slots[-1] < self._clock() - EXPIRE

    def refill(self) -> None:
        """Fetch a lease when no usable slot is held (blocking: the keeper is another process)."""
        self._waiting += 1
        try:
            with self._guard():
                self._fill(MAX_RETRY_AFTER)
        finally:
            self._waiting -= 1

    def _expire(self, now: float) -> None:
        slots = self._slots
        while slots and slots[0] < now - EXPIRE:
            slots.popleft()

    def _fill(self, max_wait: float = math.inf) -> None:
        """Fetch leases until a slot is held, waiting as long as the keeper says nothing can be leased;
        a wait longer than ``max_wait`` raises ``RateLimitError`` (see ``Pace.reserve``)."""
        while True:
            now = self._clock()
            self._expire(now)
            if self._slots:
                return
            self._fetch()
            if not self._slots:
                wait = self._blocked_until - self._clock()
                if wait > max_wait:
                    raise budget_refusal(self.model_id, wait, max_wait)
                time.sleep(max(0.0, wait))

    def _fetch(self) -> None:
        now = self._clock()
        used = self._used
        while used and used[0] < now - 0.5:
            used.popleft()
        successes, self._successes = self._successes, 0
        offsets, current, blocked_for = self._keeper.lease(
            self.model_id, self.rpm, max(1, self._waiting, len(used)), successes
        )
        at = self._clock()  # the slots are counted from the reply's arrival: later than booked, never earlier
        self._slots.extend(at + o for o in offsets)
        self.current = current
        if blocked_for > 0:
            self._blocked_until = max(self._blocked_until, at + blocked_for)

    def reserve(self, max_wait: float = math.inf) -> float:
        """Take the next leased slot (fetching a lease when none is held); the seconds to wait for it.
        A wait longer than ``max_wait`` takes nothing and raises ``RateLimitError`` (see ``Pace.reserve``)."""
        self._waiting += 1
        try:
            with self._guard():
                self._fill(max_wait)
                now = self._clock()
                wait = max(0.0, self._slots[0] - now, self._blocked_until - now)
                if wait > max_wait:
                    raise budget_refusal(self.model_id, wait, max_wait)
                self._slots.popleft()
                self._used.append(now)
                return wait
        finally:
            self._waiting -= 1

    def slow_down(self, retry_after: float | None = None, sent_at: float | None = None) -> None:
        """A 429 or 3040: this process's slots go (they were booked at the old rate, before the block) and
        the keeper slows every process down."""
        with self._guard():
            now = self._clock()
            self._slots.clear()
            if retry_after is not None and retry_after > 0:
                self._blocked_until = max(self._blocked_until, now + retry_after)
            before = self.current
            self.current = max(self.rpm / 10, self.current / 2)
        self._keeper.throttle(self.model_id, self.rpm, retry_after, None if sent_at is None else now - sent_at)
        log_throttled(self.model_id, before, self.current, retry_after)

    def succeeded(self) -> None:
        """A request got through: counted, and reported with the next lease (the keeper recovers the rate)."""
        self._successes += 1

    def release(self) -> None:
        """Give the slots still ahead back to the keeper, for the other processes."""
        with self._guard():
            now = self._clock()
            ahead = [s - now for s in self._slots if s > now]
            self._slots.clear()
        if ahead:
            self._keeper.release(self.model_id, self.rpm, ahead)
