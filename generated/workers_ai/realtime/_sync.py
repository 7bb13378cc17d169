"""The blocking driver: :class:`ListenSession` and :class:`SpeakSession` on ``websockets.sync.client``.

The I/O only: every decision is :class:`~._core.SessionCore`'s. ``websockets`` reads the socket in its
own thread (at most ``max_queue`` frames ahead: then the server is held back); a second small thread
sends KeepAlive when the stream has been quiet. ``send`` blocks while the socket is full.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from types import TracebackType
from typing import Any, TypeVar

from ..errors import RealtimeError
from ._audio import AudioSource, Pacer, Transcript, audio_chunks, chunk_size, collect
from ._core import END, SessionBase
from ._wsopts import SyncConnection, close_of, connect_options, handshake_error, websockets_module

__all__ = ["ListenSession", "SpeakSession", "SyncSession"]

E = TypeVar("E")
_NOTHING: Any = object()  # no frame within the wait


class SyncSession(SessionBase[E, SyncConnection]):
    """What the listen and speak sessions share: open, receive, keepalive, close."""

    def _setup(self) -> None:
        self._send_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        self._stack = ExitStack()

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> SyncSession[E]:
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
        # a function in websockets 15-16, a context-manager class in 17
        connect = websockets_module("sync.client").connect
        self.core.opening()
        try:
            # Entered as a context manager (websockets >= 17 warns otherwise); left in _shutdown.
            self._ws = self._stack.enter_context(connect(self.core.url, **connect_options(self.core)))
        except Exception as exc:
            error = handshake_error(self.core, exc)
            self.core.finished(error)
            raise error from None
        if self.core.spec.keepalive_seconds is not None:
            self._ticker = threading.Thread(target=self._keepalive, name="workers-ai-keepalive", daemon=True)
            self._ticker.start()

    def close(self) -> list[Any]:
        """Send the model's close message, read what the server still sends until it closes (within
        ``close_timeout``) and return those events; iterating afterwards yields them too."""
        ws = self._connected()
        if not self._done.is_set():
            if not self.core.close_sent:
                self._say(self.core.control, "close")
            deadline = time.monotonic() + self.core.limits.close_timeout
            while not self._done.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    self._shutdown()
                    raise self.core.timed_out(
                        f"the server did not end the session within {self.core.limits.close_timeout:g}s "
                        "of the close message"
                    )
                if self._read_lock.acquire(timeout=min(left, 0.05)):
                    try:
                        got = self._read(left)
                    finally:
                        self._read_lock.release()
                    if got is not _NOTHING and got is not END:
                        self._backlog.append(got)
                else:
                    self._done.wait(min(left, 0.05))  # another thread is reading: it will see the end
        self._shutdown()
        del ws
        if self._error is not None:
            raise self._error
        return list(self._backlog)

    # ------------------------------------------------------------------ receiving

    def __iter__(self) -> Iterator[Any]:
        while True:
            event = self._next(None)
            if event is END:
                return
            yield self.core.took(event)

    @property
    def ended(self) -> bool:
        """The connection is over (events already received can still be read)."""
        return self._done.is_set()

    def receive(self, timeout: float | None = None) -> Any:
        """The next event, or None when nothing came within ``timeout`` or the session is over."""
        got = self._next(timeout)
        return None if got is END else self.core.took(got)

    def _next(self, timeout: float | None) -> Any:
        if self._backlog:
            return self._backlog.popleft()
        if self._done.is_set():
            return self._finished()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._read_lock:
            while True:
                if self._backlog:
                    return self._backlog.popleft()
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                got = self._read(wait)
                if got is END:
                    return self._finished()
                if got is not _NOTHING:
                    return got
                if deadline is not None and time.monotonic() >= deadline:
                    return None

    def poll(self) -> list[Any]:
        """Every event already received, without waiting."""
        out: list[Any] = []
        while True:
            got = self._next(0)
            if got is None or got is END:
                return out
            out.append(self.core.took(got))

    def _read(self, wait: float | None) -> Any:
        """One frame within ``wait`` seconds (None: until one comes or the answer deadline passes)."""
        ws = self._connected()
        answer_by = self.core.answer_deadline()
        if answer_by is not None:
            left = max(0.0, answer_by - time.monotonic())
            wait = left if wait is None else min(wait, left)
        try:
            data = ws.recv(timeout=wait)
        except TimeoutError:
            if answer_by is not None and time.monotonic() >= answer_by:
                self._error = self.core.timed_out(f"the server sent nothing for {self.core.answer_timeout:g}s")
                self._shutdown()
                raise self._error from None
            return _NOTHING
        except Exception as exc:  # ConnectionClosed, or the socket failing under it
            code, reason = close_of(exc)
            self._error = self.core.closed(code, reason)
            self._done.set()
            return END
        return self.core.receive(data)

    # ------------------------------------------------------------------ sending

    def _say(self, make: Callable[..., str | bytes], *args: Any) -> None:
        """Send the frame ``make(*args)`` builds, built under the lock the keepalive thread takes too."""
        with self._send_lock:
            frame = make(*args)
        self._send(frame)

    def _send(self, frame: str | bytes) -> None:
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
            with self._send_lock:
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
        if self._ws is not None:
            self._stack.close()
        self.core.finished(self._error)
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(1.0)


class ListenSession(SyncSession[E]):
    """Speech in, typed events out: ``send(audio)``, ``finalize()``, ``close()``, ``for event in session``."""

    def __enter__(self) -> ListenSession[E]:
        self.open()
        return self

    def __iter__(self) -> Iterator[E]:
        return super().__iter__()

    def send(self, audio: bytes | bytearray | memoryview) -> None:
        """Send one chunk of audio (a binary frame); blocks while the connection is backed up."""
        self._say(self.core.audio, audio)

    def finalize(self) -> None:
        """Ask for results of all audio sent so far now (the stream stays open)."""
        self._say(self.core.control, "finalize")

    def close(self) -> list[E]:
        """Send CloseStream, drain the remaining results and return them."""
        return super().close()

    def transcribe(self, audio: AudioSource, *, pace: bool = False, chunk_ms: int = 100) -> Transcript[E]:
        """Send ``audio`` (bytes, a path, a binary file or chunks), close, and return a ``Transcript``."""
        return transcribe_sync(self, audio, pace=pace, chunk_ms=chunk_ms)


class SpeakSession(SyncSession[E]):
    """Text in, audio out: ``send_text``, ``flush``, ``clear``, ``close``; iteration yields audio chunks
    (``bytes``) and control events."""

    def __enter__(self) -> SpeakSession[E]:
        self.open()
        return self

    def __iter__(self) -> Iterator[bytes | E]:
        return super().__iter__()

    def send_text(self, text: str) -> None:
        self._say(self.core.text, text)

    def flush(self) -> None:
        """Speak everything sent so far (answered by ``Flushed``)."""
        self._say(self.core.control, "flush")

    def clear(self) -> None:
        """Drop text not yet spoken (answered by ``Cleared``)."""
        self._say(self.core.control, "clear")

    def close(self) -> list[bytes | E]:
        return super().close()

    def speak(self, text: str) -> Iterator[bytes]:
        """Send ``text``, flush, and yield its audio until ``Flushed`` (control events are skipped)."""
        return speak_chunks(self, text)

    def until_flushed(self) -> Iterator[bytes | E]:
        """Audio (``bytes``) and events until every ``flush()`` sent is answered by ``Flushed`` (the last
        item); the session stays open. Ends at once when no flush is pending."""
        while self.core.flushing:  # the rule: SessionCore.flushing
            item = self._next(None)
            if item is END:
                return
            yield self.core.took(item)


def transcribe_sync(session: ListenSession[Any], audio: AudioSource, *, pace: bool, chunk_ms: int) -> Transcript[Any]:
    pacer = Pacer(session.core, pace)
    events: list[Any] = []
    # Read as we go, so the server is never held back by us: after every chunk when paced, else
    # every few chunks (fewer than max_queue events can arrive in between: at most one per chunk).
    every = 1 if pacer.rate is not None else max(1, session.core.limits.max_queue // 4)
    for n, chunk in enumerate(audio_chunks(audio, chunk_size(session.core, chunk_ms)), 1):
        wait = pacer.delay(len(chunk))
        if wait:
            time.sleep(wait)
        session.send(chunk)
        if n % every == 0:
            events += session.poll()
    events += session.close()
    return collect(session.core, events)


def speak_chunks(session: SpeakSession[Any], text: str) -> Iterator[bytes]:
    """Send ``text`` and Flush; yield the audio until the server says ``Flushed``."""
    session.send_text(text)
    session.flush()
    for item in session.until_flushed():
        if isinstance(item, bytes):
            yield item
