"""The async batch API: queue many requests at once (``?queueRequest=true``), then poll by request id."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from .errors import BatchError, BatchTimeoutError, ErrorDetail, InputValidationError, ResponseDecodeError

if TYPE_CHECKING:
    from ._handle import ModelHandle

__all__ = ["BatchItem", "BatchJob", "BatchRequest", "BatchResult", "BatchStatus", "BatchStatusWarning", "submit"]

T = TypeVar("T")
OutT = TypeVar("OutT")

PENDING = frozenset({"queued", "running"})
KNOWN = frozenset({"queued", "running", "done", "failed"})


class BatchStatusWarning(UserWarning):
    """The API reported a batch status this SDK does not know; polling goes on."""


@dataclass(frozen=True)
class BatchRequest(Generic[T]):
    """One request of a batch with the ``external_reference`` the API echoes back on its result."""

    request: T
    external_reference: str | None = None


class BatchStatus(msgspec.Struct, frozen=True):
    """One poll's answer: ``state`` is queued, running, done or failed (or whatever new the API says)."""

    state: str
    request_id: str
    model: str | None = None
    raw: Any = None

    @property
    def pending(self) -> bool:
        return self.state in PENDING


class BatchItem(msgspec.Struct, Generic[OutT]):
    """The result of one request: ``id`` is its index in the submitted list."""

    id: int
    success: bool
    result: OutT | None = None
    external_reference: str | None = None
    errors: list[ErrorDetail] = []
    raw: Any = None


class BatchResult(msgspec.Struct, Generic[OutT]):
    """Every item, in the order the requests were submitted, plus the batch's token usage."""

    items: list[BatchItem[OutT]]
    usage: dict[str, Any] | None = None

    @property
    def failed(self) -> list[BatchItem[OutT]]:
        return [i for i in self.items if not i.success]

    @property
    def results(self) -> list[OutT | None]:
        return [i.result for i in self.items]


class BatchJob(Generic[OutT]):
    """A queued batch. Only ``request_id`` is needed to rebuild it (``ai.batch_job(model, id)``)."""

    def __init__(
        self,
        handle: ModelHandle[Any, OutT],
        request_id: str,
        *,
        submitted_at: float | None = None,
        size: int | None = None,
    ) -> None:
        self.handle = handle
        self.request_id = request_id
        self.model = handle.model_id
        self.submitted_at = submitted_at
        self.size = size
        self._result: BatchResult[OutT] | None = None

    def __repr__(self) -> str:
        return f"BatchJob(model={self.model!r}, request_id={self.request_id!r})"

    def status(self) -> BatchStatus:
        """Poll once (POST ``{"request_id": ...}``); when done, the results are kept for :meth:`wait`."""
        handle = self.handle
        client = handle.client
        body = msgspec.json.encode({"request_id": self.request_id})
        resp = client.request(
            "POST", client.run_url(self.model) + "?queueRequest=true", body, model_id=self.model
        )
        try:
            env = msgspec.json.decode(resp.data)
        except msgspec.DecodeError:
            raise ResponseDecodeError(
                f"{self.model}: batch status reply is not valid JSON", status=resp.status, model_id=self.model
            ) from None
        if not isinstance(env, dict) or env.get("success") is False:  # pyright: ignore[reportUnknownMemberType]
            raise client.error_from(resp.status, resp.headers, resp.data, model_id=self.model)
        raw_messages: Any = env.get("messages")  # pyright: ignore[reportUnknownMemberType]
        client.remember(resp, list(raw_messages) if isinstance(raw_messages, list) else [])  # pyright: ignore[reportUnknownArgumentType]
        result: Any = env.get("result")  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(result, dict):
            raise ResponseDecodeError(f"{self.model}: batch status reply has no result object", model_id=self.model)
        data: dict[str, Any] = result  # pyright: ignore[reportUnknownVariableType]
        if "responses" in data:
            self._result = self._decode_result(data)
            state = str(data.get("status") or "done")
        else:
            state = str(data.get("status") or "unknown")
        model = data.get("model")
        return BatchStatus(state, self.request_id, model if isinstance(model, str) else self.model, data)

    def wait(
        self,
        timeout: float = 600.0,
        poll_interval: float = 1.0,
        *,
        max_interval: float = 15.0,
        on_progress: Callable[[BatchStatus, float], None] | None = None,
    ) -> BatchResult[OutT]:
        """Poll until the job is done; the interval grows by half each poll up to ``max_interval``.

        Raises :class:`~workers_ai.errors.BatchTimeoutError` (naming the request id) at the deadline
        and :class:`~workers_ai.errors.BatchError` when the job failed as a whole.
        """
        if self._result is not None:
            return self._result
        started = time.monotonic()
        deadline = started + timeout
        interval = max(0.0, poll_interval)
        warned: set[str] = set()
        while True:
            st = self.status()
            elapsed = time.monotonic() - started
            if on_progress is not None:
                on_progress(st, elapsed)
            if self._result is not None:
                return self._result
            if st.state == "failed":
                detail = st.raw.get("error") if isinstance(st.raw, dict) else None  # pyright: ignore[reportUnknownMemberType]
                raise BatchError(
                    f"batch {self.request_id} for {self.model} failed" + (f": {detail}" if detail else ""),
                    request_id=self.request_id,
                    status=st.state,
                )
            if st.state not in KNOWN and st.state not in warned:
                warned.add(st.state)
                warnings.warn(
                    f"batch {self.request_id}: unknown status {st.state!r}; still polling",
                    BatchStatusWarning,
                    stacklevel=2,
                )
            now = time.monotonic()
            if now + interval > deadline:
                raise BatchTimeoutError(
                    f"batch {self.request_id} for {self.model} still {st.state} after {now - started:.1f}s "
                    f"(timeout {timeout:g}s); resume later with batch_job({self.model!r}, {self.request_id!r})",
                    request_id=self.request_id,
                    status=st.state,
                )
            self.handle.client._sleep(interval)  # pyright: ignore[reportPrivateUsage]
            interval = min(max_interval, max(interval * 1.5, 0.05))

    def _decode_result(self, data: Mapping[str, Any]) -> BatchResult[OutT]:
        responses = data.get("responses")
        items: list[BatchItem[OutT]] = []
        for index, entry in enumerate(responses if isinstance(responses, list) else []):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
            if not isinstance(entry, dict):
                continue
            e: dict[str, Any] = entry  # pyright: ignore[reportUnknownVariableType]
            item_id = e.get("id")
            ok = e.get("success") is not False
            ref = e.get("external_reference")
            errors = _details(e.get("errors") or e.get("error"))
            value: Any = e.get("result")
            decoded: Any = None
            if ok and value is not None:
                if isinstance(value, dict) and set(value) == {"result"}:  # pyright: ignore[reportUnknownArgumentType]
                    value = value["result"]  # some batches nest the result once more
                try:
                    decoded = self.handle.decoder.decode(value, self.model)
                except ResponseDecodeError as exc:
                    ok = False
                    errors = [ErrorDetail(None, str(exc))]
            items.append(
                BatchItem(
                    id=item_id if isinstance(item_id, int) else index,
                    success=ok,
                    result=decoded,
                    external_reference=ref if isinstance(ref, str) else None,
                    errors=errors,
                    raw=e,
                )
            )
        items.sort(key=lambda i: i.id)
        usage = data.get("usage")
        return BatchResult(items, dict(usage) if isinstance(usage, dict) else None)  # pyright: ignore[reportUnknownArgumentType]


