"""The asyncio sessions, on ``websockets.asyncio.client``: printed from :mod:`._sync`'s, on the task things
defined here under the names :mod:`._sync` gives its thread things."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ..errors import RealtimeError
from ._audio import AudioSource, Pacer, Transcript, audio_chunks, chunk_size, collect
from ._core import END, SessionBase, SessionCore
from ._wsopts import close_of, connect_options, handshake_error, websockets_module

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["AsyncListenSession", "AsyncSession", "AsyncSpeakSession"]

E = TypeVar("E")

sleep = asyncio.sleep
Lock = contextlib.nullcontext  # a task builds a frame without yielding to another: nothing to hold
Worker = asyncio.Task[None]
Inbox = asyncio.Queue
Empty = asyncio.QueueEmpty


class Done(asyncio.Event):
    """``threading.Event``'s ``wait(timeout)`` on an ``asyncio.Event``: whether it was set in time."""

    async def wait(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        try:
            return await asyncio.wait_for(super().wait(), timeout)
        except asyncio.TimeoutError:
            return False


class Connection(Protocol):
    """What a session uses of ``websockets.asyncio.client.ClientConnection``."""

    close_code: int | None
    close_reason: str | None

    def __aiter__(self) -> AsyncIterator[str | bytes]: ...  # ends at a clean close, else ConnectionClosed
    async def send(self, message: str | bytes) -> None: ...
    async def close(self) -> None: ...


async def open_socket(core: SessionCore) -> Connection:
    """Connect to ``core.url`` (a refused handshake raises websockets' exception; see ``handshake_error``)."""
    options = connect_options(core)
    options["write_limit"] = core.limits.write_limit  # ``send`` waits while more is buffered
    connection: Connection = await websockets_module("asyncio.client").connect(core.url, **options)
    return connection


async def take(inbox: Inbox[Any], timeout: float | None) -> Any:
    """The next event within ``timeout`` seconds (None: until one comes), else None."""
    try:
        return await asyncio.wait_for(inbox.get(), timeout)
    except asyncio.TimeoutError:
        return None


def shut(inbox: Inbox[Any]) -> None:
    """Drop what is unread and put END: whoever waits on the inbox goes on."""
    while not inbox.empty():
        inbox.get_nowait()
    inbox.put_nowait(END)


def spawn(work: Callable[[], Coroutine[Any, Any, None]], name: str) -> Worker:
    """Run ``work`` beside the caller, as a task of the running loop."""
    return asyncio.get_running_loop().create_task(work(), name=name)


async def stop(workers: Sequence[Worker]) -> None:
    """Cancel ``workers`` and wait until they have ended."""
    for worker in workers:
        worker.cancel()
    await asyncio.gather(*workers, return_exceptions=True)


class AsyncSession(SessionBase[E, Connection]):
    """What the async listen and speak sessions share: open, receive, keepalive, close."""

    _opened_with: ClassVar[str] = "async with"

    # generated from realtime/_sync.py:SyncSession by codegen.twins, to the end of the class
    def _setup(self) -> None:
        self._lock = Lock()  # the core's frames are built, and its answers read, one at a time
        self._inbox: Inbox[Any] = Inbox(self.core.limits.max_queue)
        self._done = Done()  # the connection is over (the reader saw the end, or the session was shut)
        self._drained = False  # the end was taken from the inbox
        self._consumers = 0  # loops iterating over the session
        self._workers: list[Worker] = []

    async def __aenter__(self) -> Self:
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
        """Connect (done by ``with``). A refused handshake raises the REST error of its answer."""
        if self._ws is not None:
            return
        self.core.opening()
        try:
            ws = await open_socket(self.core)
        except Exception as exc:
            error = handshake_error(self.core, exc)
            self.core.finished(error)
            raise error from None
        self._ws = ws
        self._workers.append(spawn(self._reader, "workers-ai-reader"))
        if self.core.spec.keepalive_seconds is not None:
            self._workers.append(spawn(self._keepalive, "workers-ai-keepalive"))

    async def close(self) -> list[E]:
        """Send the model's close message (CloseStream, Close), read what the server still sends until it
        closes (within ``close_timeout``) and return those events; iterating afterwards yields them too."""
        self._connected()
        if not self.core.close_sent and not self._done.is_set():
            await self._say(self.core.control, "close")
        limit = self.core.limits.close_timeout
        deadline = time.monotonic() + limit
        rest: list[E] = []
        while not self._drained:
            left = deadline - time.monotonic()
            if left <= 0:
                await self._shutdown()
                raise self.core.timed_out(f"the server did not end the session within {limit:g}s of the close message")
            if self._consumers:  # another loop is iterating: it takes the events, this waits for the end
                if not await self._done.wait(left):
                    continue
                break
            got = await self._next(left)
            if got is END:
                break
            if got is not None:
                rest.append(got)
        await self._shutdown()
        self._backlog.extend(rest)
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return rest

    async def __aiter__(self) -> AsyncIterator[E]:
        self._consumers += 1
        try:
            while True:
                event = await self._next(None)
                if event is END:
                    return
                yield self.core.took(event)
        finally:
            self._consumers -= 1

    @property
    def ended(self) -> bool:
        """The connection is over (events already received can still be read)."""
        return self._done.is_set()

    async def receive(self, timeout: float | None = None) -> Any:
        """The next event, or None when nothing came within ``timeout`` or the session is over."""
        got = await self._next(timeout)
        return None if got is END else self.core.took(got)

    async def poll(self) -> list[Any]:
        """Every event already received, without waiting."""
        out: list[Any] = list(self._backlog)
        self._backlog.clear()
        while not self._drained:
            try:
                got = self._inbox.get_nowait()
            except Empty:
                break
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
                item = self._inbox.get_nowait()
            except Empty:
                if self._done.is_set():  # the reader put every event before it said so: none is coming
                    item = END
                else:
                    answer_by = self.core.answer_deadline()
                    now = time.monotonic()
                    if answer_by is not None and now >= answer_by:
                        self._error = self.core.timed_out(f"the server sent nothing for {self.core.answer_timeout:g}s")
                        await self._shutdown()
                        raise self._error from None
                    if until is not None and now >= until:
                        return None
                    ends = [t for t in (until, answer_by) if t is not None]
                    item = await take(self._inbox, max(0.0, min(ends) - now) if ends else None)
                    if item is None:
                        continue
            if item is END:
                self._drained = True
                return self._finished()
            return item

    async def _reader(self) -> None:
        ws = self._connected()
        code: int | None
        try:
            async for data in ws:
                with self._lock:
                    event = self.core.receive(data)
                if self._done.is_set():  # the session was shut: nobody reads any more
                    break
                await self._inbox.put(event)
            code, reason = ws.close_code, ws.close_reason or ""
        except Exception as exc:  # ConnectionClosedError, or the socket failing under it
            code, reason = close_of(exc)
        ended = self.core.closed(code, reason)
        self._error = self._error or ended
        self._done.set()
        await self._inbox.put(END)

    async def _say(self, make: Callable[..., str | bytes], *args: Any) -> None:
        with self._lock:
            frame = make(*args)
        ws = self._connected()
        try:
            await ws.send(frame)
        except Exception as exc:
            code, reason = close_of(exc)
            self._error = self.core.closed(code, reason) or RealtimeError(
                f"{self.model_id}: the session has ended", model_id=self.model_id
            )
            self._done.set()
            raise self._error from None

    async def _keepalive(self) -> None:
        while not self._done.is_set():
            with self._lock:
                wait = self.core.keepalive_wait()
                frame = self.core.keepalive()
            if frame is not None:
                try:
                    await self._connected().send(frame)
                except Exception:
                    return  # the reader reports how the connection ended
                continue
            if wait is None or await self._done.wait(max(wait, 0.05)):
                return

    async def _shutdown(self) -> None:
        self._done.set()
        shut(self._inbox)
        if self._ws is not None:
            await self._ws.close()
        await stop(self._workers)
        self._workers.clear()
        self.core.finished(self._error)


class AsyncListenSession(AsyncSession[E]):
    """Speech in, typed events out: ``await send(audio)``, ``finalize()``, ``close()``, ``async for``."""

    # generated from realtime/_sync.py:ListenSession by codegen.twins, to the end of the class
    async def send(self, audio: bytes | bytearray | memoryview) -> None:
        """Send one chunk of audio (a binary frame); waits while the connection is backed up."""
        await self._say(self.core.audio, audio)

    async def finalize(self) -> None:
        """Ask for results of all audio sent so far now (the stream stays open)."""
        await self._say(self.core.control, "finalize")

    async def transcribe(self, audio: AudioSource, *, pace: bool = False, chunk_ms: int = 100) -> Transcript[E]:
        """Send ``audio`` (bytes, a path, a binary file or chunks; in real time when ``pace``), reading what
        comes meanwhile, close, and return a ``Transcript``."""
        pacer = Pacer(self.core, pace)
        events: list[E] = []
        every = 1 if pacer.rate is not None else max(1, self.core.limits.max_queue // 4)
        for n, chunk in enumerate(audio_chunks(audio, chunk_size(self.core, chunk_ms)), 1):
            wait = pacer.delay(len(chunk))
            if wait:
                await sleep(wait)
            await self.send(chunk)
            if n % every == 0:
                events += await self.poll()
        events += await self.close()
        return collect(self.core, events)


class AsyncSpeakSession(AsyncSession[bytes | E]):
    """Text in, audio out: ``send_text``, ``flush``, ``clear``, ``close``; ``async for`` yields audio
    chunks (``bytes``) and control events."""

    # generated from realtime/_sync.py:SpeakSession by codegen.twins, to the end of the class
    async def send_text(self, text: str) -> None:
        """Send text to speak (a ``Speak`` message); it is spoken on :meth:`flush`."""
        await self._say(self.core.text, text)

    async def flush(self) -> None:
        """Speak everything sent so far (answered by ``Flushed``)."""
        await self._say(self.core.control, "flush")

    async def clear(self) -> None:
        """Drop text not yet spoken (answered by ``Cleared``)."""
        await self._say(self.core.control, "clear")

    async def speak(self, text: str) -> AsyncIterator[bytes]:
        """Send ``text``, flush, and yield its audio until ``Flushed`` (control events are skipped)."""
        await self.send_text(text)
        await self.flush()
        async for item in self.until_flushed():
            if isinstance(item, bytes):
                yield item

    async def until_flushed(self) -> AsyncIterator[bytes | E]:
        """Audio (``bytes``) and events until every ``flush()`` sent is answered by ``Flushed`` (the last
        item); the session stays open. Ends at once when no flush is pending."""
        while self.core.flushing:  # the rule: SessionCore.flushing
            item = await self._next(None)
            if item is END:
                return
            yield self.core.took(item)
