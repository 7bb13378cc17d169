"""What the emulator holds between requests: recorded requests, injected faults, async batch jobs and
the errors it contained.

Each store has its own lock and is bounded by :class:`Settings` (``keep_requests``, ``keep_jobs``), by
the API's own per-account limit (fine-tunes) or by :data:`KEEP_ERRORS`.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ._faults import Fault, FaultKind
from ._records import RecordedRequest, ServerError, Stage, error_text
from ._settings import Settings

__all__ = ["KEEP_ERRORS", "Errors", "Finetune", "Finetunes", "Faults", "Job", "Jobs", "Recorder", "State"]

KEEP_ERRORS = 100
_log = logging.getLogger("workers_ai.testing")


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


class Errors:
    """Exceptions the emulator contained, the last :data:`KEEP_ERRORS`; each is logged once, with its
    traceback, on the ``workers_ai.testing`` logger (CRITICAL when the server loop itself ended)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[ServerError] = deque(maxlen=KEEP_ERRORS)

    def add(self, stage: Stage, where: str, error: BaseException) -> None:
        text = "".join(traceback.format_exception(error))
        level = logging.CRITICAL if stage == "loop" else logging.ERROR
        after = "the server stopped" if stage == "loop" else "its connection was closed"
        _log.log(level, "emulator error (%s) in %s: %s; %s", stage, where, error_text(error), after, exc_info=error)
        # The text is kept, not the frames' locals (a 10 MB request body each), however long the server runs.
        traceback.clear_frames(error.__traceback__)
        with self._lock:
            self._items.append(ServerError(stage, where, error, text))

    def snapshot(self) -> list[ServerError]:
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
        self._received: dict[str, int] = {}

    def received(self) -> dict[str, int]:
        """How many times each batch item was received, by its ``external_reference`` (``"#<n>"``, counted
        per batch position, for items without one): what tests check to prove nothing was sent twice."""
        with self._lock:
            return dict(self._received)

    def add(self, job: Job) -> None:
        with self._lock:
            for n, ref in enumerate(job.refs):
                key = ref if isinstance(ref, str) else f"#{n}"
                self._received[key] = self._received.get(key, 0) + 1
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
            self._received.clear()


@dataclass
class Finetune:
    """One fine-tune (LoRA adapter) of the account: its record and the asset files uploaded so far."""

    id: str
    name: str
    model: str
    description: str
    public: bool
    created_at: str
    modified_at: str
    assets: dict[str, bytes] = field(default_factory=lambda: {})

    def record(self) -> dict[str, Any]:
        """The fine-tune as the API lists it."""
        return {
            "id": self.id,
            "name": self.name,
            "model": self.model,
            "description": self.description,
            "public": self.public,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        }


class Finetunes:
    """The account's fine-tunes, in creation order, found by id or by name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Finetune] = []

    def add(self, item: Finetune, limit: int) -> bool:
        """Keep ``item`` unless the account already has ``limit`` fine-tunes (False then)."""
        with self._lock:
            if len(self._items) >= limit:
                return False
            self._items.append(item)
            return True

    def find(self, key: str) -> Finetune | None:
        with self._lock:
            for item in self._items:
                if key in (item.id, item.name):
                    return item
            return None

    def named(self, name: str) -> bool:
        with self._lock:
            return any(item.name == name for item in self._items)

    def snapshot(self) -> list[Finetune]:
        with self._lock:
            return list(self._items)

    def put_asset(self, item: Finetune, file_name: str, data: bytes, when: str) -> None:
        with self._lock:
            item.assets[file_name] = data
            item.modified_at = when

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class State:
    """All of it, for one emulator."""

    def __init__(self, settings: Settings) -> None:
        self.requests = Recorder(settings)
        self.faults = Faults()
        self.jobs = Jobs(settings)
        self.finetunes = Finetunes()
        self.errors = Errors()

    def reset(self) -> None:
        self.requests.clear()
        self.errors.clear()
        self.faults.clear()
        self.jobs.clear()
        self.finetunes.clear()