def _details(raw: Any) -> list[ErrorDetail]:
    if raw is None:
        return []
    entries: list[Any] = raw if isinstance(raw, list) else [raw]  # pyright: ignore[reportUnknownVariableType]
    out: list[ErrorDetail] = []
    for item in entries:
        if isinstance(item, dict):
            code: Any = item.get("code")  # pyright: ignore[reportUnknownMemberType]
            out.append(ErrorDetail(code if isinstance(code, int) else None, str(item.get("message", item))))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        else:
            out.append(ErrorDetail(None, str(item)))
    return out


def encode_requests(handle: ModelHandle[Any, Any], requests: Sequence[Any]) -> bytes:
    """The ``{"requests": [...]}`` body, each request validated against its own input variant."""
    if not requests:
        raise InputValidationError(handle.model_id, "$.requests", "a batch needs at least one request")
    encoded: list[Any] = []
    for i, item in enumerate(requests):
        ref: str | None = None
        if isinstance(item, BatchRequest):
            ref = item.external_reference  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            item = item.request  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        try:
            if isinstance(item, msgspec.Struct):
                handle.validate(item)
                data: Any = msgspec.to_builtins(item)
            elif isinstance(item, Mapping):
                data = dict(item)  # pyright: ignore[reportUnknownArgumentType]
                ref = data.pop("external_reference", ref)
                if handle.input_types:
                    handle._check_mapping(data)  # pyright: ignore[reportPrivateUsage]
            else:
                raise InputValidationError(handle.model_id, "$", f"expected a request, got {type(item).__name__}")
        except InputValidationError as exc:
            raise InputValidationError(handle.model_id, f"$.requests[{i}]{exc.path[1:]}", exc.detail) from None
        if ref is not None:
            data["external_reference"] = ref
        encoded.append(data)
    return msgspec.json.encode({"requests": encoded})


def submit(
    handle: ModelHandle[Any, OutT], requests: Sequence[Any], *, headers: Mapping[str, str] | None = None
) -> BatchJob[OutT]:
    """POST the batch with ``?queueRequest=true``; never re-sent after the server may have queued it."""
    body = encode_requests(handle, requests)
    client = handle.client
    submitted = time.time()
    resp = client.request(
        "POST",
        client.run_url(handle.model_id) + "?queueRequest=true",
        body,
        headers=headers,
        queued=True,
        model_id=handle.model_id,
    )
    try:
        env = msgspec.json.decode(resp.data)
    except msgspec.DecodeError:
        raise ResponseDecodeError(
            f"{handle.model_id}: batch submission reply is not valid JSON; the batch may have been queued",
            status=resp.status,
            model_id=handle.model_id,
        ) from None
    if not isinstance(env, dict) or env.get("success") is False:  # pyright: ignore[reportUnknownMemberType]
        raise client.error_from(resp.status, resp.headers, resp.data, model_id=handle.model_id)
    result: Any = env.get("result")  # pyright: ignore[reportUnknownMemberType]
    request_id = result.get("request_id") if isinstance(result, dict) else None  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(request_id, str) or not request_id:
        raise ResponseDecodeError(f"{handle.model_id}: the batch reply has no request_id", model_id=handle.model_id)
    raw_messages: Any = env.get("messages")  # pyright: ignore[reportUnknownMemberType]
    client.remember(resp, list(raw_messages) if isinstance(raw_messages, list) else [])  # pyright: ignore[reportUnknownArgumentType]
    return BatchJob(handle, request_id, submitted_at=submitted, size=len(requests))
