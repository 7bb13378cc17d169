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
    """Requests held in memory (what ``batch_many`` gets): encoded once, here."""

    def __init__(self, units: list[Unit], fingerprint: str) -> None:
        self.units = units
        self.count = len(units)
        self.fingerprint = fingerprint

    def __iter__(self) -> Iterator[Unit]:
        return iter(self.units)


def encode_unit(
    handle: BatchModel, item: Any, index: int, kinds: tuple[type[Any], ...], max_bytes: int, where: str = ""
) -> Unit:
    """Validate and encode one request, keyed by its ``external_reference`` (the caller's) or its index.
    ``kinds=()`` skips the check (a mapping already checked once encodes to the same bytes)."""
    where = where or f"$.requests[{index}]"
    data = (
        request_data(handle, item, where, kinds)
        if kinds or not isinstance(item, dict)
        else dict(cast("dict[str, Any]", item))
    )
    ref = data.get("external_reference")
    key = ref if isinstance(ref, str) else str(index)
    data["external_reference"] = key
    try:
        body = msgspec.json.encode(data)
    except (TypeError, UnicodeEncodeError) as exc:
        raise InputValidationError(handle.model_id, where, f"not JSON-serialisable: {exc}") from None
    if len(body) + _OPEN + _CLOSE >= max_bytes:
        raise InputValidationError(
            handle.model_id,
            where,
            f"this request alone is {len(body):,} bytes encoded; a batch must be under {max_bytes:,}",
        )
    return Unit(index, key, body)


