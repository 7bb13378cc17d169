"""An incremental Server-Sent Events parser: the framing part of the SSE spec, nothing else.

Bytes arrive in arbitrary pieces, so a line or a multi-byte UTF-8 character may be split across
reads. Lines end with CRLF, LF or CR (a CR at the end of one read and an LF at the start of the next
are one line ending). A line starting with ``:`` is a comment; ``data:`` lines accumulate, joined by
LF, until a blank line dispatches the event; ``event:``, ``id:`` and ``retry:`` set the other fields;
unknown fields are ignored; one leading byte-order mark is dropped.

The work is linear in the input: an unterminated line is appended to a buffer and copied out once,
when its line ending arrives, and each complete block is decoded and split by C-level ``bytes``/``str``
methods, so a long line fed in tiny reads costs about what it costs fed at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from ..errors import ResponseTooLargeError

__all__ = ["SSEDecoder", "ServerSentEvent", "iter_events"]


class ServerSentEvent(msgspec.Struct, gc=False):
    """One dispatched event: ``event`` type (``message`` unless set), ``data``, last ``id`` and ``retry``."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes with :meth:`feed` and get the events they complete; call :meth:`flush` at the end.

    With ``max_event_bytes``, an unfinished line or event that grows past it raises
    :class:`~workers_ai.errors.ResponseTooLargeError` (memory stays bounded whatever the server sends;
    the count may run over by one fed chunk, never more).
    """

    __slots__ = ("_data", "_event", "_last_id", "_max", "_open", "_pending", "_retry", "_skip_lf", "_started")

    def __init__(self, *, max_event_bytes: int | None = None) -> None:
        self._max = max_event_bytes
        self._open = 0  # characters fed since the event being built began (an upper bound)
        self._pending = bytearray()  # the current, unterminated line (amortised O(1) appends)
        self._skip_lf = False  # the last read ended with CR: an LF opening the next one is its pair
        self._started = False  # whether the byte-order-mark check has been done
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str | None:
        """The value of the last ``id:`` field seen (it carries over to later events, per the spec)."""
        return self._last_id

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ServerSentEvent]:
        """Parse ``chunk`` and return the events it completes (possibly none)."""
        if not chunk:
            return []
        data = bytes(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == 0x0A:
                data = data[1:]
                if not data:
                    return []
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if last < 0:
            self._pending += data
            if self._max is not None and len(self._pending) + self._open > self._max:
                self._overflow()
            return []
        block = data[: last + 1]
        if self._pending:
            self._pending += block
            block = bytes(self._pending)
            self._pending = bytearray()
        if last + 1 < len(data):
            self._pending += data[last + 1 :]
        elif data[last] == 0x0D:
            self._skip_lf = True
        text = block.decode("utf-8", "replace")
        events = self._lines(text)
        if self._max is not None:
            if not self._data:
                self._open = 0
            elif events:
                self._open = len(text)
            else:
                self._open += len(text)
            if self._open + len(self._pending) > self._max:
                self._overflow()
        return events

    def _overflow(self) -> None:
        self._pending = bytearray()
        self._data = []
        raise ResponseTooLargeError(f"a server-sent event is longer than max_event_bytes ({self._max:,})")

    def flush(self) -> list[ServerSentEvent]:
        """End of input. A last line without its line ending still counts.

        The spec drops an event that was not ended by a blank line; it is returned here instead (as
        the last item) so callers can tell a stream was cut short, or accept a final ``data: [DONE]``
        whose blank line never came. Use :attr:`incomplete` before calling to know whether one is pending.
        """
        events: list[ServerSentEvent] = []
        if self._pending:
            tail = self._pending.decode("utf-8", "replace")
            self._pending = bytearray()
            events = self._lines(tail + "\n")
        self._skip_lf = False
        if self._data:
            events.append(self._dispatch())
        self._event = ""
        return events

    @property
    def incomplete(self) -> bool:
        """Whether bytes or ``data`` lines are waiting for the line ending or blank line that completes them."""
        return bool(self._pending or self._data)

    def _dispatch(self) -> ServerSentEvent:
        data = self._data
        ev = ServerSentEvent(
            data[0] if len(data) == 1 else "\n".join(data), self._event or "message", self._last_id, self._retry
        )
        self._data = []
        self._event = ""
        return ev

    def _lines(self, text: str) -> list[ServerSentEvent]:
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        lines.pop()  # the text ends with a line ending, so the last piece is always empty
        events: list[ServerSentEvent] = []
        # The hot loop works on locals (one data line then a blank line is the common event) and
        # writes the state back once; rarer fields go through _field.
        data = self._data
        kind = self._event
        for line in lines:
            if not line:
                if data:
                    events.append(
                        ServerSentEvent(
                            data[0] if len(data) == 1 else "\n".join(data),
                            kind or "message",
                            self._last_id,
                            self._retry,
                        )
                    )
                    data = []
                kind = ""
            elif line.startswith("data:"):
                data.append(line[6:] if line[5:6] == " " else line[5:])
            elif line[0] != ":":
                self._data, self._event = data, kind
                self._field(line)
                data, kind = self._data, self._event
        self._data, self._event = data, kind
        return events

    def _field(self, line: str) -> None:
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":  # a bare "data" line (no colon) adds an empty line to the data
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit() and len(value) <= 9:  # longer: not a delay anyone means
                self._retry = int(value)


def iter_events(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Every event in a byte stream, including an unfinished last one (see :meth:`SSEDecoder.flush`)."""
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.flush()
