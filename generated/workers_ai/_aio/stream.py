"""Async iteration over a streamed reply: :class:`AsyncEventStream`, the awaitable twin of ``EventStream``.

The parsing (SSE framing, the fast path, error events, size caps, ``[DONE]``) is the shared sans-I/O
:class:`~._stream.StreamParser`; this module only awaits the bytes it asks for. The rules are those of
``EventStream``: ``stream_idle_timeout`` between events, ``stream_timeout`` for the whole stream,
``max_event_bytes`` per event, the connection reused after ``[DONE]`` and dropped otherwise.

``h.chat_stream(...)`` returns an :class:`AsyncStreamRequest`: validated at once, sent on
``async with`` (or ``await``), which gives the :class:`AsyncEventStream`, whose methods are printed from
``EventStream``'s but how its events are handed out and its finalizer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._core.stream_events import StreamEvent, StreamResult
from .._core.stream_parser import (
    DRAIN_LIMIT,
    DRAIN_SECONDS,
    WANT_BODY,
    WANT_BYTES,
    StreamParser,
)
from ..errors import APIConnectionError, ResponseTooLargeError

if TYPE_CHECKING:
    from .transport import AsyncResponse

__all__ = ["AsyncEventStream", "AsyncStreamRequest"]


class AsyncEventStream(StreamParser):
    """``async for event in stream``: typed events over a live reply, with the rules ``EventStream`` lists; use it
    in ``async with`` (or call :meth:`aclose`) to give the connection back when leaving early."""

    def __init__(self, response: AsyncResponse, **options: Any) -> None:
        super().__init__(response, **options)
        self._agen: AsyncIterator[list[StreamEvent]] | None = None
        self._at = 0

    def __del__(self) -> None:
        try:
            if not getattr(self, "closed", True):
                self.closed = True
                self._report_end()  # usage counted, the span ended
                self._resp.close()
        except Exception:
            pass

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        # The events of the batch decoded last, one by one; then the next batch (StopAsyncIteration at the end).
        current = self._current
        if self._at < len(current):
            self._at += 1
            return current[self._at - 1]
        if self._agen is None:
            self._agen = self._batches()
        batch = await self._agen.__anext__()
        self._at = 1
        return batch[0]

    # generated from _sync/stream.py:EventStream by codegen.twins, to the end of the class
    _resp: AsyncResponse

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop reading. An unfinished stream's socket is closed; a finished one's connection is reused."""
        if self.closed:
            return
        self.closed = True
        self._report_end()
        self._current.clear()  # events decoded but not yet handed out are not delivered after aclose()
        if self.done and await self._drain():
            self._resp.release()
            return
        self._resp.close()

    async def _drain(self) -> bool:
        """Read what follows ``[DONE]`` (normally only the end of the chunked body) within a short time
        bound; True when the body ended, so the connection can go back to the pool."""
        deadline = time.monotonic() + DRAIN_SECONDS
        left = DRAIN_LIMIT
        try:
            while left > 0:
                chunk = await self._resp.read_chunk(deadline)
                if not chunk:
                    return True
                left -= len(chunk)
        except APIConnectionError:
            return False
        return False

    # ------------------------------------------------------------------ reading

    async def _read(self, since: float) -> bytes:
        """The next bytes, waiting at most ``idle_timeout`` after ``since`` and never past the total deadline."""
        idle_end = since + self._idle
        try:
            chunk = await self._resp.read_chunk(min(idle_end, self._until))
        except APIConnectionError as exc:
            failure = self._read_failure(exc, idle_end)
            if failure is None:
                return b""
            raise failure from None
        self.bytes_read += len(chunk)
        return chunk

    async def _batches(self) -> AsyncIterator[list[StreamEvent]]:
        parser = self._parse()
        try:
            want = next(parser)
            since = time.monotonic()
            while True:
                if want == WANT_BYTES:
                    want = parser.send(await self._read(since))
                elif want == WANT_BODY:
                    want = parser.send(await self._read_all())
                else:
                    assert not isinstance(want, int)
                    if want:
                        self._current = want
                        yield want
                    since = time.monotonic()  # after the caller had the events: its time is not idle time
                    want = next(parser)
        except StopIteration:
            return
        except ResponseTooLargeError as exc:
            failure = self._too_large(exc)
            self._failed(failure)
            raise failure from None
        except Exception as exc:
            self._failed(exc)  # told to the call's span when the stream closes
            raise
        finally:
            parser.close()
            await self.aclose()

    async def _read_all(self) -> bytes:
        body = await self._resp.read_all(self._max_reply)
        self.bytes_read += len(body)
        return body

    # ------------------------------------------------------------------ joining

    async def collect(self) -> StreamResult:
        """Read the rest of the stream and join it: text, reasoning, merged tool calls, final usage."""
        joined = self._joiner()
        try:
            async for ev in self:
                joined.add(ev)
        except ResponseTooLargeError:
            await self.aclose()
            raise
        return joined.result()

    async def text(self) -> str:
        """Read the rest of the stream and return the joined text."""
        return (await self.collect()).text


class AsyncStreamRequest:
    """A validated stream request, sent by ``async with`` (closing the stream on exit) or ``await``."""

    __slots__ = ("_open", "_stream")

    def __init__(self, open_stream: Callable[[], Awaitable[AsyncEventStream]]) -> None:
        self._open = open_stream
        self._stream: AsyncEventStream | None = None

    def __await__(self) -> Generator[Any, None, AsyncEventStream]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncEventStream:
        self._stream = await self._open()
        return self._stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stream is not None:
            await self._stream.aclose()

    async def collect(self) -> StreamResult:
        """Send the request, read the whole stream and join it (``await h.chat_stream(...).collect()``, as
        ``h.chat_stream(...).collect()`` on the sync client); the stream is closed either way."""
        async with self as events:
            return await events.collect()

    async def text(self) -> str:
        """Send the request and return the stream's joined text; the stream is closed either way."""
        async with self as events:
            return await events.text()
