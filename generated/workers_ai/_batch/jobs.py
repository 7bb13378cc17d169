"""The async batch API: queue many requests at once (``?queueRequest=true``), then poll by request id.

Wire protocol: POST ``{"requests": [...]}`` to the model's run URL with ``?queueRequest=true``; the
reply holds ``{"status": "queued", "request_id": ...}``. Polling POSTs ``{"request_id": ...}`` to the
same URL until the status is no longer ``queued``/``running``; the finished reply holds
``{"responses": [{"id", "success", "result", "external_reference"}, ...], "usage": {...}}`` where
``id`` is the request's index and the order is not guaranteed.

Submitting is never blindly repeated: a batch is re-sent only when the server surely did not take it
(the connection could not be opened, or the reply was 429 or 503). After a read timeout, a dropped
connection, 500, 502 or 504 it may already be queued, so the error is raised instead of risking a
duplicate batch (the rule lives in ``Session.request(queued=True)``). Polling is a read and is
retried like any other call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import msgspec

from .._core.config import run_url
from .._core.error_replies import code_of, error_details
from .._core.flow import Flow, Sleep, T
from .._core.jsonview import as_list, as_object
from .._core.requests import Reply, request_flow
from .._core.retry import check_seconds
from .._core.telemetry import batch_log, telemetry_of
from .._core.usage import usage_from
from .._error_base import WorkersAIWarning
from ..errors import (
    APITimeoutError,
    BatchError,
    BatchTimeoutError,
    ConfigurationError,
    ErrorDetail,
    ResponseDecodeError,
)
from .wire import (
    MAX_BATCH_BYTES,
    PENDING,
    BatchItem,
    BatchModel,
    BatchRequest,
    BatchResult,
    BatchStatus,
    encode_requests,
    failure_text,
    missing_item,
    result_object,
)

# The wire names are re-exported: the jobs are what the rest of the runtime imports from here.
__all__ = [
    "MAX_BATCH_BYTES",
    "AsyncBatchJob",
    "AsyncBatchTarget",
    "BatchItem",
    "BatchJob",
    "BatchJobBase",
    "BatchModel",
    "BatchRequest",
    "BatchResult",
    "BatchStatus",
    "BatchStatusWarning",
    "BatchTarget",
    "PollSchedule",
    "check_poll_options",
    "encode_requests",
]


if TYPE_CHECKING:
    from .._aio.session import AsyncSession
    from .._core.telemetry import Call
    from .._sync.session import Session

T_co = TypeVar("T_co", covariant=True)
OutT = TypeVar("OutT", covariant=True)  # a job of EmbeddingOutput is a job of the model's output union


class BatchTarget(BatchModel, Protocol):
    """A model handle of the sync client (its session runs flows with blocking I/O)."""

    @property
    def client(self) -> Session: ...


class AsyncBatchTarget(BatchModel, Protocol):
    """A model handle of the async client (its session runs flows with awaited I/O)."""

    @property
    def client(self) -> AsyncSession: ...


class BatchStatusWarning(WorkersAIWarning):
    """The API reported a batch status this SDK does not know; ``wait()`` keeps polling."""


def check_poll_options(timeout: float, poll_interval: float, max_interval: float) -> None:
    """A wait's options (``wait``, ``batch_many``, ``embed_many``): a timeout above 0, intervals >= 0, all
    finite numbers; else ``ConfigurationError``."""
    check_seconds(timeout, "timeout")
    for name, value in (("poll_interval", poll_interval), ("max_interval", max_interval)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


class PollSchedule:
    """The waits between polls of one or more batches, until a deadline.

    The first wait is ``poll_interval`` seconds and each next one is 1.5 times longer (at least 0.05 s),
    up to ``max_interval``; the last wait is cut to end at the deadline, where one more poll is made.
    """

    def __init__(
        self, timeout: float, poll_interval: float, max_interval: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        check_poll_options(timeout, poll_interval, max_interval)
        self.clock = clock
        self.started = clock()
        self.deadline = self.started + timeout
        self._interval = poll_interval
        self._max = max_interval

    def next_wait(self, now: float) -> float | None:
        """Seconds to sleep before the next poll, or None once ``now`` is at or past the deadline."""
        remaining = self.deadline - now
        if remaining <= 0:
            return None
        wait = min(self._interval, remaining)
        self._interval = min(self._max, max(self._interval * 1.5, 0.05))
        return wait


class BatchJobBase(Generic[OutT]):
    """A queued batch. ``request_id`` (with the model id) is all it takes to rebuild it, in any process:
    ``ai.batch_job(model_id, request_id)``.

    ``submitted_at`` (seconds since the epoch) and ``size`` are known only for jobs submitted by this
    object's process; a rebuilt job has None for both.
    """

    def __init__(
        self,
        handle: BatchModel,
        request_id: str,
        *,
        submitted_at: float | None = None,
        size: int | None = None,
    ) -> None:
        if not isinstance(request_id, str) or not request_id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("a batch job needs a non-empty request_id")
        self.handle = handle
        self.request_id = request_id
        self.model = handle.model_id
        self.submitted_at = submitted_at
        self.size = size
        self.last_status: BatchStatus | None = None
        self._result: BatchResult[OutT] | None = None
        self._clock: Callable[[], float] = time.monotonic
        self._call: Call | None = None  # the batch_wait span while wait() runs (state changes become events)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, request_id={self.request_id!r})"

    @property
    def result(self) -> BatchResult[OutT] | None:
        """The results once a poll has seen the job finish, else None."""
        return self._result

    def read_status(self, reply: Reply) -> BatchStatus:
        """Read a status reply (see ``status``): the state, and the results once the job is done."""
        data = result_object(self.handle.client, reply, self.model, "batch status")
        before = self.last_status.state if self.last_status is not None else "queued"
        if "responses" in data:
            counted = self._result is not None
            self._result = self._decode_result(data)
            if not counted:  # ``ai.usage``: the batch as one call, its requests as items
                info = getattr(self.handle, "info", None)
                price = getattr(info, "price", ())
                self.handle.client.usage.record(self.model, self._result.usage, price, items=len(self._result.items))
            state = data.get("status")
            state = state if isinstance(state, str) and state and state not in PENDING else "done"
        else:
            raw_state = data.get("status")
            state = raw_state if isinstance(raw_state, str) and raw_state else "unknown"
        model = data.get("model")
        st = BatchStatus(state, self.request_id, model if isinstance(model, str) else self.model, data)
        self.last_status = st
        if state != before:
            batch_log.info("batch %s for %s: %s -> %s", self.request_id, self.model, before, state)
            call = self._call
            if call is not None and call.recording:
                call.span.add_event("workers_ai.batch.status", {"workers_ai.batch.state": state})
        return st

    def _poll_timed_out(self, timeout: float) -> BatchTimeoutError:
        last = self.last_status.state if self.last_status is not None else "queued"
        return BatchTimeoutError(
            f"batch {self.request_id} for {self.model}: no answer to the last poll within the "
            f"timeout ({timeout:g}s); resume it later with batch_job({self.model!r}, {self.request_id!r})",
            request_id=self.request_id,
            state=last,
        )

    def _after_poll(
        self,
        st: BatchStatus,
        schedule: PollSchedule,
        timeout: float,
        warned: set[str],
        on_progress: Callable[[BatchStatus, float], None] | None,
    ) -> tuple[BatchResult[OutT] | None, float]:
        """After one poll: the results when they are in, else the seconds to wait before the next poll;
        raises when the job failed, is done without results, or the deadline passed."""
        now = schedule.clock()
        if on_progress is not None:
            on_progress(st, now - schedule.started)
        if self._result is not None:
            return self._result, 0.0
        if st.state == "failed":
            raise BatchError(
                f"batch {self.request_id} for {self.model} failed{failure_text(st.raw)}",
                request_id=self.request_id,
                state=st.state,
            )
        if st.state == "done":
            raise ResponseDecodeError(
                f"{self.model}: batch {self.request_id} is reported done but the reply has no responses",
                model_id=self.model,
            )
        if not st.known and st.state not in warned:
            warned.add(st.state)
            from .._core.warn import warn_user

            warn_user(  # at the caller of wait()
                f"batch {self.request_id} for {self.model}: unknown status {st.state!r}; still polling",
                BatchStatusWarning,
            )
        wait = schedule.next_wait(now)
        if wait is None:
            raise BatchTimeoutError(
                f"batch {self.request_id} for {self.model} is still {st.state} after "
                f"{now - schedule.started:.1f}s (timeout {timeout:g}s); resume it later with "
                f"batch_job({self.model!r}, {self.request_id!r})",
                request_id=self.request_id,
                state=st.state,
            )
        return None, wait

    # ------------------------------------------------------------------ flows (run by the client's driver)

    def _poll_flow(self, deadline: float | None = None) -> Flow[Reply]:
        """One status request (POST ``{"request_id": ...}`` with ``?queueRequest=true``), the reply unread."""
        client = self.handle.client
        body = msgspec.json.encode({"request_id": self.request_id})
        url = run_url(client, self.model) + "?queueRequest=true"
        return (yield from request_flow(client, "POST", url, body, model_id=self.model, deadline=deadline))

    def _status_flow(self, deadline: float | None = None) -> Flow[BatchStatus]:
        """Poll once and read the status (the results are kept once the job is done)."""
        return self.read_status((yield from self._poll_flow(deadline)))

    def _wait_flow(
        self,
        timeout: float,
        poll_interval: float,
        max_interval: float,
        on_progress: Callable[[BatchStatus, float], None] | None,
    ) -> Flow[BatchResult[OutT]]:
        """Poll until the job is done (see ``BatchJob.wait``)."""
        if self._result is not None:
            return self._result
        flow = self._polls_flow(timeout, poll_interval, max_interval, on_progress)
        client = self.handle.client
        tel = telemetry_of(client)
        if tel is None:
            return (yield from flow)
        call = tel.start(
            "batch_wait",
            self.model,
            run_url(client, self.model),
            extra={"workers_ai.batch.request_id": self.request_id},
        )
        self._call = call
        try:
            return (yield from tel.traced(call, flow, lambda r: {"workers_ai.batch.items": len(r.items)}))
        finally:
            self._call = None

    def _polls_flow(
        self,
        timeout: float,
        poll_interval: float,
        max_interval: float,
        on_progress: Callable[[BatchStatus, float], None] | None,
    ) -> Flow[BatchResult[OutT]]:
        schedule = PollSchedule(timeout, poll_interval, max_interval, self._clock)
        # Polls are bounded in real time too (the schedule's clock may be a test's): none outlives the call.
        deadline = time.monotonic() + timeout
        warned: set[str] = set()
        while True:
            try:
                st = yield from self._status_flow(deadline)
            except APITimeoutError:
                if time.monotonic() < deadline:
                    raise
                raise self._poll_timed_out(timeout) from None
            result, wait = self._after_poll(st, schedule, timeout, warned, on_progress)
            if result is not None:
                return result
            yield Sleep(wait)

    # ------------------------------------------------------------------ results

    def _decode_result(self, data: Mapping[str, Any]) -> BatchResult[OutT]:
        responses = data.get("responses")
        entries = as_list(responses) or []
        by_id: dict[int, BatchItem[OutT]] = {}
        unmatched: list[Any] = []
        for pos, raw in enumerate(entries):
            entry = as_object(raw)
            if entry is None:
                unmatched.append(raw)
                continue
            item_id = code_of(entry.get("id")) if "id" in entry else pos
            if item_id is None or item_id in by_id or (self.size is not None and not 0 <= item_id < self.size):
                unmatched.append(raw)
                continue
            by_id[item_id] = self._decode_item(item_id, entry)
        if self.size is not None:
            items = [by_id.get(i) or missing_item(i) for i in range(self.size)]
        else:
            items = [by_id[i] for i in sorted(by_id)]
        return BatchResult(items, usage_from(data.get("usage")), self.request_id, unmatched)

    def _decode_item(self, item_id: int, entry: dict[str, Any]) -> BatchItem[OutT]:
        ref = entry.get("external_reference")
        ref = ref if isinstance(ref, str) else None
        value: Any = entry.get("result")
        nested = as_object(value)
        if nested is not None and len(nested) == 1 and "result" in nested:
            value = nested["result"]  # some batch replies nest each result once more
        errors = error_details(entry) or []
        success = entry.get("success")
        ok = success is not False and not errors and (success is True or value is not None)
        if not ok:
            if not errors:
                errors = error_details(value) or [ErrorDetail(None, "the request failed without an error message")]
            return BatchItem(item_id, False, None, ref, errors, entry)
        try:
            decoded: OutT = self.handle.decoder.decode(value, self.model)
        except ResponseDecodeError as exc:
            return BatchItem(item_id, False, None, ref, [ErrorDetail(None, str(exc))], entry)
        return BatchItem(item_id, True, decoded, ref, [], entry)


class BatchJob(BatchJobBase[OutT]):
    """A queued batch. ``request_id`` (with the model id) is all it takes to rebuild it, in any process:
    ``ai.batch_job(model_id, request_id)``.
    """

    handle: BatchTarget

    def status(self, *, deadline: float | None = None) -> BatchStatus:
        """Poll once: POST ``{"request_id": ...}``. When the job is done the results are kept (see :attr:`result`).

        ``deadline`` (``time.monotonic()``) bounds the poll, its retries included.
        """
        return self._drive(self._status_flow(deadline))

    def poll(self, *, deadline: float | None = None) -> Reply:
        """Send one status request and return the reply unread (:meth:`read_status` reads it)."""
        return self._drive(self._poll_flow(deadline))

    def wait(
        self,
        timeout: float = 600.0,
        poll_interval: float = 1.0,
        *,
        max_interval: float = 15.0,
        on_progress: Callable[[BatchStatus, float], None] | None = None,
    ) -> BatchResult[OutT]:
        """Poll until the job is done and return its results.

        The first wait is ``poll_interval`` seconds and each next one is 1.5 times longer, up to
        ``max_interval``; the last wait is cut to end at the deadline, where one more poll is made.
        ``on_progress(status, elapsed_seconds)`` is called after every poll.

        Raises :class:`~workers_ai.errors.BatchTimeoutError` (naming the request id, so the job can be
        resumed with ``batch_job``) when the deadline passes, and :class:`~workers_ai.errors.BatchError`
        when the job failed as a whole. A status this SDK does not know is reported with a
        :class:`BatchStatusWarning` (once per status) and polling goes on.
        """
        return self._drive(self._wait_flow(timeout, poll_interval, max_interval, on_progress))

    def _drive(self, flow: Flow[T]) -> T:
        return self.handle.client._drive(flow)  # pyright: ignore[reportPrivateUsage]


class AsyncBatchJob(BatchJobBase[OutT]):
    """A queued batch polled with ``await job.status()`` / ``await job.wait()`` (see :class:`BatchJob`)."""

    # generated from _batch/jobs.py:BatchJob by codegen.twins, to the end of the class
    handle: AsyncBatchTarget

    async def status(self, *, deadline: float | None = None) -> BatchStatus:
        """Poll once: POST ``{"request_id": ...}``. When the job is done the results are kept (see :attr:`result`)."""
        return await self._drive(self._status_flow(deadline))

    async def poll(self, *, deadline: float | None = None) -> Reply:
        """Send one status request and return the reply unread (:meth:`read_status` reads it)."""
        return await self._drive(self._poll_flow(deadline))

    async def wait(
        self,
        timeout: float = 600.0,
        poll_interval: float = 1.0,
        *,
        max_interval: float = 15.0,
        on_progress: Callable[[BatchStatus, float], None] | None = None,
    ) -> BatchResult[OutT]:
        """Poll until the job is done and return its results."""
        return await self._drive(self._wait_flow(timeout, poll_interval, max_interval, on_progress))

    async def _drive(self, flow: Flow[T]) -> T:
        return await self.handle.client._drive(flow)  # pyright: ignore[reportPrivateUsage]
