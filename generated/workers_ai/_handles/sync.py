"""The sync model handle: what ``WorkersAI().model(id)`` returns for a model this package has no module for,
and the base of every generated handle. Each call is one of :class:`.base.HandleBase`'s flows, run by the
client's blocking driver. ``AsyncModelHandle``'s methods are printed from :class:`ModelHandle`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

import msgspec

from .._core.decode import OutputDecoder, split_error, validator_for
from .._core.flow import Flow
from .base import HandleBase, ModelInfo
from .ops import NOTHING, Op

if TYPE_CHECKING:
    from .._batch.embed_plan import BatchProgress
    from .._batch.f32 import F32
    from .._batch.jobs import BatchJob
    from .._core.binary import BinaryInput
    from .._sync.session import Session
    from .._sync.stream import EventStream

# Batches, streams and JSON mode load their modules on first use: a handle that only calls loads none.

__all__ = ["GenericHandle", "HandleBase", "ModelHandle", "ModelInfo", "OutputDecoder", "split_error", "validator_for"]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
T = TypeVar("T")
_OCTETS = "application/octet-stream"


class ModelHandle(HandleBase[Any, InT, OutT], Generic[InT, OutT]):
    """Base of every generated model handle: validation, encoding, the call and decoding.

    Subclasses add one method per input variant of the model's schema.
    """

    client: Session  # declared here, not as a type argument: the session's module loads with the client

    def run(self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> OutT:
        """Run with a request struct or a plain mapping; returns the decoded output variant."""
        if self._is_binary(payload):
            result: OutT = self._call_binary(cast("BinaryInput", payload), None, headers=headers)
            return result
        flow = self._special_body_flow(payload, headers)
        if flow is not None:
            special: OutT = self._drive(flow)
            return special
        return self._send_and_decode(self.encode_input(payload), None, headers=headers, request=payload)

    def stream(self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> EventStream:
        """Run with ``stream: true`` and iterate the server-sent events (``with h.stream(...) as events``)."""
        return self._open_stream(self._stream_body(payload), headers, payload)

    def submit_batch(self, payload: Any, *, headers: Mapping[str, str] | None = None) -> BatchJob[OutT]:
        """Queue ``{"requests": [...]}`` with the async batch API."""
        requests, beside = self._batch_requests(payload)
        return self._submit_batch(requests, headers=headers, beside=beside)

    def batch_job(self, request_id: str) -> BatchJob[OutT]:
        """A job for an already queued ``request_id``."""
        from .._batch.jobs import BatchJob

        return BatchJob(self, request_id)

    @overload
    def embed_many(
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
    def embed_many(
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
    def embed_many(
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
        """Embed any number of texts through the async batch API; one vector per text, in input order.

        For models with a batch (``requests``) variant whose requests take a list of ``text`` (the bge
        embedding models); others raise ``ConfigurationError``. The texts are split into requests of at
        most ``batch_size`` strings (default and upper bound: the schema's ``maxItems``), grouped into
        batches under 10 MB each, submitted, polled together until done, and put back in order.
        ``options`` are extra request fields (e.g. ``{"pooling": "cls"}``); ``on_progress`` gets a
        ``BatchProgress`` after every polling round. Failed requests raise ``BatchItemsError`` carrying
        the vectors that did arrive; the deadline raises ``BatchTimeoutError`` naming the unfinished
        request ids (resume them with :meth:`batch_job`).

        ``as_numpy=True`` returns a ``(len(texts), dim)`` float32 numpy array instead, each request's
        vectors decoded straight into their rows (never the whole job as Python lists; batches are then
        kept to 400 texts so no status reply is large). Needs numpy (``pip install 'workers-ai[ray]'``).
        """
        from .._batch.embed_many import embed_flow
        from .._batch.jobs import BatchJob

        flow = embed_flow(
            self,
            BatchJob[Any],
            texts,
            batch_size=batch_size,
            options=options,
            on_progress=on_progress,
            timeout=timeout,
            poll_interval=poll_interval,
            as_numpy=as_numpy,
        )
        vectors: list[list[float]] | F32 = self._drive(flow)
        return vectors

    # ------------------------------------------------------------------ calls: the rules are HandleBase's flows

    def _drive(self, flow: Flow[T]) -> T:
        return self.client._drive(flow)  # pyright: ignore[reportPrivateUsage]

    def _open_stream(self, body: bytes, headers: Mapping[str, str] | None, request: Any) -> EventStream:
        from .._sync.stream import EventStream

        resp, call = self._drive(self._stream_open_flow(body, headers, request))
        return EventStream(resp, **self._stream_options(resp, call))

    def _invoke(self, op: Op[T], params: Mapping[str, Any], first: Any = NOTHING, response_format: Any = None) -> T:
        """A generated method's call (the rules: :meth:`HandleBase._op_flow`)."""
        result: T = self._drive(self._op_flow(op, params, first, response_format))
        return result

    def _invoke_stream(self, op: Op[Any], params: Mapping[str, Any], first: Any = NOTHING) -> EventStream:
        request = op.build(params, self.model_id, first, stream=True)
        return self._open_stream(self._stream_request_body(request), None, request)

    def _call(self, request: msgspec.Struct, expect: type[T] | None, *, headers: Mapping[str, str] | None = None) -> T:
        return self._drive(self._request_flow(request, expect, headers))

    def _call_binary(self, data: BinaryInput, expect: type[T] | None, *, headers: Mapping[str, str] | None = None) -> T:
        from .._core.binary import read_binary

        return self._drive(self._call_flow(read_binary(data), expect, _OCTETS, headers))

    def _submit_batch(
        self, requests: Sequence[Any], *, headers: Mapping[str, str] | None = None, beside: Any = None
    ) -> BatchJob[Any]:
        from .._batch.jobs import BatchJob

        job: BatchJob[Any] = self._drive(self._submit_flow(BatchJob[Any], requests, headers, beside))
        return job

    def _batch_many(self, requests: Sequence[Any], options: Mapping[str, Any]) -> list[Any]:
        """A generated ``batch_many()`` (the rules: :mod:`.._batch.many`)."""
        from .._batch.jobs import BatchJob

        items: list[Any] = self._drive(self._many_flow(BatchJob[Any], requests, options))
        return items

    def _send_and_decode(
        self, body: bytes, expect: type[T] | None, *, headers: Mapping[str, str] | None = None, request: Any = None
    ) -> T:
        # ``request``: what the call's span reads its parameters from (as a typed method's call does).
        return self._drive(self._call_flow(body, expect, headers=headers, request=request))


class GenericHandle(ModelHandle[Any, Any]):
    """Handle for a model this package was not generated for: plain JSON in, ``dict``/bytes out."""
