"""The parsing of a streamed reply into events, shared by the sync and async streams (no I/O: each
stream feeds it the bytes its own transport reads)."""

from __future__ import annotations

import collections
import itertools
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import APIConnectionError, APIError, APITimeoutError, ResponseTooLargeError, StreamError
from .envelope import media_type, unwrap
from .error_replies import DECODE_ERRORS, details_from, error_details, error_for, format_details
from .jsonview import as_list
from .sse import ServerSentEvent, SSEDecoder
from .stream_events import (
    EVENT_TEXT,
    Chunk,
    EventJoiner,
    StreamEvent,
    decode_chunk,
    event_decoder,
    event_from,
    is_done,
    loose,
    text_of,
    tool_call_deltas,
)
from .usage import Usage

if TYPE_CHECKING:
    from .telemetry import Call

__all__ = ["DRAIN_LIMIT", "DRAIN_SECONDS", "WANT_BODY", "WANT_BYTES", "StreamParser"]

DRAIN_LIMIT = 1 << 20  # after [DONE], read at most this much to put the connection back in the pool
DRAIN_SECONDS = 0.25  # ... and wait at most this long for it; a server that keeps the body open loses the connection
_decode = msgspec.json.Decoder().decode
WANT_BYTES = 0  # what the parser asks its reader for: the next bytes
WANT_BODY = 1  # ... or the whole body


