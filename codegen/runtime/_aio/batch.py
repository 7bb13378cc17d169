"""The batch API for the asyncio client: :class:`AsyncBatchJob`, async submission and ``embed_many``.

Decoding, the polling schedule, the after-poll decisions and the ``embed_many`` plan are those of
:mod:`._batch` and :mod:`._chunking`; this module only awaits the requests they ask for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import msgspec

from .._batch.chunking import POLL, POLL_LEAN, SUBMIT, BatchProgress, embed_steps
from .._batch.f32 import read_lean
from .._batch.jobs import (
    MAX_BATCH_BYTES,
    BatchJobBase,
    BatchResult,
    BatchStatus,
    PollSchedule,
    check_batch_size,
    encode_requests,
    submitted_id,
)
from .._core.decode import OutputDecoder
from .._sync.session import Reply
from ..errors import APITimeoutError, InputValidationError
from .session import AsyncSession

if TYPE_CHECKING:
    from .._batch.f32 import F32

__all__ = ["AsyncBatchJob", "AsyncBatchTarget", "embed_many", "submit", "submit_encoded"]

OutT = TypeVar("OutT")


class AsyncBatchTarget(Protocol):
    """What async batches need of a model handle: its async session, id, decoder and input types."""

    @property
    def client(self) -> AsyncSession: ...

    @property
    def model_id(self) -> str: ...

    decoder: ClassVar[OutputDecoder]
    batch_input: ClassVar[type[Any] | None]
    input_types: ClassVar[tuple[tuple[type[Any], tuple[str, ...]], ...]]

    def validate(self, request: msgspec.Struct) -> bytes: ...


class AsyncBatchJob(BatchJobBase[OutT]):
    """A queued batch polled with ``await job.status()`` / ``await job.wait()`` (see ``BatchJob``)."""

    handle: AsyncBatchTarget

    async def status(self, *, deadline: float | None = None) -> BatchStatus:
        """Poll once; when the job is done the results are kept (see :attr:`result`)."""
        return self.read_status(await self.poll(deadline=deadline))

    async def poll(self, *, deadline: float | None = None) -> Reply:
        """Send one status request and return the reply unread (:meth:`read_status` reads it)."""
        client = self.handle.client
        body = msgspec.json.encode({"request_id": self.request_id})
        url = client.run_url(self.model) + "?queueRequest=true"
        return await client.request("POST", url, body, model_id=self.model, deadline=deadline)

    async def wait(
        self,
        timeout: float = 600.0,
        poll_interval: float = 1.0,
        *,
        max_interval: float = 15.0,
        on_progress: Callable[[BatchStatus, float], None] | None = None,
    ) -> BatchResult[OutT]:
        """Poll until the job is done and return its results (the rules of ``BatchJob.wait``)."""
        schedule = PollSchedule(timeout, poll_interval, max_interval, self._clock)
        if self._result is not None:
            return self._result
        deadline = time.monotonic() + timeout
        sleep = self.handle.client._sleep_async  # pyright: ignore[reportPrivateUsage]
        warned: set[str] = set()
        while True:
            try:
                st = await self.status(deadline=deadline)
            except APITimeoutError:
                if time.monotonic() < deadline:
                    raise
                raise self._poll_timed_out(timeout) from None
            result, wait = self._after_poll(st, schedule, timeout, warned, on_progress)
            if result is not None:
                return result
            await sleep(wait)


async def submit(
    handle: AsyncBatchTarget,
    requests: Sequence[Any],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> AsyncBatchJob[Any]:
    """Queue ``requests`` and return the job (the rules of ``_batch.submit``)."""
    body = encode_requests(handle, requests)
    return await _submit_body(handle, body, len(requests), headers, max_bytes)


async def submit_encoded(
    handle: AsyncBatchTarget,
    requests: Sequence[bytes],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> AsyncBatchJob[Any]:
    if not requests:
        raise InputValidationError(handle.model_id, "$.requests", "a batch needs at least one request")
    body = b'{"requests":[' + b",".join(requests) + b"]}"
    return await _submit_body(handle, body, len(requests), headers, max_bytes)


async def _submit_body(
    handle: AsyncBatchTarget, body: bytes, size: int, headers: Mapping[str, str] | None, max_bytes: int
) -> AsyncBatchJob[Any]:
    check_batch_size(handle.model_id, body, max_bytes)
    client = handle.client
    submitted = time.time()
    reply = await client.request(
        "POST",
        client.run_url(handle.model_id) + "?queueRequest=true",
        body,
        headers=headers,
        queued=True,
        model_id=handle.model_id,
    )
    return AsyncBatchJob(handle, submitted_id(handle.model_id, client, reply), submitted_at=submitted, size=size)


async def embed_many(
    handle: AsyncBatchTarget,
    texts: Sequence[str],
    *,
    batch_size: int | None = None,
    options: Mapping[str, Any] | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    timeout: float = 3600.0,
    poll_interval: float = 1.0,
    max_interval: float = 15.0,
    max_bytes: int = MAX_BATCH_BYTES,
    as_numpy: bool = False,
) -> list[list[float]] | F32:
    """``embed_many`` awaited: the same plan (:func:`~._chunking.embed_steps`), polls and errors."""
    steps = embed_steps(
        handle,
        texts,
        batch_size=batch_size,
        options=options,
        on_progress=on_progress,
        timeout=timeout,
        poll_interval=poll_interval,
        max_interval=max_interval,
        max_bytes=max_bytes,
        as_numpy=as_numpy,
    )
    sleep = handle.client._sleep_async  # pyright: ignore[reportPrivateUsage]
    try:
        kind, arg = next(steps)
        while True:
            try:
                if kind == SUBMIT:
                    out: Any = await submit_encoded(handle, arg, max_bytes=max_bytes)
                elif kind == POLL:
                    out = await arg[0].status(deadline=arg[1])
                elif kind == POLL_LEAN:
                    out = read_lean(arg[0], await arg[0].poll(deadline=arg[1]))
                else:
                    await sleep(arg)
                    out = None
            except Exception as exc:
                kind, arg = steps.throw(exc)
                continue
            kind, arg = steps.send(out)
    except StopIteration as stop:
        vectors: list[list[float]] | F32 = stop.value
        return vectors
