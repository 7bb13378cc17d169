"""What the emulator holds between requests: recorded requests, injected faults and async batch jobs.

Each store has its own lock and is bounded by :class:`Settings` (``keep_requests``, ``keep_jobs``).
Another kind of state (say, fine-tunes an account uploaded) is one more store here, reset with the rest.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ._faults import Fault, FaultKind
from ._records import RecordedRequest
from ._settings import Settings

__all__ = ["Faults", "Job", "Jobs", "Recorder", "State"]


class Recorder:
    """Every request received, oldest first, at most ``settings.keep_requests`` of them."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._items: list[RecordedRequest] = []

    def add(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._items.append(rec)
            excess = len(self._items) - self._settings.keep_requests
            if excess > 0:
                del self._items[:excess]

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class Faults:
    """Injected faults, claimed one hit at a time by the requests they apply to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Fault] = []

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._items.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def take(self, rec: RecordedRequest, kind: FaultKind, header: Fault | None) -> Fault | None:
        """The fault this request meets (the per-request ``header`` fault first), counted as hit."""
        if header is not None and header.kind == kind and header.active:
            header.hits += 1
            rec.fault = header.name
            return header
        with self._lock:
            candidates = list(self._items)
        # A fault's `match` predicate is the caller's code and may well call back into the emulator (for
        # example `emu.requests_for(...)`), so it runs without the lock; the claim is checked again under it.
        for f in candidates:
            if not f.applies(rec, kind):
                continue
            with self._lock:
                if f.active and any(g is f for g in self._items):
                    f.hits += 1
                    rec.fault = f.name
                    return f
        return None


@dataclass
class Job:
    """One queued async batch."""

    request_id: str
    model_id: str
    items: list[Any]
    refs: list[Any]
    created: float
    polls: int = 0
    fail_items: dict[int, tuple[int, str]] = field(default_factory=lambda: {})
    failed: str | None = None
    done: dict[str, Any] | None = None
    finished: bool = False  # a poll has answered with the results or the failure


class Jobs:
    """Batch jobs by request id, at most ``settings.keep_jobs`` (the oldest finished ones go first)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._items: dict[str, Job] = {}

    def add(self, job: Job) -> None:
        with self._lock:
            self._items[job.request_id] = job
            excess = len(self._items) - max(1, self._settings.keep_jobs)
            if excess <= 0:
                return
            finished = [rid for rid, j in self._items.items() if j.finished][:excess]
            for rid in finished:
                del self._items[rid]
            for rid in list(self._items)[: excess - len(finished)]:
                del self._items[rid]

    def poll(self, request_id: object) -> Job | None:
        """The job (its poll count raised by one), or None when unknown or expired."""
        with self._lock:
            job = self._items.get(request_id) if isinstance(request_id, str) else None
            if job is not None:
                job.polls += 1
            return job

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class State:
    """All of it, for one emulator."""

    def __init__(self, settings: Settings) -> None:
        self.requests = Recorder(settings)
        self.faults = Faults()
        self.jobs = Jobs(settings)

    def reset(self) -> None:
        self.requests.clear()
        self.faults.clear()
        self.jobs.clear()