def prepare(handle: BatchModel, requests: Iterable[Any], max_bytes: int = MAX_BATCH_BYTES) -> ListSource:
    """Every request validated and encoded (nothing is sent when one is bad: the error names it)."""
    if isinstance(requests, (str, bytes, dict)):
        raise InputValidationError(handle.model_id, "$.requests", "expected a list of requests")
    require_batch(handle)
    kinds = batch_item_types(handle)
    fp = Fingerprint(handle.model_id)
    units: list[Unit] = []
    for i, item in enumerate(requests):
        unit = encode_unit(handle, item, i, kinds, max_bytes)
        fp.add(unit.body)
        units.append(unit)
    return ListSource(units, fp.hexdigest())


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

    ``lean``: status replies are read with :func:`.f32.read_lean` and each successful item's ``result`` is
    its raw JSON (``msgspec.Raw``), for sinks that decode it themselves (``embed_many(as_numpy=True)``).
    ``total``: what progress counts as all of it (default: the number of requests; see ``Unit.weight``).
    ``on_queued(request_id)`` is called for every batch this run queues."""
    opts = options
    check_options(opts)
    model = handle.model_id
    started = clock()
    deadline = started + opts.timeout
    real_deadline = time.monotonic() + opts.timeout
    # The journal's file work (open, append, fsync) is a Call: the async client does it off the event loop.
    book = (yield from call(Journal, journal, model, source.count, source.fingerprint)) if journal is not None else None
    try:
        return (
            yield from _run(
                handle, job_type, source, sink, book, on_progress, opts, clock, (started, deadline, real_deadline),
                lean, source.count if total is None else total, on_queued,
            )
        )  # fmt: skip
    finally:
        if book is not None:
            book.close()


def _run(
    handle: BatchModel,
    job_type: Callable[..., BatchJobBase[Any]],
    source: Source,
    sink: Callable[[BatchItem[Any]], None],
    book: Journal | None,
    on_progress: Callable[[BatchProgress], None] | None,
    opts: ManyOptions,
    clock: Callable[[], float],
    times: tuple[float, float, float],
    lean: bool,
    total: int,
    on_queued: Callable[[str], None] | None,
) -> Flow[int]:
    model = handle.model_id
    started, deadline, real_deadline = times
    skew = [0.0]  # time the driver's sleeps were asked for but the clock did not show (a test's sleep)

    def now_() -> float:
        return clock() + skew[0]

    # What the journal knows: first batches (by first index) and retry batches (by parent), with request ids.
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
    next_number = book.next_number if book is not None else 0
    units = iter(source)
    ahead: Unit | None = next(units, None)
    slots: deque[_Slot] = deque()
    delivered = 0
    done_weight = 0
    sent = 0
    attempts_total = 0
    attempts_done = 0

    def take_slot() -> tuple[_Slot, JournalBatch | None]:
        """The next run of requests: a batch the journal knows, or a new one cut under the limits."""
        nonlocal ahead
        assert ahead is not None
        jb = known.get(ahead.pos)
        if jb is not None:
            want = sum(e - s for s, e in jb.ranges)
            got: list[Unit] = []
            while ahead is not None and len(got) < want:
                got.append(ahead)
                ahead = next(units, None)
            return _Slot(jb.number, got), jb
        got = []
        size = _OPEN + _CLOSE
        while ahead is not None and len(got) < opts.batch_size:
            if got and (size + len(ahead.body) + 1 >= opts.max_bytes or ahead.pos in known):
                break
            got.append(ahead)
            size += len(ahead.body) + (1 if len(got) > 1 else 0)
            ahead = next(units, None)
        return _Slot(-1, got), None

    def submit(slot: _Slot, batch: list[Unit], parent: int | None) -> Flow[None]:
        nonlocal next_number, sent, attempts_total
        number = next_number
        next_number += 1
        if parent is None:
            slot.number = number
        if book is not None:
            yield from call(book.intent, number, ranges_of(u.pos for u in batch), parent)
        body = b'{"requests":[' + b",".join(u.body for u in batch) + b"]}"
        try:
            job = yield from submit_flow(handle, job_type, body, len(batch), None, opts.max_bytes)
        except Exception as exc:
            queued = [a.job.request_id for s in slots for a in s.attempts if a.job is not None]
            if not queued:
                raise
            raise BatchError(
                f"{model}: submitting a batch of {len(batch)} requests failed ({exc}); batches already queued: "
                f"{', '.join(queued)}" + ("; run again with the same journal to resume" if book is not None else ""),
                request_id=queued[0],
            ) from exc
        if book is not None:
            yield from call(book.submitted, number, job.request_id)
        if on_queued is not None:
            on_queued(job.request_id)
        sent += 1
        attempts_total += 1
        slot.attempts.append(_Attempt(number, batch, job, now_(), opts.poll_interval))

    def absorb(slot: _Slot, attempt: _Attempt, found: list[BatchItem[Any]] | None) -> None:
        """A finished batch's items into the slot (the raw reply is let go here); None: it failed whole."""
        job = attempt.job
        assert job is not None
        if found is None:  # the batch failed as a whole: each of its items gets another try
            message = f"batch {job.request_id} failed as a whole"
            raw = job.last_status.raw if job.last_status is not None else None
            for u in attempt.units:
                slot.results[u.pos] = _failure(u.pos, u.key, message, 3043, raw)
        else:
            seen: set[int] = set()
            for item in found:
                if not 0 <= item.id < len(attempt.units) or item.id in seen:
                    continue
                seen.add(item.id)
                u = attempt.units[item.id]
                out: BatchItem[Any]
                if u.key and item.external_reference is not None and item.external_reference != u.key:
                    out = _failure(
                        u.pos,
                        u.key,
                        f"the reply's external_reference {item.external_reference!r} is not the one sent "
                        f"({u.key!r}) for item {item.id} of batch {job.request_id}",
                        raw=item.raw,
                    )
                elif item.success:
                    out = BatchItem(u.pos, True, item.result, u.key or None)
                else:
                    out = BatchItem(u.pos, False, None, u.key or None, item.errors, item.raw)
                slot.results[u.pos] = out
        attempt.job = None  # the reply (and its raw items) goes now
        attempt.state = "done"

    def poll(attempt: _Attempt) -> Flow[list[BatchItem[Any]] | None]:
        """One poll: the batch's items once it is done, None while pending or when it failed whole."""
        job = attempt.job
        assert job is not None
        if lean:
            from .f32 import read_lean

            got = read_lean(job, (yield from job._poll_flow(real_deadline)))  # pyright: ignore[reportPrivateUsage]
            attempt.state = got.state
            if got.items is None:
                return None
            return [
                BatchItem(i, raw is not None, raw, None, [] if raw is not None else [ErrorDetail(None, message)])
                for i, raw, message in got.items
            ]
        st = yield from job._status_flow(real_deadline)  # pyright: ignore[reportPrivateUsage]
        attempt.state = st.state
        result = job.result
        return None if result is None else result.items

    def settle(slot: _Slot) -> list[Unit]:
        """The requests of a slot to send again; marks it settled when there are none."""
        again: list[Unit] = []
        for u in slot.units:
            item = slot.results.get(u.pos)
            if item is None:
                slot.results[u.pos] = item = _failure(u.pos, u.key, _NO_RESPONSE)
            if _retryable(item) and slot.tries.get(u.pos, 0) < opts.item_retries:
                again.append(u)
        if not again:
            slot.settled = True
        return again

    def unfinished_ids() -> list[str]:
        return [a.job.request_id for s in slots for a in s.attempts if a.job is not None]

    while True:
        # Fill the window: known batches are polled, new ones are sent (journal first).
        while ahead is not None and len(slots) < opts.max_in_flight:
            slot, first = take_slot()
            slots.append(slot)
            if first is not None:
                now = now_()
                for known_batch in [first, *retries_of.get(first.number, [])]:
                    wanted = set(known_batch.indexes())
                    batch = [u for u in slot.units if u.pos in wanted]
                    if known_batch is not first:
                        for u in batch:
                            slot.tries[u.pos] = slot.tries.get(u.pos, 0) + 1
                    job = job_type(handle, known_batch.request_id, size=len(batch))
                    slot.attempts.append(_Attempt(known_batch.number, batch, job, now, opts.poll_interval))
                    attempts_total += 1
            else:
                yield from submit(slot, slot.units, None)
        # Poll every batch whose time has come, in order.
        polled = False
        t0 = now_()
        for slot in list(slots):
            for attempt in slot.attempts:
                if attempt.job is None or attempt.next_poll > now_():
                    continue
                polled = True
                try:
                    found = yield from poll(attempt)
                except APITimeoutError:
                    if time.monotonic() < real_deadline:
                        raise
                    raise _timeout(model, opts.timeout, unfinished_ids(), source.count - delivered) from None
                if found is not None or attempt.state == "failed":
                    absorb(slot, attempt, found)
                    attempts_done += 1
                else:
                    attempt.next_poll = t0 + attempt.interval
                    attempt.interval = min(opts.max_interval, max(attempt.interval * 1.5, 0.05))
            if not slot.settled and all(a.job is None for a in slot.attempts):
                again = settle(slot)
                if again:
                    for u in again:
                        slot.tries[u.pos] = slot.tries.get(u.pos, 0) + 1
                    yield from submit(slot, again, slot.number)
        # Deliver settled slots from the front, in input order.
        while slots and slots[0].settled:
            slot = slots.popleft()
            for u in slot.units:
                sink(slot.results[u.pos])
                done_weight += u.weight
            delivered += len(slot.units)
        resolved = done_weight + sum(u.weight for s in slots if s.settled for u in s.units)
        now = now_()
        if on_progress is not None and polled:
            states = {a.job.request_id: a.state for s in slots for a in s.attempts if a.job is not None}
            on_progress(BatchProgress(resolved, total, attempts_done, attempts_total, now - started, states))
        if not slots and ahead is None:
            if book is not None:
                yield from call(book.finish)
            return sent
        polls = [a.next_poll for s in slots for a in s.attempts if a.job is not None]
        if not polls:
            continue  # a slot settled or a retry went out: go round again
        if now >= deadline:
            raise _timeout(model, opts.timeout, unfinished_ids(), source.count - delivered)
        wait = min(max(0.0, min(polls) - t0), deadline - now)
        if wait > 0:
            yield Sleep(wait)
            behind = t0 + wait - now_()
            if behind > 0:
                skew[0] += behind


def _timeout(model: str, timeout: float, ids: list[str], undelivered: int) -> BatchTimeoutError:
    shown = ", ".join(ids)
    return BatchTimeoutError(
        f"{model}: {len(ids)} batches unfinished after {timeout:g}s: {shown} ({undelivered} requests without a "
        "result); run again with the same journal to resume them, or poll each with batch_job(model, request_id)",
        request_id=ids[0] if ids else "",
        state="queued",
    )
