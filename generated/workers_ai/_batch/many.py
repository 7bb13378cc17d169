"""Any number of requests through the async batch API, once: split, submit, poll, retry failed items,
deliver in input order, and (with a journal) survive a crash without paying twice.

:func:`many_flow` is the one implementation: ``handle.batch_many`` (sync and async), ``embed_many``,
``workers-ai batch`` and ``workers_ai.ray.map_model(queue=True)`` all run it. It is a flow (it yields the
Send/Sleep commands of the submission and poll flows), so the sync and async clients each drive it.

How it goes:

- The requests come from a :class:`Source`: each one already validated and encoded once, with its key
  (the ``external_reference`` it is sent with: the caller's, or its index) and a fingerprint of the whole
  input (for the journal).
- They are cut, in input order, into batches under ``max_bytes`` (10 MB) and ``batch_size`` requests. At
  most ``max_in_flight`` batches are out at once (submitted and not yet delivered): a bounded window, so
  memory holds at most that many batches' requests and results, whatever the number of requests.
- Every batch is polled on its own growing interval. A finished batch's items are matched by ``id``, and
  their ``external_reference`` is checked against the key sent. Items that failed for a reason worth
  another try (capacity, timeout, internal error, no response in the finished batch, the batch failed as a
  whole) are sent again, only they, at most ``item_retries`` times.
- The items of the oldest batch go to ``sink`` in input order as soon as it is settled; the raw replies
  are dropped as each batch is read.

The journal (:mod:`.journal`) records each batch's requests before it is sent and its request id before
any wait; a run given the journal of an earlier one polls the known ids and sends only the rest.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from operator import itemgetter
from typing import Any, NamedTuple, Protocol, TypedDict, cast

import msgspec

from .._core.flow import Flow, Sleep, call
from ..errors import (
    APITimeoutError,
    BatchError,
    BatchTimeoutError,
    ConfigurationError,
    ErrorDetail,
    InputValidationError,
)
from .embed_plan import BatchProgress
from .jobs import BatchItem, BatchJobBase, BatchModel, check_poll_options
from .journal import Fingerprint, Journal, JournalBatch, ranges_of
from .lean import read_lean, result_types
from .submit import submit_flow
from .wire import MAX_BATCH_BYTES, batch_item_types, request_data, require_batch

__all__ = [
    "RETRYABLE_CODES",
    "BatchManyOptions",
    "ListSource",
    "ManyOptions",
    "Source",
    "Unit",
    "check_options",
    "many_flow",
    "prepare",
]

# Item errors another try may cure: capacity, rate limit, timeouts, internal errors, upstream unavailable.
RETRYABLE_CODES = frozenset({3007, 3008, 3021, 3040, 3043, 7009})
_NO_RESPONSE = "the finished batch has no response for this request"
_OPEN = len(b'{"requests":[')
_CLOSE = len(b"]}")


class Unit(NamedTuple):
    """One request: its input index, its key (sent as ``external_reference``; ``""``: none sent, nothing
    checked) and its encoded JSON object."""

    pos: int
    key: str
    body: bytes
    weight: int = 1  # what progress counts it as (embed_many: the texts it holds)


class Source(Protocol):
    """The requests of a run, in input order. ``count`` and ``fingerprint`` are known before anything is
    sent; iterating may happen more than once and gives the same units each time."""

    @property
    def count(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def __iter__(self) -> Iterator[Unit]: ...


class ListSource:
    """Requests held in memory (what ``batch_many`` gets): encoded once, here. The fingerprint is taken
    when a journal asks for it (a run without one never hashes its requests)."""

    def __init__(self, units: list[Unit], fingerprint: str | None = None, model_id: str = "") -> None:
        self.units = units
        self.count = len(units)
        self._fingerprint = fingerprint
        self._model_id = model_id

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            fp = Fingerprint(self._model_id)
            for unit in self.units:
                fp.add(unit.body)
            self._fingerprint = fp.hexdigest()
        return self._fingerprint

    def __iter__(self) -> Iterator[Unit]:
        return iter(self.units)


def encode_unit(
    handle: BatchModel, item: Any, index: int, kinds: tuple[type[Any], ...], max_bytes: int, where: str = ""
) -> Unit:
    """Validate and encode one request, keyed by its ``external_reference`` (the caller's) or its index.
    ``kinds=()`` skips the check (a mapping already checked once encodes to the same bytes)."""
    where = where or f"$.requests[{index}]"
    if kinds or type(item) is not dict:
        data = request_data(handle, item, where, kinds)
    else:  # a mapping checked once already (the CLI's second read) encodes to the same bytes
        data = dict(cast(Any, item))
    ref = data.get("external_reference")
    key = ref if type(ref) is str else str(index)
    data["external_reference"] = key
    try:
        body = _encode(data)
    except (TypeError, UnicodeEncodeError) as exc:
        raise InputValidationError(handle.model_id, where, f"not JSON-serialisable: {exc}") from None
    if len(body) + _OPEN + _CLOSE >= max_bytes:
        raise InputValidationError(
            handle.model_id,
            where,
            f"this request alone is {len(body):,} bytes encoded; a batch must be under {max_bytes:,}",
        )
    return _unit((index, key, body, 1))


_WEIGHT = itemgetter(3)  # a unit's weight
_new_tuple: Any = getattr(tuple, "__new__")  # noqa: B009  (through Any: its typeshed signature is partly unknown)
_unit: Callable[[tuple[int, str, bytes, int]], Unit] = partial(_new_tuple, Unit)  # skips NamedTuple's Python __new__
_encode = msgspec.json.Encoder().encode


def prepare(handle: BatchModel, requests: Iterable[Any], max_bytes: int = MAX_BATCH_BYTES) -> ListSource:
    """Every request validated and encoded (nothing is sent when one is bad: the error names it)."""
    if isinstance(requests, (str, bytes, dict)):
        raise InputValidationError(handle.model_id, "$.requests", "expected a list of requests")
    require_batch(handle)
    kinds = batch_item_types(handle)
    units = [encode_unit(handle, item, i, kinds, max_bytes) for i, item in enumerate(requests)]
    return ListSource(units, model_id=handle.model_id)


class ManyOptions(NamedTuple):
    timeout: float = 3600.0
    poll_interval: float = 1.0
    max_interval: float = 15.0
    max_bytes: int = MAX_BATCH_BYTES
    batch_size: int = 1000
    max_in_flight: int = 8
    item_retries: int = 2


class BatchManyOptions(TypedDict, total=False):
    """The keyword arguments of ``batch_many``.

    ``journal``: path of the run's journal (docs/bulk-queue.md); ``on_progress(BatchProgress)`` after every
    round of polls; ``timeout`` (seconds, default 3600) for the whole run; ``poll_interval`` (first wait
    between polls of a batch, growing 1.5 times up to ``max_interval``); ``batch_size`` (requests per batch,
    default 1000); ``max_in_flight`` (batches out at once, default 8); ``item_retries`` (how many times an
    item that failed for a passing reason is sent again, default 2); ``max_bytes`` (a batch body stays
    under it; default 10 MB).
    """

    journal: str | None
    on_progress: Callable[[BatchProgress], None] | None
    timeout: float
    poll_interval: float
    max_interval: float
    batch_size: int
    max_in_flight: int
    item_retries: int
    max_bytes: int


def check_options(opts: ManyOptions) -> None:
    """The run's counts and timing as :func:`many_flow` takes them (timing by ``BatchJob.wait``'s rule);
    else ``ConfigurationError``, before anything is sent."""
    if opts.batch_size < 1 or opts.max_in_flight < 1 or opts.item_retries < 0:
        raise ConfigurationError("batch_size and max_in_flight must be >= 1, item_retries >= 0")
    check_poll_options(opts.timeout, opts.poll_interval, opts.max_interval)


def options_of(given: BatchManyOptions) -> tuple[ManyOptions, str | None, Callable[[BatchProgress], None] | None]:
    """The run's options from ``batch_many``'s keywords (unknown ones are a ``TypeError``, as in a call;
    bad values a ``ConfigurationError``: :func:`check_options`)."""
    known = set(BatchManyOptions.__annotations__)
    extra = set(given) - known
    if extra:
        raise TypeError(f"batch_many() got unexpected keyword arguments: {', '.join(sorted(extra))}")
    fields = {k: v for k, v in given.items() if k in ManyOptions._fields}
    journal = given.get("journal")
    options = ManyOptions(**cast("dict[str, Any]", fields))
    check_options(options)
    return options, (None if journal is None else str(journal)), given.get("on_progress")


class _Attempt:
    """One batch sent (or known from the journal) for a slot: a first batch, or a retry of failed items."""

    __slots__ = ("interval", "job", "next_poll", "number", "state", "units")

    def __init__(self, number: int, units: list[Unit], job: BatchJobBase[Any] | None, now: float, interval: float):
        self.number = number
        self.units = units
        self.job = job
        self.state = "queued"
        self.next_poll = now  # polled at once, then after `interval`, growing
        self.interval = interval


class _Slot:
    """A run of consecutive requests and the batches sent for them; settled when every request has a
    final outcome."""

    __slots__ = ("attempts", "number", "results", "settled", "tries", "units")

    def __init__(self, number: int, units: list[Unit]) -> None:
        self.number = number
        self.units = units
        self.attempts: list[_Attempt] = []
        self.results: dict[int, BatchItem[Any]] = {}
        self.tries: dict[int, int] = {}
        self.settled = False


def _failure(index: int, key: str, message: str, code: int | None = None, raw: Any = None) -> BatchItem[Any]:
    return BatchItem(index, False, None, key or None, [ErrorDetail(code, message)], raw)


def _retryable(item: BatchItem[Any]) -> bool:
    if item.success:
        return False
    return any(e.code in RETRYABLE_CODES or e.message == _NO_RESPONSE for e in item.errors)


def many_flow(
    handle: BatchModel,
    job_type: Callable[..., BatchJobBase[Any]],
    source: Source,
    sink: Callable[[BatchItem[Any]], None],
    *,
    journal: str | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    options: ManyOptions = ManyOptions(),  # noqa: B008  (a NamedTuple: immutable)
    clock: Callable[[], float] = time.monotonic,
    lean: bool = False,
    total: int | None = None,
    on_queued: Callable[[str], None] | None = None,
) -> Flow[int]:
    """Run every request of ``source`` through the batch API; ``sink`` gets one item per request, in input
    order (``id`` = input index). Returns the number of batches sent by this run (0 when the journal already
    had them all). Raises ``BatchTimeoutError`` naming every unfinished request id at the deadline.

    ``lean``: each successful item's ``result`` is its raw JSON (``msgspec.Raw``), for sinks that decode it
    themselves (``embed_many(as_numpy=True)``); otherwise it is typed (:mod:`.lean`: the output variant is
    decided once per reply shape). ``total``: what progress counts as all of it (default: the number of
    requests; see ``Unit.weight``). ``on_queued(request_id)`` is called for every batch this run queues."""
    check_options(options)
    # The journal's file work (open, append, fsync) is a Call: the async client does it off the event loop.
    book = (
        (yield from call(Journal, journal, handle.model_id, source.count, source.fingerprint))
        if journal is not None
        else None
    )
    run = _Run(handle, job_type, source, sink, book, options, clock)
    run.lean, run.on_progress, run.on_queued = lean, on_progress, on_queued
    run.total = source.count if total is None else total
    try:
        return (yield from run.flow())
    finally:
        if book is not None:
            book.close()


class _Run:
    """One run of :func:`many_flow`: what it has sent, polled and delivered, and its steps. :meth:`flow`
    takes them in turn until every request is delivered: fill the window, poll what is due (absorbing
    finished batches, sending failed items again), deliver settled slots from the front, report progress,
    and sleep until the next poll is due."""

    def __init__(
        self,
        handle: BatchModel,
        job_type: Callable[..., BatchJobBase[Any]],
        source: Source,
        sink: Callable[[BatchItem[Any]], None],
        book: Journal | None,
        opts: ManyOptions,
        clock: Callable[[], float],
    ) -> None:
        self.handle = handle
        self.model = handle.model_id
        self.job_type = job_type
        self.source = source
        self.sink = sink
        self.book = book
        self.opts = opts
        self.clock = clock
        self.lean = False
        self.total = source.count
        self.on_progress: Callable[[BatchProgress], None] | None = None
        self.on_queued: Callable[[str], None] | None = None
        self.types = result_types(handle.decoder)
        self.started = clock()
        self.deadline = self.started + opts.timeout
        self.real_deadline = time.monotonic() + opts.timeout  # polls are bounded in real time too
        self.skew = 0.0  # time the driver's sleeps were asked for but the clock did not show (a test's sleep)
        self.known, self.retries_of = _journal_batches(book)
        self.next_number = book.next_number if book is not None else 0
        self.units = iter(source)
        self.ahead: Unit | None = next(self.units, None)
        self.slots: deque[_Slot] = deque()
        self.delivered = 0
        self.done_weight = 0
        self.sent = 0
        self.attempts_total = 0
        self.attempts_done = 0

    def now(self) -> float:
        return self.clock() + self.skew

    # ------------------------------------------------------------------ the loop

    def flow(self) -> Flow[int]:
        while True:
            yield from self.fill_window()
            t0 = self.now()
            polled = yield from self.poll_due(t0)
            self.deliver()
            if polled:
                self.report()
            if not self.slots and self.ahead is None:
                if self.book is not None:
                    yield from call(self.book.finish)
                return self.sent
            yield from self.wait(t0)

    def fill_window(self) -> Flow[None]:
        """Take slots until ``max_in_flight`` are out: a batch the journal knows is polled, a new one sent."""
        while self.ahead is not None and len(self.slots) < self.opts.max_in_flight:
            slot, first = self.take_slot()
            self.slots.append(slot)
            if first is not None:
                self.resume(slot, first)
            else:
                yield from self.submit(slot, slot.units, None)

    def poll_due(self, t0: float) -> Flow[bool]:
        """Poll every batch whose time has come, in order; a slot whose batches are all in sends its failed
        items again, or settles. Whether anything was polled."""
        polled = False
        for slot in list(self.slots):
            for attempt in slot.attempts:
                if attempt.job is None or attempt.next_poll > self.now():
                    continue
                polled = True
                found = yield from self.poll(attempt)
                if found is not None or attempt.state == "failed":
                    self.absorb(slot, attempt, found)
                    self.attempts_done += 1
                else:
                    attempt.next_poll = t0 + attempt.interval
                    attempt.interval = min(self.opts.max_interval, max(attempt.interval * 1.5, 0.05))
            if not slot.settled and all(a.job is None for a in slot.attempts):
                again = self.settle(slot)
                if again:
                    for u in again:
                        slot.tries[u.pos] = slot.tries.get(u.pos, 0) + 1
                    yield from self.submit(slot, again, slot.number)
        return polled

    def deliver(self) -> None:
        """Settled slots from the front go to the sink, in input order."""
        slots = self.slots
        sink = self.sink
        while slots and slots[0].settled:
            slot = slots.popleft()
            results = slot.results
            for u in slot.units:
                sink(results[u[0]])
            self.done_weight += sum(map(_WEIGHT, slot.units))
            self.delivered += len(slot.units)

    def report(self) -> None:
        if self.on_progress is None:
            return
        resolved = self.done_weight + sum(u.weight for s in self.slots if s.settled for u in s.units)
        states = {a.job.request_id: a.state for s in self.slots for a in s.attempts if a.job is not None}
        progress = BatchProgress(
            resolved, self.total, self.attempts_done, self.attempts_total, self.now() - self.started, states
        )
        self.on_progress(progress)

    def wait(self, t0: float) -> Flow[None]:
        """Sleep until the next poll is due (none when a slot settled or a retry went out); the deadline."""
        polls = [a.next_poll for s in self.slots for a in s.attempts if a.job is not None]
        if not polls:
            return
        now = self.now()
        if now >= self.deadline:
            raise self.timed_out()
        pause = min(max(0.0, min(polls) - t0), self.deadline - now)
        if pause > 0:
            yield Sleep(pause)
            behind = t0 + pause - self.now()
            if behind > 0:
                self.skew += behind

    # ------------------------------------------------------------------ the steps

    def take_slot(self) -> tuple[_Slot, JournalBatch | None]:
        """The next run of requests: a batch the journal knows, or a new one cut under the limits."""
        ahead = self.ahead
        assert ahead is not None
        jb = self.known.get(ahead.pos)
        got: list[Unit] = []
        if jb is not None:
            want = sum(e - s for s, e in jb.ranges)
            while ahead is not None and len(got) < want:
                got.append(ahead)
                ahead = next(self.units, None)
            self.ahead = ahead
            return _Slot(jb.number, got), jb
        size = _OPEN + _CLOSE - 1  # each body adds its length and a comma (none before the first)
        limit, most, known, units = self.opts.max_bytes, self.opts.batch_size, self.known, self.units
        while ahead is not None and len(got) < most:
            size += len(ahead.body) + 1
            if got and (size >= limit or ahead.pos in known):
                break
            got.append(ahead)
            ahead = next(units, None)
        self.ahead = ahead
        return _Slot(-1, got), None

    def resume(self, slot: _Slot, first: JournalBatch) -> None:
        """Batches a journal knows for this slot (its first and its retries): polled, never sent again."""
        now = self.now()
        for known_batch in [first, *self.retries_of.get(first.number, [])]:
            wanted = set(known_batch.indexes())
            batch = [u for u in slot.units if u.pos in wanted]
            if known_batch is not first:
                for u in batch:
                    slot.tries[u.pos] = slot.tries.get(u.pos, 0) + 1
            job = self.job_type(self.handle, known_batch.request_id, size=len(batch))
            slot.attempts.append(_Attempt(known_batch.number, batch, job, now, self.opts.poll_interval))
            self.attempts_total += 1

    def submit(self, slot: _Slot, batch: list[Unit], parent: int | None) -> Flow[None]:
        """Send ``batch`` for ``slot`` (``parent``: the slot's number, for a retry), journaled before and after."""
        number = self.next_number
        self.next_number += 1
        if parent is None:
            slot.number = number
        if self.book is not None:
            yield from call(self.book.intent, number, ranges_of(u.pos for u in batch), parent)
        body = b'{"requests":[' + b",".join(u.body for u in batch) + b"]}"
        try:
            job = yield from submit_flow(self.handle, self.job_type, body, len(batch), None, self.opts.max_bytes)
        except Exception as exc:
            queued = self.unfinished_ids()
            if not queued:
                raise
            resume = "; run again with the same journal to resume" if self.book is not None else ""
            raise BatchError(
                f"{self.model}: submitting a batch of {len(batch)} requests failed ({exc}); batches already "
                f"queued: {', '.join(queued)}{resume}",
                request_id=queued[0],
            ) from exc
        if self.book is not None:
            yield from call(self.book.submitted, number, job.request_id)
        if self.on_queued is not None:
            self.on_queued(job.request_id)
        self.sent += 1
        self.attempts_total += 1
        slot.attempts.append(_Attempt(number, batch, job, self.now(), self.opts.poll_interval))

    def poll(self, attempt: _Attempt) -> Flow[list[BatchItem[Any]] | None]:
        """One poll: the batch's items once it is done (raw results when ``lean``, else typed), None while
        pending or when it failed whole. A poll timing out at the run's deadline is the run's timeout."""
        job = attempt.job
        assert job is not None
        try:
            reply = yield from job._poll_flow(self.real_deadline)  # pyright: ignore[reportPrivateUsage]
        except APITimeoutError:
            if time.monotonic() < self.real_deadline:
                raise
            raise self.timed_out() from None
        got = read_lean(job, reply, None if self.lean else self.types)
        attempt.state = got.state
        return got.items

    def absorb(self, slot: _Slot, attempt: _Attempt, found: list[BatchItem[Any]] | None) -> None:
        """A finished batch's items into the slot (the raw reply is let go here); None: it failed whole."""
        job = attempt.job
        assert job is not None
        if found is None:  # the batch failed as a whole: each of its items gets another try
            message = f"batch {job.request_id} failed as a whole"
            raw = job.last_status.raw if job.last_status is not None else None
            for u in attempt.units:
                slot.results[u.pos] = _failure(u.pos, u.key, message, 3043, raw)
        else:
            units = attempt.units
            results = slot.results
            count = len(units)
            seen: set[int] = set()
            for item in found:
                item_id = item.id
                if not 0 <= item_id < count or item_id in seen:
                    continue
                seen.add(item_id)
                u = units[item_id]
                ref = item.external_reference
                if u.key and ref is not None and ref != u.key:
                    results[u.pos] = _misplaced(u, item, job.request_id)
                    continue
                # The item is this poll's own (read_lean made it): it becomes the outcome in place.
                item.id = u.pos
                item.external_reference = u.key or None
                if item.success:
                    item.raw = None  # a success keeps no raw JSON (a failure keeps it, to be read)
                results[u.pos] = item
        attempt.job = None  # the reply (and its raw items) goes now
        attempt.state = "done"

    def settle(self, slot: _Slot) -> list[Unit]:
        """The requests of a slot to send again; marks it settled when there are none."""
        again: list[Unit] = []
        results = slot.results
        for u in slot.units:
            item = results.get(u.pos)
            if item is None:
                results[u.pos] = item = _failure(u.pos, u.key, _NO_RESPONSE)
            elif item.success:
                continue
            if _retryable(item) and slot.tries.get(u.pos, 0) < self.opts.item_retries:
                again.append(u)
        if not again:
            slot.settled = True
        return again

    def unfinished_ids(self) -> list[str]:
        return [a.job.request_id for s in self.slots for a in s.attempts if a.job is not None]

    def timed_out(self) -> BatchTimeoutError:
        return _timeout(self.model, self.opts.timeout, self.unfinished_ids(), self.source.count - self.delivered)


def _journal_batches(book: Journal | None) -> tuple[dict[int, JournalBatch], dict[int, list[JournalBatch]]]:
    """What a journal knows: first batches (by first index) and retry batches (by parent), with request ids."""
    known: dict[int, JournalBatch] = {}
    retries_of: dict[int, list[JournalBatch]] = {}
    if book is not None:
        for jb in sorted(book.batches.values(), key=lambda b: b.number):
            if jb.request_id is None:
                continue  # in flight when the writer stopped: its requests are sent again
            if jb.parent is None:
                known[jb.ranges[0][0]] = jb
            else:
                retries_of.setdefault(jb.parent, []).append(jb)
    return known, retries_of


def _misplaced(u: Unit, item: BatchItem[Any], request_id: str) -> BatchItem[Any]:
    """The outcome of request ``u`` when its reply's item carries another key than the one sent."""
    return _failure(
        u.pos,
        u.key,
        f"the reply's external_reference {item.external_reference!r} is not the one sent "
        f"({u.key!r}) for item {item.id} of batch {request_id}",
        raw=item.raw,
    )


def _timeout(model: str, timeout: float, ids: list[str], undelivered: int) -> BatchTimeoutError:
    shown = ", ".join(ids)
    return BatchTimeoutError(
        f"{model}: {len(ids)} batches unfinished after {timeout:g}s: {shown} ({undelivered} requests without a "
        "result); run again with the same journal to resume them, or poll each with batch_job(model, request_id)",
        request_id=ids[0] if ids else "",
        state="queued",
    )