class StreamParser:
    """What sync and async event streams share: state and the parsing of a reply into events (no I/O)."""

    def __init__(
        self,
        response: Any,
        *,
        model_id: str,
        idle_timeout: float = 60.0,
        total_timeout: float | None = None,
        max_event_bytes: int = 16 * 1024 * 1024,
        max_response_bytes: int = 256 * 1024 * 1024,
        on_messages: Callable[[list[Any]], None] | None = None,
        on_end: Callable[[Usage | None], None] | None = None,
        call: Call | None = None,
    ) -> None:
        self._call = call  # the call's span (telemetry on): ended with the stream, told its first chunk
        self._failure: BaseException | None = None
        self._on_end = on_end  # told the last usage seen when the stream is closed (``ai.usage``)
        self._resp = response
        self.model_id = model_id
        self._idle = idle_timeout
        self._until = time.monotonic() + total_timeout if total_timeout is not None else float("inf")
        self._total = total_timeout
        self._max_event = max_event_bytes
        self._max_reply = max_response_bytes
        self._on_messages = on_messages
        self._iter: Iterator[StreamEvent] | None = None
        self._current: list[StreamEvent] = []
        self.closed = False
        self.done = False
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self.cf_ray: str | None = response.headers.get("cf-ray")
        self.last_event_id: str | None = None
        self.bytes_read = 0

    def _joiner(self) -> EventJoiner:
        """What ``collect()`` joins events with: bounded by ``max_response_bytes``, like a whole reply."""
        return EventJoiner(self._max_reply, self.model_id)

    def __repr__(self) -> str:
        state = "done" if self.done else "closed" if self.closed else "open"
        return f"<{type(self).__name__} {self.model_id} {state}>"

    def _parse(self) -> Generator[list[StreamEvent] | int, bytes, None]:
        """The events of the reply, sans I/O: yields ``WANT_BYTES`` (send the next bytes, ``b\"\"`` at the
        end) or ``WANT_BODY`` (send the whole body), and lists of events for the reader to hand out."""
        kind = media_type(self.headers, default="")
        if kind == "application/json" or kind.endswith("+json"):
            event = self._json_event((yield WANT_BODY))
            self._first_events()
            yield [event]
            return
        if kind and kind != "text/event-stream":
            raise StreamError(
                f"{self.model_id}: expected text/event-stream, got {kind}",
                status=self.status,
                cf_ray=self.cf_ray,
                model_id=self.model_id,
            )
        decoder = SSEDecoder(max_event_bytes=self._max_event)
        # Bytes after the last blank line, while events are split here (``whole``): kept as pieces
        # and joined once a blank line arrives, so a long event read in small pieces costs linear time.
        pieces: list[bytes] = []
        held = 0
        whole = True
        first = True
        while not self.closed:
            chunk = yield WANT_BYTES
            if not chunk:
                break
            failure: APIError | None = None
            events: list[StreamEvent] | None = None
            if whole and b"\r" in chunk:
                whole = False  # CR line endings: from here on the full parser takes every byte
                chunk = b"".join([*pieces, chunk])
                pieces, held = [], 0
            if not whole:
                events, failure = self._slow(chunk, decoder)
            else:
                if b"\n\n" not in chunk and not (pieces and chunk[:1] == b"\n" and pieces[-1][-1:] == b"\n"):
                    pieces.append(chunk)
                    held += len(chunk)
                    if held > self._max_event:
                        raise self._too_large(None)
                    continue
                data = b"".join([*pieces, chunk]) if pieces else chunk
                end = data.rfind(b"\n\n")
                rest = data[end + 2 :]
                pieces, held = ([rest], len(rest)) if rest else ([], 0)
                if held > self._max_event:
                    raise self._too_large(None)
                events = self._fast(data[:end], decoder)
                if events is None:
                    events, failure = self._slow(data[: end + 2], decoder)
            if events:
                if first:
                    first = False
                    self._first_events()
                yield events
            if failure is not None:
                raise failure
            if self.done:
                return
        if self.closed:
            return
        cut = ""
        for sse in (decoder.feed(b"".join(pieces)) if pieces else []) + decoder.flush():
            if is_done(sse):
                self.done = True
                return
            cut = f"; its last event was cut short ({sse.data[:80]!r})"
        raise StreamError(
            f"{self.model_id}: the stream ended without [DONE]{cut}; the reply may be incomplete",
            status=self.status,
            cf_ray=self.cf_ray,
            model_id=self.model_id,
        )

    def _report_end(self) -> None:
        """On close: tell ``on_end`` the last usage read (the usage event is the last or next to last one)
        and end the call's span (ended normally, closed early, or failed)."""
        seen = [ev.usage for ev in self._current if ev.usage is not None]
        if self._on_end is not None:
            self._on_end(seen[-1] if seen else None)
        call = self._call
        if call is not None:
            self._call = None
            reasons = [ev.finish_reason for ev in self._current if ev.finish_reason]
            call.end(
                error=self._failure,
                usage=seen[-1] if seen else None,
                reasons=reasons,
                text=None,
                extra={"workers_ai.stream.completed": self.done, "workers_ai.stream.bytes": self.bytes_read},
            )

    def _failed(self, exc: BaseException) -> None:
        """The stream stopped on ``exc`` (recorded on its span when it closes)."""
        if self._failure is None and not isinstance(exc, GeneratorExit):
            self._failure = exc

    def _first_events(self) -> None:
        call = self._call
        if call is not None:
            call.first_chunk()

    def _read_failure(self, exc: APIConnectionError, idle_end: float) -> APIConnectionError | None:
        """The error to raise for a failed read (None when the stream was closed meanwhile)."""
        if self.closed:
            return None
        # The transport closed the connection already; the stream is over, so its end is reported here
        # (usage counted, span ended with this error): close() finds it closed and does nothing more.
        self.closed = True
        failure: APIConnectionError
        if isinstance(exc, APITimeoutError):
            if idle_end <= self._until:
                why = f"no event for {self._idle:g}s (stream_idle_timeout)"
            else:
                why = f"the stream took longer than {self._total:g}s (stream_timeout)"
            failure = APITimeoutError(f"{self.model_id}: {why}")
        else:
            failure = APIConnectionError(f"{self.model_id}: the stream broke off ({exc})")
        self._failed(failure)
        self._report_end()
        return failure

    def _fast(self, block: bytes, decoder: SSEDecoder) -> list[StreamEvent] | None:
        """The events of ``block`` (whole events, the final blank line cut off) when each is one plain
        ``data: {...}`` line of the classic shape; None for anything else (the full parser takes it)."""
        if not block.startswith(b"data: ") or b"\r" in block:
            return None
        payloads = block[6:].split(b"\n\ndata: ")
        if block.count(b"\n") != 2 * len(payloads) - 2:
            return None  # multi-line data, other fields, comments or extra blank lines
        if payloads[-1] == b"[DONE]":
            payloads.pop()
            self.done = True
        try:
            # A [DONE] anywhere else, text that is not JSON, or an odd shape fails here: the parser takes it.
            events = list(map(event_decoder().decode, payloads))
        except DECODE_ERRORS:
            self.done = False
            return None
        # Error objects and OpenAI-style chunks decode as events without text; only then look closer.
        if "" in map(EVENT_TEXT, events) and (b'"error' in block or b'"success"' in block or b'"choices"' in block):
            self.done = False
            return None
        collections.deque(map(setattr, events, itertools.repeat("raw"), payloads), maxlen=0)
        last_id = decoder.last_event_id
        if last_id is not None:
            for event in events:
                event.id = last_id
            self.last_event_id = last_id
        return events

    def _slow(self, data: bytes, decoder: SSEDecoder) -> tuple[list[StreamEvent], APIError | None]:
        """Events by the full SSE parser; an error event ends the list and is returned to be raised
        after the events before it were delivered."""
        events: list[StreamEvent] = []
        for sse in decoder.feed(data):
            if is_done(sse):
                self.done = True
                break
            try:
                event = self._event(sse)
            except APIError as exc:
                return events, exc
            if event is not None:
                events.append(event)
        return events, None

    def _too_large(self, exc: ResponseTooLargeError | None) -> ResponseTooLargeError:
        why = (
            str(exc) if exc is not None else f"a server-sent event is longer than max_event_bytes ({self._max_event:,})"
        )
        return ResponseTooLargeError(
            f"{self.model_id}: {why}", status=self.status, cf_ray=self.cf_ray, model_id=self.model_id
        )

    def _json_event(self, body: bytes) -> StreamEvent:
        """The one event of a JSON envelope sent in reply to a stream request."""
        self.done = True
        what = "reply to a stream request"
        result, messages = unwrap(self.status, self.headers, body, model_id=self.model_id, what=what)
        if self._on_messages is not None:
            self._on_messages(messages)
        return event_from(result)

    def _event(self, sse: ServerSentEvent) -> StreamEvent | None:
        text = sse.data
        self.last_event_id = sse.id
        if sse.event != "message":
            if sse.event == "error":
                raise self._error(loose(text))
        elif not text or text.isspace():
            return None  # keep-alive
        try:
            chunk = decode_chunk(text)
        except msgspec.ValidationError:
            return self._odd_event(sse)  # valid JSON of another shape
        except DECODE_ERRORS:
            if not text or text.isspace():
                return None
            return StreamEvent(raw=text.encode(), event=sse.event, id=sse.id)
        if chunk.error is not None or chunk.errors is not None or chunk.success is not None:
            return self._odd_event(sse)
        response = chunk.response
        text_out = response if type(response) is str else text_of(response)
        if chunk.choices is None:
            return StreamEvent(
                text_out,
                "",
                tool_call_deltas(chunk.tool_calls) if chunk.tool_calls else (),
                chunk.usage,
                None,
                text.encode(),
                sse.event,
                sse.id,
            )
        return self._choice_event(chunk, text_out, sse)

    def _choice_event(self, chunk: Chunk, text: str, sse: ServerSentEvent) -> StreamEvent:
        reasoning = ""
        calls: list[Any] = []
        finish: str | None = None
        choices = chunk.choices
        if choices:
            first = choices[0]
            delta = first.delta if first.delta is not None else first.message
            if delta is not None:
                text += text_of(delta.content)
                reasoning = text_of(delta.reasoning_content) or text_of(delta.reasoning)
                calls = as_list(delta.tool_calls) or []
            text += text_of(first.text)
            if isinstance(first.finish_reason, str):
                finish = first.finish_reason
        more = as_list(chunk.tool_calls)
        if more:
            calls = calls + more if calls else more
        deltas = tool_call_deltas(calls) if calls else ()
        return StreamEvent(text, reasoning, deltas, chunk.usage, finish, sse.data.encode(), sse.event, sse.id)

    def _odd_event(self, sse: ServerSentEvent) -> StreamEvent | None:
        """An event that is not a plain chunk: an error object, or JSON of another shape."""
        data = loose(sse.data)
        if error_details(data) is not None:
            raise self._error(data)
        return event_from(data, event=sse.event, id=sse.id, raw=sse.data.encode())

    def _error(self, data: Any) -> APIError:
        details = error_details(data)
        if details is None:
            details = details_from(data) if data not in (None, "") else []
        codes = [d.code for d in details if d.code is not None]
        cls = error_for(None, codes) if codes else StreamError
        if cls is APIError:
            cls = StreamError
        return cls(
            f"{self.model_id}: error in the stream: {format_details(details) or 'no details'}",
            status=self.status,
            errors=details,
            cf_ray=self.cf_ray,
            model_id=self.model_id,
        )
