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
import types
import typing
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Protocol, TypeVar, cast

import msgspec

from .._core.body import encode_body
from .._core.config import Reply, SessionConfig
from .._core.decode import OutputDecoder, split_error
from .._core.envelope import checked
from .._core.flow import Flow, Sleep
from .._core.jsonview import as_list, as_object
from .._core.retry import check_seconds
from .._core.usage import Usage, usage_from
from ..errors import (
    APITimeoutError,
    BatchError,
    BatchTimeoutError,
    ConfigurationError,
    ErrorDetail,
    InputValidationError,
    ResponseDecodeError,
    code_of,
    error_details,
    format_details,
)

__all__ = [
    "MAX_BATCH_BYTES",
    "BatchItem",
    "BatchJob",
    "BatchJobBase",
    "BatchRequest",
    "BatchResult",
    "BatchStatus",
    "BatchStatusWarning",
    "BatchModel",
    "AsyncBatchJob",
    "AsyncBatchTarget",
    "BatchTarget",
    "asubmit",
    "encode_batch",
    "submit_flow",
    "PollSchedule",
    "batch_item_types",
    "check_batch_size",
    "encode_requests",
    "strip_annotated",
    "submit",
    "submit_encoded",
    "submitted_id",
    "union_members",
]

if TYPE_CHECKING:
    from .._aio.session import AsyncSession
    from .._sync.session import Session

T_co = TypeVar("T_co", covariant=True)
OutT = TypeVar("OutT")
JobT = TypeVar("JobT", bound="BatchJobBase[Any]")

PENDING = frozenset({"queued", "running"})
KNOWN = frozenset({"queued", "running", "done", "failed"})
# "Ensure that the total payload is under 10 MB" (batch API docs); kept a little under 10 MiB on purpose.
MAX_BATCH_BYTES = 10_000_000


class BatchModel(Protocol):
    """What encoding and decoding a batch need of a model handle: its session, id, decoder and input types."""

    @property
    def client(self) -> SessionConfig: ...

    @property
    def model_id(self) -> str: ...

    decoder: ClassVar[OutputDecoder]
    batch_input: ClassVar[type[Any] | None]
    input_types: ClassVar[tuple[tuple[type[Any], tuple[str, ...]], ...]]

    def validate(self, request: msgspec.Struct) -> bytes: ...


class BatchTarget(BatchModel, Protocol):
    """A model handle of the sync client (its session runs flows with blocking I/O)."""

    @property
    def client(self) -> Session: ...


class AsyncBatchTarget(BatchModel, Protocol):
    """A model handle of the async client (its session runs flows with awaited I/O)."""

    @property
    def client(self) -> AsyncSession: ...


class BatchStatusWarning(UserWarning):
    """The API reported a batch status this SDK does not know; ``wait()`` keeps polling."""


class BatchRequest(msgspec.Struct, Generic[T_co], frozen=True):
    """One request of a batch plus the ``external_reference`` the API echoes back on its result.

    Plain request structs and mappings are accepted in a batch too; this wrapper only adds the label.
    """

    request: T_co
    external_reference: str | None = None


class BatchStatus(msgspec.Struct, frozen=True):
    """One poll's answer: ``state`` is queued, running, done or failed, or whatever new word the API used."""

    state: str
    request_id: str
    model: str | None = None
    raw: Any = None

    @property
    def pending(self) -> bool:
        """Still queued or running."""
        return self.state in PENDING

    @property
    def known(self) -> bool:
        """One of the statuses this SDK understands (queued, running, done, failed)."""
        return self.state in KNOWN


class BatchItem(msgspec.Struct, Generic[OutT]):
    """The outcome of one request; ``id`` is its index in the submitted list.

    A failed request is an item with ``success=False`` and its ``errors``, never an exception, so one
    bad request does not hide the others. ``raw`` is the item exactly as the API sent it.
    """

    id: int
    success: bool
    result: OutT | None = None
    external_reference: str | None = None
    errors: list[ErrorDetail] = []
    raw: Any = None

    @property
    def error(self) -> str | None:
        """The errors as one line, or None for a successful item."""
        if self.success:
            return None
        return format_details(self.errors) or "failed without an error message"


