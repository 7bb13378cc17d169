"""Async model handles: what ``AsyncWorkersAI().model(id)`` returns. The methods are printed from
:class:`~.sync.ModelHandle`'s; written here is how a stream request is sent (on ``await`` or ``async with``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

import msgspec

from .._core.flow import Flow
from .base import HandleBase
from .ops import NOTHING, Op

if TYPE_CHECKING:
    from .._aio.session import AsyncSession
    from .._aio.stream import AsyncStreamRequest
    from .._batch.embed_plan import BatchProgress
    from .._batch.f32 import F32
    from .._batch.jobs import AsyncBatchJob
    from .._core.binary import BinaryInput

# Every generated model module imports this one, sync users included: it imports nothing else of
# the async client at load time (the session, streams and batches load their modules on first use).

__all__ = ["AsyncGenericHandle", "AsyncModelHandle"]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
T = TypeVar("T")

_OCTETS = "application/octet-stream"


class AsyncModelHandle(HandleBase[Any, InT, OutT], Generic[InT, OutT]):
    """Base of every generated async handle: the typed methods are awaitables (streams excepted:
    ``h.chat_stream(...)`` is used with ``async with``)."""

    def _open_stream(self, body: bytes, headers: Mapping[str, str] | None, request: Any) -> AsyncStreamRequest:
        # Async only: validated now, sent when awaited (or entered with ``async with``).
        from .._aio.stream import AsyncEventStream, AsyncStreamRequest

        self._run_url()  # a bad model id is refused now, before anything is awaited

        async def open_stream() -> AsyncEventStream:
            resp, call = await self._drive(self._stream_open_flow(body, headers, request))
            return AsyncEventStream(resp, **self._stream_options(resp, call))

        return AsyncStreamRequest(open_stream)

    # generated from _handles/sync.py:ModelHandle by codegen.twins, to the end of the class
    client: AsyncSession  # declared here, not as a type argument: the session's module loads with the client

    async def run(self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> OutT:
        """Run with a request struct or a plain mapping; returns the decoded output variant."""
        if self._is_binary(payload):
            result: OutT = await self._call_binary(cast("BinaryInput", payload), None, headers=headers)
            return result
        flow = self._special_body_flow(payload, headers)
        if flow is not None:
            special: OutT = await self._drive(flow)
            return special
        return await self._send_and_decode(self.encode_input(payload), None, headers=headers, request=payload)

    def stream(
        self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> AsyncStreamRequest:
        """Run with ``stream: true`` and iterate the server-sent events (``async with h.stream(...) as events``)."""
        return self._open_stream(self._stream_body(payload), headers, payload)

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
        """Embed any number of texts through the async batch API; one vector per text, in input order."""
        from .._batch.embed_many import embed_flow
        from .._batch.jobs import AsyncBatchJob

        flow = embed_flow(
            self,
            AsyncBatchJob[Any],
            texts,
            batch_size=batch_size,
            options=options,
            on_progress=on_progress,
            timeout=timeout,
            poll_interval=poll_interval,
            as_numpy=as_numpy,
        )
        vectors: list[list[float]] | F32 = await self._drive(flow)
        return vectors

    async def _drive(self, flow: Flow[T]) -> T:
        return await self.client._drive(flow)  # pyright: ignore[reportPrivateUsage]

    async def _invoke(
        self, op: Op[T], params: Mapping[str, Any], first: Any = NOTHING, response_format: Any = None
    ) -> T:
        result: T = await self._drive(self._op_flow(op, params, first, response_format))
        return result

    def _invoke_stream(self, op: Op[Any], params: Mapping[str, Any], first: Any = NOTHING) -> AsyncStreamRequest:
        request = op.build(params, self.model_id, first, stream=True)
        return self._open_stream(self._stream_request_body(request), None, request)

    async def _call(
        self, request: msgspec.Struct, expect: type[T] | None, *, headers: Mapping[str, str] | None = None
    ) -> T:
        return await self._drive(self._request_flow(request, expect, headers))

    async def _call_binary(
        self, data: BinaryInput, expect: type[T] | None, *, headers: Mapping[str, str] | None = None
    ) -> T:
        from .._core.binary import read_binary

        return await self._drive(self._call_flow(read_binary(data), expect, _OCTETS, headers))

    async def _submit_batch(
        self, requests: Sequence[Any], *, headers: Mapping[str, str] | None = None, beside: Any = None
    ) -> AsyncBatchJob[Any]:
        from .._batch.jobs import AsyncBatchJob

        job: AsyncBatchJob[Any] = await self._drive(self._submit_flow(AsyncBatchJob[Any], requests, headers, beside))
        return job

    async def _batch_many(self, requests: Sequence[Any], options: Mapping[str, Any]) -> list[Any]:
        from .._batch.jobs import AsyncBatchJob

        items: list[Any] = await self._drive(self._many_flow(AsyncBatchJob[Any], requests, options))
        return items

    async def _send_and_decode(
        self, body: bytes, expect: type[T] | None, *, headers: Mapping[str, str] | None = None, request: Any = None
    ) -> T:
        return await self._drive(self._call_flow(body, expect, headers=headers, request=request))


class AsyncGenericHandle(AsyncModelHandle[Any, Any]):
    """Async handle for a model this package was not generated for: plain JSON in, ``dict``/bytes out."""
