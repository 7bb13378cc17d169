"""Typed iteration over a streamed (``text/event-stream``) reply with the blocking transport: the
events and their parsing are :mod:`.._core.stream_events` and :mod:`.._core.stream_parser`.
``AsyncEventStream``'s methods are printed from :class:`EventStream`'s.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING

from .._core.stream_events import StreamEvent, StreamResult
from .._core.stream_parser import DRAIN_LIMIT, DRAIN_SECONDS, WANT_BODY, WANT_BYTES, StreamParser
from ..errors import APIConnectionError, ResponseTooLargeError

if TYPE_CHECKING:
    from .transport import Response

__all__ = ["EventStream", "StreamEvent", "StreamResult"]


class EventStream(StreamParser):
    """Iterator of :class:`StreamEvent` over a live reply; use it in ``with`` to close it early.

    - Ends cleanly at ``data: [DONE]``; the connection then goes back to the pool.
    - A stream that stops without ``[DONE]`` raises :class:`~workers_ai.errors.StreamError` after the
      events it did deliver; a broken connection raises :class:`~workers_ai.errors.APIConnectionError`.
    - Deadlines: ``idle_timeout`` seconds at most between events (comments and keep-alive bytes do not
      count as events) and, when set, ``total_timeout`` for the whole stream; either raises
      :class:`~workers_ai.errors.APITimeoutError`. Time the caller spends between events is not counted.
    - One event (or one line) larger than ``max_event_bytes`` raises
      :class:`~workers_ai.errors.ResponseTooLargeError` and drops the connection.
    - An error object sent mid-stream (``event: error``, ``{"error": ...}``, ``{"errors": [...]}``)
      raises the error class its Workers AI code maps to (e.g. ``CapacityError`` for 3040), otherwise
      ``StreamError``; ``.code`` and ``.errors`` carry the details.
    - Leaving a ``with`` block (or calling :meth:`close`) before the end closes the socket, so the
      rest of the reply is never read. A stream neither read to the end nor closed holds its
      connection until it is garbage-collected, when it is closed the same way.
    - After ``[DONE]`` the end of the body is read for at most a fraction of a second so the connection
      can be reused; a server that keeps the body open longer gets the connection closed instead.
    - A server that answers a stream request with a JSON envelope instead gives one event holding its
      ``result``.
    """

    _resp: Response

    def __enter__(self) -> EventStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # Never iterated and not closed: give the connection back instead of holding it until the
        # response object itself is collected. Guarded: this may run half-built or at shutdown.
        try:
            if not getattr(self, "closed", True):
                self.close()
        except Exception:
            pass

    def close(self) -> None:
        """Stop reading. An unfinished stream's socket is closed; a finished one's connection is reused."""
        if self.closed:
            return
        self.closed = True
        self._report_end()
        self._current.clear()  # events decoded but not yet handed out are not delivered after close()
        if self.done and self._drain():
            self._resp.release()
            return
        self._resp.close()

    def _drain(self) -> bool:
        """Read what follows ``[DONE]`` (normally only the end of the chunked body) within a short time
        bound; True when the body ended, so the connection can go back to the pool."""
        deadline = time.monotonic() + DRAIN_SECONDS
        left = DRAIN_LIMIT
        try:
            while left > 0:
                chunk = self._resp.read_chunk(deadline)
                if not chunk:
                    return True
                left -= len(chunk)
        except APIConnectionError:
            return False
        return False

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._iter is None:
            # Events are decoded a read at a time into lists; chaining them keeps the per-event step in C.
            self._iter = itertools.chain.from_iterable(self._batches())
        return self._iter

    def __next__(self) -> StreamEvent:
        return next(iter(self))

    # ------------------------------------------------------------------ reading

    def _read(self, since: float) -> bytes:
        """The next bytes, waiting at most ``idle_timeout`` after ``since`` and never past the total deadline."""
        idle_end = since + self._idle
        try:
            chunk = self._resp.read_chunk(min(idle_end, self._until))
        except APIConnectionError as exc:
            failure = self._read_failure(exc, idle_end)
            if failure is None:
                return b""
            raise failure from None
        self.bytes_read += len(chunk)
        return chunk

    def _batches(self) -> Iterator[list[StreamEvent]]:
        parser = self._parse()
        try:
            want = next(parser)
            since = time.monotonic()
            while True:
                if want == WANT_BYTES:
                    want = parser.send(self._read(since))
                elif want == WANT_BODY:
                    want = parser.send(self._read_all())
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
            self.close()

    def _read_all(self) -> bytes:
        body = self._resp.read_all(self._max_reply)
        self.bytes_read += len(body)
        return body

    # ------------------------------------------------------------------ joining

    def collect(self) -> StreamResult:
        """Read the rest of the stream and join it: text, reasoning, merged tool calls, final usage."""
        joined = self._joiner()
        try:
            for ev in self:
                joined.add(ev)
        except ResponseTooLargeError:
            self.close()
            raise
        return joined.result()

    def text(self) -> str:
        """Read the rest of the stream and return the joined text."""
        return self.collect().text
