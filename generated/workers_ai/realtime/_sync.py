"""The blocking sessions: :class:`ListenSession` and :class:`SpeakSession`, on ``websockets.sync.client``.

Every decision is :class:`~._core.SessionCore`'s. A reader thread moves frames into an inbox of at most
``max_queue`` events (while it is full the server is held back); a second sends KeepAlive when it is quiet.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import RealtimeError
from ._audio import AudioSource, Pacer, Transcript, audio_chunks, chunk_size, collect
from ._core import END, SessionBase, SessionCore
from ._wsopts import close_of, connect_options, handshake_error, websockets_module

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ListenSession", "SpeakSession", "SyncSession"]

E = TypeVar("E")

sleep = time.sleep
Done = threading.Event  # set once the connection is over; ``wait(timeout)`` says whether it was
Lock = threading.Lock  # the core's frames are built one at a time: the keepalive thread builds them too
Worker = threading.Thread
Inbox = queue.Queue  # events read ahead, at most max_queue: while it is full the socket is no longer read
Empty = queue.Empty


class Connection(Protocol):
    """What a session uses of ``websockets.sync.client.ClientConnection``."""

    close_code: int | None
    close_reason: str | None

    def __iter__(self) -> Iterator[str | bytes]: ...  # ends at a clean close, else ConnectionClosed
    def send(self, message: str | bytes) -> None: ...
    def close(self) -> None: ...


def open_socket(core: SessionCore) -> Connection:
    """Connect to ``core.url`` (a refused handshake raises websockets' exception; see ``handshake_error``)."""
    connect = websockets_module("sync.client").connect
    connection: Any = connect(core.url, **connect_options(core))
    opened: Connection = connection.__enter__()  # entered, as websockets >= 17 asks; left by close()
    return opened


def take(inbox: Inbox[Any], timeout: float | None) -> Any:
    """The next event within ``timeout`` seconds (None: until one comes), else None."""
    try:
        return inbox.get(timeout=timeout)
    except Empty:
        return None


def shut(inbox: Inbox[Any]) -> None:
    """Drop what is unread and put END: whoever waits on the inbox (for room, for an event) goes on."""
    with inbox.mutex:
        inbox.queue.clear()
        inbox.not_full.notify_all()
    inbox.put_nowait(END)


def spawn(work: Callable[[], None], name: str) -> Worker:
    """Run ``work`` beside the caller (a daemon thread: a session never keeps the program alive)."""
    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    return worker


def stop(workers: Sequence[Worker]) -> None:
    """Wait a moment for ``workers`` to end (they end on their own once the connection is over)."""
    for worker in workers:
        if worker is not threading.current_thread():
            worker.join(1.0)


class SyncSession(SessionBase[E, Connection]):
    """What the listen and speak sessions share: open, receive, keepalive, close."""

    def _setup(self) -> None:
        self._lock = Lock()  # the core's frames are built, and its answers read, one at a time
        self._inbox: Inbox[Any] = Inbox(self.core.limits.max_queue)
        self._done = Done()  # the connection is over (the reader saw the end, or the session was shut)
        self._drained = False  # the end was taken from the inbox
        self._consumers = 0  # loops iterating over the session
        self._workers: list[Worker] = []

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self._shutdown()

    def open(self) -> None:
        """Connect (done by ``with``). A refused handshake raises the REST error of its answer."""
        if self._ws is not None:
            return
        self.core.opening()
        try:
            ws = open_socket(self.core)
        except Exception as exc:
            error = handshake_error(self.core, exc)
            self.core.finished(error)
            raise error from None
        self._ws = ws
        self._workers.append(spawn(self._reader, "workers-ai-reader"))
        if self.core.spec.keepalive_seconds is not None:
            self._workers.append(spawn(self._keepalive, "workers-ai-keepalive"))

    def close(self) -> list[E]:
        """Send the model's close message (CloseStream, Close), read what the server still sends until it
        closes (within ``close_timeout``) and return those events; iterating afterwards yields them too."""
        self._connected()
        if not self.core.close_sent and not self._done.is_set():
            self._say(self.core.control, "close")
        limit = self.core.limits.close_timeout
        deadline = time.monotonic() + limit
        rest: list[E] = []
        while not self._drained:
            left = deadline - time.monotonic()
            if left <= 0:
                self._shutdown()
                raise self.core.timed_out(f"the server did not end the session within {limit:g}s of the close message")
            if self._consumers:  # another loop is iterating: it takes the events, this waits for the end
                if not self._done.wait(left):
                    continue
                break
            got = self._next(left)
            if got is END:
                break
            if got is not None:
                rest.append(got)
        self._shutdown()
        self._backlog.extend(rest)
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return rest

    # ------------------------------------------------------------------ receiving

    def __iter__(self) -> Iterator[E]:
        self._consumers += 1
        try:
            while True:
                event = self._next(None)
                if event is END:
                    return
                yield self.core.took(event)
        finally:
            self._consumers -= 1

    @property
    def ended(self) -> bool:
        """The connection is over (events already received can still be read)."""
        return self._done.is_set()

    def receive(self, timeout: float | None = None) -> Any:
        """The next event, or None when nothing came within ``timeout`` or the session is over."""
        got = self._next(timeout)
        return None if got is END else self.core.took(got)

    def poll(self) -> list[Any]:
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

    def _next(self, timeout: float | None) -> Any:
        """The next event, END, or None when nothing came within ``timeout`` (None: no limit but the
        answer deadline, past which the session fails)."""
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
                        self._shutdown()
                        raise self._error from None
                    if until is not None and now >= until:
                        return None
                    ends = [t for t in (until, answer_by) if t is not None]
                    item = take(self._inbox, max(0.0, min(ends) - now) if ends else None)
                    if item is None:
                        continue
            if item is END:
                self._drained = True
                return self._finished()
            return item

    def _reader(self) -> None:
        """Move the frames from the socket into the inbox, as events; then how the connection ended."""
        ws = self._connected()
        code: int | None
        try:
            for data in ws:
                with self._lock:
                    event = self.core.receive(data)
                if self._done.is_set():  # the session was shut: nobody reads any more
                    break
                self._inbox.put(event)
            code, reason = ws.close_code, ws.close_reason or ""
        except Exception as exc:  # ConnectionClosedError, or the socket failing under it
            code, reason = close_of(exc)
        ended = self.core.closed(code, reason)
        self._error = self._error or ended
        self._done.set()
        self._inbox.put(END)

    # ------------------------------------------------------------------ sending

    def _say(self, make: Callable[..., str | bytes], *args: Any) -> None:
        """Send the frame ``make(*args)`` builds, built under the lock the keepalive worker takes too."""
        with self._lock:
            frame = make(*args)
        ws = self._connected()
        try:
            ws.send(frame)
        except Exception as exc:
            code, reason = close_of(exc)
            self._error = self.core.closed(code, reason) or RealtimeError(
                f"{self.model_id}: the session has ended", model_id=self.model_id
            )
            self._done.set()
            raise self._error from None

    def _keepalive(self) -> None:
        while not self._done.is_set():
            with self._lock:
                wait = self.core.keepalive_wait()
                frame = self.core.keepalive()
            if frame is not None:
                try:
                    self._connected().send(frame)
                except Exception:
                    return  # the reader reports how the connection ended
                continue
            if wait is None or self._done.wait(max(wait, 0.05)):
                return

    def _shutdown(self) -> None:
        self._done.set()
        shut(self._inbox)
        if self._ws is not None:
            self._ws.close()
        stop(self._workers)
        self._workers.clear()
        self.core.finished(self._error)


class ListenSession(SyncSession[E]):
    """Speech in, typed events out: ``send(audio)``, ``finalize()``, ``close()``, ``for event in session``."""

    def send(self, audio: bytes | bytearray | memoryview) -> None:
        """Send one chunk of audio (a binary frame); waits while the connection is backed up."""
        self._say(self.core.audio, audio)

    def finalize(self) -> None:
        """Ask for results of all audio sent so far now (the stream stays open)."""
        self._say(self.core.control, "finalize")

    def transcribe(self, audio: AudioSource, *, pace: bool = False, chunk_ms: int = 100) -> Transcript[E]:
        """Send ``audio`` (bytes, a path, a binary file or chunks; in real time when ``pace``), reading what
        comes meanwhile, close, and return a ``Transcript``."""
        pacer = Pacer(self.core, pace)
        events: list[E] = []
        # Read as we go, so the server is never held back by us: after every chunk when paced, else
        # every few chunks (fewer than max_queue events can arrive in between: at most one per chunk).
        every = 1 if pacer.rate is not None else max(1, self.core.limits.max_queue // 4)
        for n, chunk in enumerate(audio_chunks(audio, chunk_size(self.core, chunk_ms)), 1):
            wait = pacer.delay(len(chunk))
            if wait:
                sleep(wait)
            self.send(chunk)
            if n % every == 0:
                events += self.poll()
        events += self.close()
        return collect(self.core, events)


class SpeakSession(SyncSession[bytes | E]):
    """Text in, audio out: ``send_text``, ``flush``, ``clear``, ``close``; iteration yields audio chunks
    (``bytes``) and control events."""

    def send_text(self, text: str) -> None:
        """Send text to speak (a ``Speak`` message); it is spoken on :meth:`flush`."""
        self._say(self.core.text, text)

    def flush(self) -> None:
        """Speak everything sent so far (answered by ``Flushed``)."""
        self._say(self.core.control, "flush")

    def clear(self) -> None:
        """Drop text not yet spoken (answered by ``Cleared``)."""
        self._say(self.core.control, "clear")

    def speak(self, text: str) -> Iterator[bytes]:
        """Send ``text``, flush, and yield its audio until ``Flushed`` (control events are skipped)."""
        self.send_text(text)
        self.flush()
        for item in self.until_flushed():
            if isinstance(item, bytes):
                yield item

    def until_flushed(self) -> Iterator[bytes | E]:
        """Audio (``bytes``) and events until every ``flush()`` sent is answered by ``Flushed`` (the last
        item); the session stays open. Ends at once when no flush is pending."""
        while self.core.flushing:  # the rule: SessionCore.flushing
            item = self._next(None)
            if item is END:
                return
            yield self.core.took(item)
