"""An incremental Server-Sent Events parser (the framing part of the SSE spec, nothing else).

Bytes arrive in arbitrary pieces: a line, or a multi-byte UTF-8 character, may be split across reads.
Lines end with CRLF, LF or CR; ``:`` starts a comment; ``data:`` lines accumulate (joined by LF) until
a blank line dispatches the event. Work is linear in the input size.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["SSEDecoder", "ServerSentEvent"]


class ServerSentEvent:
    """One dispatched event: ``event`` type (default ``message``), ``data``, ``id`` and ``retry``."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, data: str, event: str = "message", id: str | None = None, retry: int | None = None) -> None:
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data[:60]!r})"


class SSEDecoder:
    """Feed bytes with :meth:`feed`, collect events; call :meth:`flush` at end of stream."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pending_cr = False
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        if not chunk:
            return events
        buf = self._buf
        start = len(buf)
        buf += chunk
        if self._pending_cr:
            # A CR ended the last line; an LF right after it belongs to the same line ending.
            self._pending_cr = False
            if buf[start : start + 1] == b"\n":
                del buf[start]
        pos = 0
        n = len(buf)
        search = start
        # Next LF / CR positions are cached so a chunk holding many lines is scanned once (linear).
        lf = buf.find(b"\n", search)
        cr = buf.find(b"\r", search)
        while lf >= 0 or cr >= 0:
            if cr < 0 or (0 <= lf < cr):
                end, nxt = lf, lf + 1
            elif cr == n - 1:
                end, nxt = cr, cr + 1
                self._pending_cr = True
            elif buf[cr + 1] == 0x0A:
                end, nxt = cr, cr + 2
            else:
                end, nxt = cr, cr + 1
            self._line(bytes(buf[pos:end]), events)
            pos = nxt
            if 0 <= lf < nxt:
                lf = buf.find(b"\n", nxt)
            if 0 <= cr < nxt:
                cr = buf.find(b"\r", nxt)
        if pos:
            del buf[:pos]
        return events

    def flush(self) -> list[ServerSentEvent]:
        """End of input: a final line without its newline still counts; an undispatched event is dropped
        (per the spec), but returned here so callers can tell a stream was cut short."""
        events: list[ServerSentEvent] = []
        if self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            self._line(line, events)
        if self._data:
            events.append(self._make())
        return events

    def _make(self) -> ServerSentEvent:
        ev = ServerSentEvent("\n".join(self._data), self._event or "message", self._last_id, self._retry)
        self._data = []
        self._event = ""
        return ev

    def _line(self, raw: bytes, events: list[ServerSentEvent]) -> None:
        if not raw:
            if self._data:
                events.append(self._make())
            else:
                self._event = ""
            return
        line = raw.decode("utf-8", "replace")
        if line[0] == ":":
            return
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)


def iter_events(chunks: Iterator[bytes]) -> Iterator[ServerSentEvent]:
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.flush()
