"""Async model handles: what ``AsyncWorkersAI().model(id)`` returns.

Validation, encoding and decoding are :class:`~._handle.HandleBase`'s, shared with the sync handles;
the generated ``Async*Handle`` classes come from the same template as the sync ones. Only the sending
is awaited.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

import msgspec

from .base import HandleBase
from .ops import NOTHING, Op

if TYPE_CHECKING:
    from .._aio.session import AsyncSession
    from .._aio.stream import AsyncEventStream, AsyncStreamRequest
    from .._batch.embed_plan import BatchProgress
    from .._batch.f32 import F32
    from .._batch.jobs import AsyncBatchJob
    from .._core.binary import BinaryInput

# Every generated model module imports this one, sync users included: it imports nothing else of
# the async client at load time (streams and batches load their modules on first use).

__all__ = ["AsyncGenericHandle", "AsyncModelHandle"]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
T = TypeVar("T")

_OCTETS = "application/octet-stream"


class AsyncModelHandle(HandleBase[Any, InT, OutT], Generic[InT, OutT]):
    """Base of every generated async handle: the typed methods are awaitables (streams excepted:
    ``h.chat_stream(...)`` is used with ``async with``)."""

    client: AsyncSession  # declared here, not as a type argument: loading _aio_session waits for the first call

    # ------------------------------------------------------------------ public

    async def run(self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> OutT:
        """Run with a request struct or a plain mapping; returns the decoded output variant."""
        if self._is_binary(payload):
            result: OutT = await self._call_binary(cast("BinaryInput", payload), None, headers=headers)
            return result
        flow = self._special_body_flow(payload, headers)
        if flow is not None:
            return await self.client.drive(flow)
        return await self._send_and_decode(self.encode_input(payload), None, headers=headers, request=payload)

    def stream(
        self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> AsyncStreamRequest:
        """Run with ``stream: true``: ``async with h.stream(...) as events: async for e in events``."""
        return self._open_stream(self._stream_body(payload), headers, payload)

    async def run_decoded(self, payload: Mapping[str, Any], expect: type[T] | None) -> tuple[T, Any]:
        """Run with a mapping: ``(output decoded into expect, result as sent)`` (what ``run_tools`` awaits)."""
        return await self.client.drive(self._decoded_flow(self.encode_input(payload, check_keys=False), expect))

    async def submit_batch(self, payload: Any, *, headers: Mapping[str, str] | None = None) -> AsyncBatchJob[OutT]:
        """Queue ``{"requests": [...]}`` with the async batch API."""
        requests, beside = self._batch_requests(payload)
        return await self._submit_batch(requests, headers=headers, beside=beside)

    def batch_job(self, request_id: str) -> AsyncBatchJob[OutT]:
        """A job for an already queued ``request_id``."""
        from .._batch.jobs import AsyncBatchJob

        return AsyncBatchJob(self, request_id)

    @overload
    async def embed_many(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        options: Mapping[str, Any] | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        timeout: float = 3600.0,
        poll_interval: float = 1.0,
        as_numpy: Literal[False] = False,
    ) -> list[list[float]]: ...
    @overload
    async def embed_many(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        options: Mapping[str, Any] | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        timeout: float = 3600.0,
        poll_interval: float = 1.0,
        as_numpy: Literal[True],
    ) -> F32: ...
    async def embed_many(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        options: Mapping[str, Any] | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        timeout: float = 3600.0,
        poll_interval: float = 1.0,
        as_numpy: bool = False,
    ) -> list[list[float]] | F32:
        """Embed any number of texts through the batch API (see ``ModelHandle.embed_many``)."""
        from .._batch.chunking import embed_many

        vectors: list[list[float]] | F32 = await embed_many(
            self,
            texts,
            batch_size=batch_size,
            options=options,
            on_progress=on_progress,
            timeout=timeout,
            poll_interval=poll_interval,
            as_numpy=as_numpy,
        )
        return vectors

    # ------------------------------------------------------------------ calls

    def _open_stream(self, body: bytes, headers: Mapping[str, str] | None, request: Any) -> AsyncStreamRequest:
        from .._aio.stream import AsyncEventStream, AsyncStreamRequest

        session = self.client
        self._run_url()  # a bad model id is refused now, before anything is awaited

        async def open_stream() -> AsyncEventStream:
            resp, call = await session.drive(self._stream_open_flow(body, headers, request))
            return AsyncEventStream(resp, **self._stream_options(resp, call))

        return AsyncStreamRequest(open_stream)

    async def _invoke(
        self, op: Op[T], params: Mapping[str, Any], first: Any = NOTHING, response_format: Any = None
    ) -> T:
        """A generated method's call (the rules: :meth:`HandleBase._op_flow`)."""
        result: T = await self.client.drive(self._op_flow(op, params, first, response_format))
        return result

    def _invoke_stream(self, op: Op[Any], params: Mapping[str, Any], first: Any = NOTHING) -> AsyncStreamRequest:
        return self._stream(op.build(params, self.model_id, first, stream=True))

    def _stream(self, request: msgspec.Struct) -> AsyncStreamRequest:
        return self._open_stream(self._stream_request_body(request), None, request)

    # One line each: the rules are the flows of HandleBase; this client awaits them.

    async def _call(
        self, request: msgspec.Struct, expect: type[T] | None, *, headers: Mapping[str, str] | None = None
    ) -> T:
        return await self.client.drive(self._request_flow(request, expect, headers))

    async def _call_binary(
        self, data: BinaryInput, expect: type[T] | None, *, headers: Mapping[str, str] | None = None
    ) -> T:
        from .._core.binary import read_binary

        return await self.client.drive(self._call_flow(read_binary(data), expect, _OCTETS, headers))

    async def _batch_many(self, requests: Sequence[Any], options: Mapping[str, Any]) -> list[Any]:
        """A generated ``batch_many()``, awaited (the rules: :mod:`.._batch.many`)."""
        items: list[Any] = await self.client.drive(self._many_flow(requests, options))
        return items

    async def _submit_batch(
        self, requests: Sequence[Any], *, headers: Mapping[str, str] | None = None, beside: Any = None
    ) -> AsyncBatchJob[Any]:
        job: AsyncBatchJob[Any] = await self.client.drive(self._submit_flow(requests, headers, beside))
        return job

    async def _send_and_decode(
        self, body: bytes, expect: type[T] | None, *, headers: Mapping[str, str] | None = None, request: Any = None
    ) -> T:
        # ``request``: what the call's span reads its parameters from (as a typed method's call does).
        return await self.client.drive(self._call_flow(body, expect, headers=headers, request=request))


class AsyncGenericHandle(AsyncModelHandle[Any, Any]):
    """Async handle for a model this package was not generated for: plain JSON in, ``dict``/bytes out."""
