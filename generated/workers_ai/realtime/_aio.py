"""The asyncio driver: :class:`AsyncListenSession` and :class:`AsyncSpeakSession` on
``websockets.asyncio.client``. The I/O only: every decision is :class:`~._core.SessionCore`'s.

``send`` waits while more than ``write_limit`` bytes are buffered; at most ``max_queue`` received frames
wait to be read before the socket is no longer read. A task sends KeepAlive when the stream is quiet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, TypeVar

from ..errors import RealtimeError
from ._audio import AudioSource, Pacer, Transcript, audio_chunks, chunk_size, collect
from ._core import END, SessionBase
from ._wsopts import AsyncConnection, close_of, connect_options, handshake_error, websockets_module

__all__ = ["AsyncListenSession", "AsyncSession", "AsyncSpeakSession"]

E = TypeVar("E")
_NOTHING: Any = object()


class AsyncSession(SessionBase[E, AsyncConnection]):
    """What the async listen and speak sessions share: open, receive, keepalive, close.

    A reader task moves frames from the socket into a queue of at most ``max_queue`` events; when it
    is full the reader waits, the socket is no longer read and the server is held back.
    """

    _opened_with = "async with"

    def _setup(self) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue(self.core.limits.max_queue)
        self._done = asyncio.Event()  # the connection is over (the reader saw the end)
        self._drained = False  # the end marker was taken from the queue
        self._consumers = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> AsyncSession[E]:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            await self.close()
        else:
            await self._shutdown()

    async def open(self) -> None:
        if self._ws is not None:
            return
        connect = websockets_module("asyncio.client").connect
        options = connect_options(self.core)
        options["write_limit"] = self.core.limits.write_limit
        self.core.opening()
        try:
            ws: AsyncConnection = await connect(self.core.url, **options)
        except Exception as exc:
            error = handshake_error(self.core, exc)
            self.core.finished(error)
            raise error from None
        self._ws = ws
        self._tasks.append(asyncio.ensure_future(self._reader(ws)))
        if self.core.spec.keepalive_seconds is not None:
            self._tasks.append(asyncio.ensure_future(self._keepalive()))

    async def close(self) -> list[Any]:
        """Send the model's close message and return what the server still sends before it closes."""
        self._connected()
        if not self.core.close_sent and not self._done.is_set():
            await self._send(self.core.control("close"))
        limit = self.core.limits.close_timeout
        deadline = time.monotonic() + limit
        rest: list[Any] = []
        while not self._drained:
            left = deadline - time.monotonic()
            if left <= 0:
                await self._shutdown()
                raise self.core.timed_out(f"the server did not end the session within {limit:g}s of the close message")
            if self._consumers:  # another task is iterating: it takes the events, we wait for the end
                try:
                    await asyncio.wait_for(self._done.wait(), left)
                except asyncio.TimeoutError:
                    continue
                break
            got = await self._next(left)
            if got is END:
                break
            if got is not None:
                rest.append(got)
        await self._shutdown()
        self._backlog.extend(rest)  # iterating afterwards yields them too
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return rest

    @property
    def ended(self) -> bool:
        return self._done.is_set()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events()

    async def _events(self) -> AsyncIterator[Any]:
        self._consumers += 1
        try:
            while True:
                event = await self._next(None)
                if event is END:
                    return
                yield self.core.took(event)
        finally:
            self._consumers -= 1

    async def receive(self, timeout: float | None = None) -> Any:
        """The next event, or None when nothing came within ``timeout`` or the session is over."""
        got = await self._next(timeout)
        return None if got is END else self.core.took(got)

    async def poll(self) -> list[Any]:
        """Every event already received, without waiting."""
        out: list[Any] = list(self._backlog)
        self._backlog.clear()
        queue = self._queue
        while not queue.empty() and not self._drained:  # nothing waits here: the reader task fills it
            got = queue.get_nowait()
            if got is END:
                self._drained = True
                break
            out.append(got)
        if self._drained and not out:
            self._finished()  # raises how the session failed, if it did
        return [self.core.took(item) for item in out]

    async def _next(self, timeout: float | None) -> Any:
        if self._backlog:
            return self._backlog.popleft()
        if self._drained:
            return self._finished()
        self._connected()
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                answer_by = self.core.answer_deadline()
                now = time.monotonic()
                if answer_by is not None and now >= answer_by:
                    self._error = self.core.timed_out(f"the server sent nothing for {self.core.answer_timeout:g}s")
                    await self._shutdown()
                    raise self._error from None
                if until is not None and now >= until:
                    return None
                ends = [t for t in (until, answer_by) if t is not None]
                try:
                    if ends:
                        item = await asyncio.wait_for(self._queue.get(), max(0.0, min(ends) - now))
                    else:
                        item = await self._queue.get()
                except asyncio.TimeoutError:
                    continue
            if item is END:
                self._drained = True
                return self._finished()
            return item

    async def _reader(self, ws: AsyncConnection) -> None:
        code: int | None
        try:
            async for data in ws:
                await self._queue.put(self.core.receive(data))
            code, reason = ws.close_code, ws.close_reason or ""
        except Exception as exc:  # ConnectionClosedError, or the socket failing under it
            code, reason = close_of(exc)
        self._error = self.core.closed(code, reason)
        self._done.set()
        await self._queue.put(END)

    async def _send(self, frame: str | bytes) -> None:
        ws = self._connected()
        try:
            await ws.send(frame)
        except Exception as exc:
            code, reason = close_of(exc)
            error = self.core.closed(code, reason) or RealtimeError(
                f"{self.model_id}: the session has ended", model_id=self.model_id
            )
            raise error from None

    async def _keepalive(self) -> None:
        while not self._done.is_set():
            wait = self.core.keepalive_wait()
            frame = self.core.keepalive()
            if frame is not None:
                try:
                    await self._connected().send(frame)
                except Exception:
                    return  # the reader reports how the connection ended
                continue
            if wait is None:
                return
            try:
                await asyncio.wait_for(self._done.wait(), max(wait, 0.05))
                return
            except asyncio.TimeoutError:
                pass

    async def _shutdown(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks.clear()
        self._done.set()
        self.core.finished(self._error)


class AsyncListenSession(AsyncSession[E]):
    """Speech in, typed events out: ``await send(audio)``, ``finalize()``, ``close()``, ``async for``."""

    async def __aenter__(self) -> AsyncListenSession[E]:
        await self.open()
        return self

    def __aiter__(self) -> AsyncIterator[E]:
        return self._events()

    async def send(self, audio: bytes | bytearray | memoryview) -> None:
        await self._send(self.core.audio(audio))

    async def finalize(self) -> None:
        await self._send(self.core.control("finalize"))

    async def close(self) -> list[E]:
        return await super().close()

    async def transcribe(self, audio: AudioSource, *, pace: bool = False, chunk_ms: int = 100) -> Transcript[E]:
        return await transcribe_async(self, audio, pace=pace, chunk_ms=chunk_ms)


class AsyncSpeakSession(AsyncSession[E]):
    """Text in, audio out: ``send_text``, ``flush``, ``clear``, ``close``; ``async for`` yields audio
    chunks (``bytes``) and control events."""

    async def __aenter__(self) -> AsyncSpeakSession[E]:
        await self.open()
        return self

    def __aiter__(self) -> AsyncIterator[bytes | E]:
        return self._events()

    async def send_text(self, text: str) -> None:
        await self._send(self.core.text(text))

    async def flush(self) -> None:
        await self._send(self.core.control("flush"))

    async def clear(self) -> None:
        await self._send(self.core.control("clear"))

    async def close(self) -> list[bytes | E]:
        return await super().close()

    def speak(self, text: str) -> AsyncIterator[bytes]:
        return aspeak_chunks(self, text)

    async def until_flushed(self) -> AsyncIterator[bytes | E]:
        """:meth:`SpeakSession.until_flushed`, with ``async for``."""
        while self.core.flushing:  # the rule: SessionCore.flushing
            item = await self._next(None)
            if item is END:
                return
            yield self.core.took(item)


async def transcribe_async(
    session: AsyncListenSession[Any], audio: AudioSource, *, pace: bool, chunk_ms: int
) -> Transcript[Any]:
    pacer = Pacer(session.core, pace)
    events: list[Any] = []
    for chunk in audio_chunks(audio, chunk_size(session.core, chunk_ms)):
        wait = pacer.delay(len(chunk))
        if wait:
            await asyncio.sleep(wait)
        await session.send(chunk)
        events += await session.poll()
    events += await session.close()
    return collect(session.core, events)


async def aspeak_chunks(session: AsyncSpeakSession[Any], text: str) -> AsyncIterator[bytes]:
    await session.send_text(text)
    await session.flush()
    async for item in session.until_flushed():
        if isinstance(item, bytes):
            yield item