class BatchResult(msgspec.Struct, Generic[OutT]):
    """Every item in request order (matched by ``id``, whatever order they came in) and the batch usage.

    ``unmatched`` holds reply entries that could not be placed: no usable id, a duplicate id, or an id
    beyond the number of requests submitted from this process.
    """

    items: list[BatchItem[OutT]]
    usage: Usage | None = None
    request_id: str = ""
    unmatched: list[Any] = []

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[BatchItem[OutT]]:
        return iter(self.items)

    @property
    def ok(self) -> bool:
        """Every item succeeded and nothing was left unmatched."""
        return not self.unmatched and all(i.success for i in self.items)

    @property
    def failed(self) -> list[BatchItem[OutT]]:
        return [i for i in self.items if not i.success]

    @property
    def results(self) -> list[OutT | None]:
        """The decoded results in request order (None where a request failed)."""
        return [i.result for i in self.items]


class PollSchedule:
    """The waits between polls of one or more batches, until a deadline.

    The first wait is ``poll_interval`` seconds and each next one is 1.5 times longer (at least 0.05 s),
    up to ``max_interval``; the last wait is cut to end at the deadline, where one more poll is made.
    """

    def __init__(
        self, timeout: float, poll_interval: float, max_interval: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        check_seconds(timeout, "timeout")
        for name, value in (("poll_interval", poll_interval), ("max_interval", max_interval)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigurationError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, request_id={self.request_id!r})"

    @property
    def result(self) -> BatchResult[OutT] | None:
        """The results once a poll has seen the job finish, else None."""
        return self._result

    def read_status(self, reply: Reply) -> BatchStatus:
        """Read a status reply (see ``status``): the state, and the results once the job is done."""
        data = _result_object(self.handle.client, reply, self.model, "batch status")
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
                f"batch {self.request_id} for {self.model} failed{_failure_text(st.raw)}",
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
            warnings.warn(
                f"batch {self.request_id} for {self.model}: unknown status {st.state!r}; still polling",
                BatchStatusWarning,
                stacklevel=3,  # the caller of wait()
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

    def poll_flow(self, deadline: float | None = None) -> Flow[Reply]:
        """One status request (POST ``{"request_id": ...}`` with ``?queueRequest=true``), the reply unread."""
        client = self.handle.client
        body = msgspec.json.encode({"request_id": self.request_id})
        url = client.run_url(self.model) + "?queueRequest=true"
        return (yield from client.request_flow("POST", url, body, model_id=self.model, deadline=deadline))

    def status_flow(self, deadline: float | None = None) -> Flow[BatchStatus]:
        """Poll once and read the status (the results are kept once the job is done)."""
        return self.read_status((yield from self.poll_flow(deadline)))

    def wait_flow(
        self,
        timeout: float,
        poll_interval: float,
        max_interval: float,
        on_progress: Callable[[BatchStatus, float], None] | None,
    ) -> Flow[BatchResult[OutT]]:
        """Poll until the job is done (see ``BatchJob.wait``)."""
        schedule = PollSchedule(timeout, poll_interval, max_interval, self._clock)
        if self._result is not None:
            return self._result
        # Polls are bounded in real time too (the schedule's clock may be a test's): none outlives the call.
        deadline = time.monotonic() + timeout
        warned: set[str] = set()
        while True:
            try:
                st = yield from self.status_flow(deadline)
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
            items = [by_id.get(i) or _missing(i) for i in range(self.size)]
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
        return self.handle.client.drive(self.status_flow(deadline))

    def poll(self, *, deadline: float | None = None) -> Reply:
        """Send one status request and return the reply unread (:meth:`read_status` reads it)."""
        return self.handle.client.drive(self.poll_flow(deadline))

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
        return self.handle.client.drive(self.wait_flow(timeout, poll_interval, max_interval, on_progress))


class AsyncBatchJob(BatchJobBase[OutT]):
    """A queued batch polled with ``await job.status()`` / ``await job.wait()`` (see :class:`BatchJob`)."""

    handle: AsyncBatchTarget

    async def status(self, *, deadline: float | None = None) -> BatchStatus:
        """Poll once; when the job is done the results are kept (see :attr:`result`)."""
        return await self.handle.client.drive(self.status_flow(deadline))

    async def poll(self, *, deadline: float | None = None) -> Reply:
        """Send one status request and return the reply unread (:meth:`read_status` reads it)."""
        return await self.handle.client.drive(self.poll_flow(deadline))

    async def wait(
        self,
        timeout: float = 600.0,
        poll_interval: float = 1.0,
        *,
        max_interval: float = 15.0,
        on_progress: Callable[[BatchStatus, float], None] | None = None,
    ) -> BatchResult[OutT]:
        """Poll until the job is done and return its results (see :meth:`BatchJob.wait`)."""
        return await self.handle.client.drive(self.wait_flow(timeout, poll_interval, max_interval, on_progress))


async def asubmit(
    handle: AsyncBatchTarget,
    requests: Sequence[Any],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> AsyncBatchJob[Any]:
    """:func:`submit`, awaited."""
    body = encode_requests(handle, requests)
    flow: Flow[AsyncBatchJob[Any]] = submit_flow(handle, AsyncBatchJob[Any], body, len(requests), headers, max_bytes)
    return await handle.client.drive(flow)


def _missing(item_id: int) -> BatchItem[Any]:
    return BatchItem(
        item_id, False, None, None, [ErrorDetail(None, "the finished batch has no response for this request")]
    )


def _failure_text(raw: Any) -> str:
    details = error_details(raw)
    obj = as_object(raw)
    if not details and obj is not None and isinstance(obj.get("message"), str):
        details = [ErrorDetail(None, obj["message"])]
    return ": " + format_details(details) if details else ""


def _result_object(client: SessionConfig, reply: Reply, model: str, what: str) -> dict[str, Any]:
    """The ``result`` object of an enveloped reply (the envelope is checked by ``_envelope.checked``)."""
    env, messages = checked(reply.status, reply.headers, reply.data, model_id=model, what=f"{what} reply")
    client.remember(reply.status, reply.headers, messages)
    result = as_object(env.get("result"))
    if result is None:
        raise ResponseDecodeError(
            f"{model}: the {what} reply has no result object", status=reply.status, model_id=model, body=reply.data
        )
    return result


# ---------------------------------------------------------------------- submitting


def union_members(tp: Any) -> list[Any]:
    """The members of a (possibly Annotated) union, each still wrapped in its own Annotated."""
    base = typing.get_args(tp)[0] if typing.get_origin(tp) is Annotated else tp
    if typing.get_origin(base) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(base) for m in union_members(arg)]
    return [tp]


def strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp


_ITEM_TYPES: dict[type[Any], tuple[type[Any], ...]] = {}


def batch_item_types(handle: BatchModel) -> tuple[type[Any], ...]:
    """The struct types a request in this model's batch may have (from its ``requests`` variant).

    Falls back to the model's ordinary input variants when the handle has no ``batch_input`` type.
    """
    cls = type(handle)
    found = _ITEM_TYPES.get(cls)
    if found is None:
        batch_input: type[Any] | None = getattr(handle, "batch_input", None)
        found = ()
        if batch_input is not None:
            for field in msgspec.structs.fields(batch_input):
                if field.encode_name == "requests":
                    seq = strip_annotated(field.type)
                    args = typing.get_args(seq)
                    if args:
                        found = tuple(
                            m for m in (strip_annotated(a) for a in union_members(args[0])) if isinstance(m, type)
                        )
        if not found:
            found = tuple(c for c, _ in handle.input_types)
        _ITEM_TYPES[cls] = found
    return found


def _check_item(handle: BatchModel, data: Mapping[str, Any], kinds: Sequence[type[Any]], where: str) -> None:
    """Raise when ``data`` fits none of ``kinds``; the error shown is the closest candidate's."""
    best: tuple[int, InputValidationError] | None = None
    for cls in kinds:
        try:
            msgspec.convert(data, cls)
            return
        except TypeError:
            return  # a union msgspec cannot check; the server will
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            missing = len(handle.decoder.required_keys(cls) - set(data))
            err = InputValidationError(handle.model_id, where + path[1:], message)
            if best is None or missing < best[0]:
                best = (missing, err)
    if best is not None:
        raise best[1]


def encode_requests(handle: BatchModel, requests: Sequence[Any]) -> bytes:
    """The ``{"requests": [...]}`` body. Each request (a struct, a mapping, or either wrapped in
    :class:`BatchRequest`) is validated against the model's batch item types; errors name
    ``$.requests[i]`` and the field."""
    if isinstance(requests, (str, bytes, Mapping)) or not isinstance(requests, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InputValidationError(handle.model_id, "$.requests", "expected a list of requests")
    if not requests:
        raise InputValidationError(handle.model_id, "$.requests", "a batch needs at least one request")
    kinds = batch_item_types(handle)
    encoded: list[Any] = []
    for i, item in enumerate(requests):
        where = f"$.requests[{i}]"
        ref: Any = None
        if isinstance(item, BatchRequest):
            wrapped: BatchRequest[Any] = item  # pyright: ignore[reportUnknownVariableType]
            ref, item = wrapped.external_reference, wrapped.request
        if isinstance(item, msgspec.Struct):
            try:
                handle.validate(item)
            except InputValidationError as exc:
                raise InputValidationError(handle.model_id, where + exc.path[1:], exc.detail) from None
            data: dict[str, Any] = msgspec.to_builtins(item)
            if kinds and type(item) not in kinds:
                _check_item(handle, data, kinds, where)
        elif isinstance(item, Mapping):
            data = dict(cast("Mapping[str, Any]", item))
            if kinds:
                _check_item(handle, data, kinds, where)
        else:
            raise InputValidationError(
                handle.model_id, where, f"expected a request struct or mapping, got {type(item).__name__}"
            )
        if ref is not None:
            data["external_reference"] = ref
        ext = data.get("external_reference")
        if ext is not None and not isinstance(ext, str):
            raise InputValidationError(handle.model_id, where + ".external_reference", "must be a string")
        encoded.append(data)
    return encode_body({"requests": encoded}, handle.model_id)


def submit(
    handle: BatchTarget,
    requests: Sequence[Any],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> BatchJob[Any]:
    """Queue ``requests`` (POST with ``?queueRequest=true``) and return the job.

    A body of ``max_bytes`` or more is refused before sending (the API takes under 10 MB; split the
    requests, or use ``ModelHandle.embed_many`` for texts). The submission is re-sent only after a
    failure that proves the server did not take it (connection never opened, 429, 503); after a read
    timeout, a dropped connection or 500/502/504 the error is raised, because the batch may be queued.
    """
    body = encode_requests(handle, requests)
    flow: Flow[BatchJob[Any]] = submit_flow(handle, BatchJob[Any], body, len(requests), headers, max_bytes)
    return handle.client.drive(flow)


def submit_encoded(
    handle: BatchTarget,
    requests: Sequence[bytes],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> BatchJob[Any]:
    """:func:`submit` for requests already validated and encoded, one JSON object each; they are sent as they are."""
    body = encode_batch(handle.model_id, requests)
    flow: Flow[BatchJob[Any]] = submit_flow(handle, BatchJob[Any], body, len(requests), headers, max_bytes)
    return handle.client.drive(flow)


def encode_batch(model_id: str, requests: Sequence[bytes]) -> bytes:
    """The body of requests already validated and encoded, one JSON object each (sent as they are)."""
    if not requests:
        raise InputValidationError(model_id, "$.requests", "a batch needs at least one request")
    return b'{"requests":[' + b",".join(requests) + b"]}"


def submit_flow(
    handle: BatchModel,
    job_type: Callable[..., JobT],
    body: bytes,
    size: int,
    headers: Mapping[str, str] | None,
    max_bytes: int,
) -> Flow[JobT]:
    """Queue an encoded batch body and return the job (a ``job_type``: the sync or the async job)."""
    check_batch_size(handle.model_id, body, max_bytes)
    client = handle.client
    submitted = time.time()
    url = client.run_url(handle.model_id) + "?queueRequest=true"
    reply = yield from client.request_flow("POST", url, body, headers=headers, queued=True, model_id=handle.model_id)
    request_id = submitted_id(handle.model_id, client, reply)
    return job_type(handle, request_id, submitted_at=submitted, size=size)


def check_batch_size(model_id: str, body: bytes, max_bytes: int) -> None:
    """Refuse a batch body the API would refuse (10 MB), before anything is sent."""
    if len(body) >= max_bytes:
        raise InputValidationError(
            model_id,
            "$.requests",
            f"the batch body is {len(body):,} bytes; the API takes under {max_bytes:,}: split it into smaller batches",
        )


def submitted_id(model_id: str, client: SessionConfig, reply: Reply) -> str:
    """The ``request_id`` of a batch submission's reply (the envelope checked, ``messages`` kept)."""
    try:
        data = _result_object(client, reply, model_id, "batch submission")
    except ResponseDecodeError as exc:
        err = ResponseDecodeError(
            f"{exc}; the batch may have been queued anyway", cf_ray=exc.cf_ray, model_id=model_id, body=exc.body
        )
        err.status = exc.status  # kept out of the message, which already names it
        raise err from None
    request_id = data.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        raise ResponseDecodeError(
            f"{model_id}: the batch submission reply has no request_id (status {data.get('status')!r})",
            status=reply.status,
            model_id=model_id,
        )
    return request_id
