"""Typed iteration over a streamed (``text/event-stream``) model reply.

Two chunk shapes are read, in the same stream if need be: the classic Workers AI one,
``{"response": "...", "p": "<padding>", "tool_calls": [...]}``, and OpenAI-style
``chat.completion.chunk`` events (``choices[0].delta.content`` / ``reasoning_content`` /
``tool_calls``). Either may carry ``usage``; Workers AI ends with ``{"response": "", "usage": {...}}``
and then ``data: [DONE]``.

Each event is decoded once, by msgspec, straight into a small typed chunk; only unusual events (error
objects, odd shapes) take the slower path through plain JSON values.
"""

from __future__ import annotations

import collections
import itertools
import operator
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .._core.envelope import media_type, unwrap
from .._core.jsonview import as_list, as_object
from .._core.sse import ServerSentEvent, SSEDecoder
from .._tools.toolcall import ToolCall, decode_arguments
from .transport import Response

if TYPE_CHECKING:
    from .._aio.transport import AsyncResponse
from .._core.usage import Usage, usage_from
from ..errors import (
    DECODE_ERRORS,
    APIConnectionError,
    APIError,
    APITimeoutError,
    ResponseTooLargeError,
    StreamError,
    details_from,
    error_details,
    error_for,
    format_details,
)

__all__ = [
    "EventJoiner",
    "EventStream",
    "StreamParser",
    "StreamEvent",
    "StreamResult",
    "ToolCall",
    "ToolCallMerger",
    "Usage",
    "event_from",
]

DRAIN_LIMIT = 1 << 20  # after [DONE], read at most this much to put the connection back in the pool
DRAIN_SECONDS = 0.25  # ... and wait at most this long for it; a server that keeps the body open loses the connection
_decode = msgspec.json.Decoder().decode
WANT_BYTES = 0  # what the parser asks its reader for: the next bytes
WANT_BODY = 1  # ... or the whole body
_encode = msgspec.json.Encoder().encode


class _Delta(msgspec.Struct, gc=False):
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    tool_calls: Any = None


class _Choice(msgspec.Struct, gc=False):
    delta: _Delta | None = None
    message: _Delta | None = None
    text: Any = None
    finish_reason: Any = None


class _Chunk(msgspec.Struct, gc=False):
    """The fields of one event this module reads; anything else in it is skipped while decoding."""

    response: Any = None
    tool_calls: Any = None
    usage: Usage | None = None
    choices: list[_Choice] | None = None
    error: Any = None
    errors: Any = None
    success: Any = None


_CHUNK_DECODER: list[msgspec.json.Decoder[_Chunk]] = []  # built by the first stream: typed decoders cost import time


def _decode_chunk(text: bytes | str) -> _Chunk:
    if not _CHUNK_DECODER:
        _CHUNK_DECODER.append(msgspec.json.Decoder(_Chunk))
    return _CHUNK_DECODER[0].decode(text)


class _PartialCall(msgspec.Struct):
    """A tool call while its stream fragments arrive (``arguments`` JSON text or an object so far)."""

    name: str = ""
    arguments: Any = None
    id: str | None = None
    type: str = "function"
    index: int | None = None

    def finish(self) -> ToolCall:
        return ToolCall(self.name, decode_arguments(self.arguments, self.name), self.id, self.type, self.index)


class StreamEvent(
    msgspec.Struct,
    gc=False,
    rename={"text": "response", "raw": "~sse~raw", "event": "~sse~event", "id": "~sse~id"},
):
    """One event of a model stream, whichever chunk shape it came in.

    ``text`` is the text delta (``response`` or ``choices[0].delta.content``), ``reasoning`` the
    ``reasoning_content`` delta, ``tool_calls`` the raw tool-call fragments, a tuple (merge them with
    :class:`ToolCallMerger` or :meth:`EventStream.collect`), ``usage`` the token counts when the event
    carries them (the final event does), ``event``/``id`` the SSE fields, ``raw`` the event's data as
    sent and :attr:`data` the whole decoded JSON (decoded when asked for).

    A classic Workers AI chunk decodes straight into this struct (its ``response`` is ``text``), which
    is what keeps a stream's per-event cost close to a bare ``msgspec`` decode.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[Any, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    raw: bytes = b""
    event: str = "message"
    id: str | None = None

    @property
    def data(self) -> Any:
        """The event's data as decoded JSON (the text itself when it is not JSON)."""
        try:
            return _decode(self.raw)
        except DECODE_ERRORS:
            return self.raw.decode("utf-8", "replace")


_EVENT_DECODER: list[msgspec.json.Decoder[StreamEvent]] = []  # built by the first stream, like _CHUNK_DECODER


def _event_decoder() -> msgspec.json.Decoder[StreamEvent]:
    if not _EVENT_DECODER:
        _EVENT_DECODER.append(msgspec.json.Decoder(StreamEvent))
    return _EVENT_DECODER[0]


_TEXT = operator.attrgetter("text")


class StreamResult(msgspec.Struct):
    """A whole stream joined: text, reasoning, merged tool calls and the last usage seen."""

    text: str
    reasoning: str = ""
    tool_calls: list[ToolCall] = []
    usage: Usage | None = None
    finish_reason: str | None = None
    events: int = 0


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""


def event_from(data: Any, *, event: str = "message", id: str | None = None, raw: bytes | None = None) -> StreamEvent:
    """The :class:`StreamEvent` for one decoded chunk (either shape); ``raw`` is its JSON text when known."""
    if not isinstance(data, dict):
        text = data if isinstance(data, str) else ""
        return StreamEvent(text, raw=_encode(data) if raw is None else raw, event=event, id=id)
    obj = cast("dict[str, Any]", data)
    response = obj.get("response")
    text = response if type(response) is str else _text_of(response)
    reasoning = ""
    calls: list[Any] = []
    finish: str | None = None
    if "choices" in obj:
        choices = as_list(obj["choices"])
        first = as_object(choices[0]) if choices else None
        if first is not None:
            delta = as_object(first.get("delta")) or as_object(first.get("message"))
            if delta is not None:
                text += _text_of(delta.get("content"))
                reasoning = _text_of(delta.get("reasoning_content")) or _text_of(delta.get("reasoning"))
                calls = as_list(delta.get("tool_calls")) or []
            text += _text_of(first.get("text"))
            reason = first.get("finish_reason")
            if isinstance(reason, str):
                finish = reason
    more = as_list(obj.get("tool_calls"))
    if more:
        calls = calls + more if calls else more
    usage = usage_from(obj["usage"]) if "usage" in obj else None
    return StreamEvent(text, reasoning, tuple(calls), usage, finish, _encode(obj) if raw is None else raw, event, id)


class ToolCallMerger:
    """Joins tool-call fragments into whole calls.

    Fragments with an ``index`` (OpenAI style) are merged into the call with that index: the first
    ``id``/``name`` wins and string ``arguments`` are concatenated. A fragment with neither index nor id
    nor name that carries only more argument text continues the last call. Anything else (classic
    Workers AI ``{"name", "arguments": {...}}``) is a call of its own.
    """

    def __init__(self) -> None:
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self._by_id: dict[str, _PartialCall] = {}

    @property
    def calls(self) -> list[ToolCall]:
        """The calls merged so far, arguments decoded (``ResponseDecodeError`` when one is not valid JSON)."""
        return [c.finish() for c in self._calls]

    def add(self, fragments: Sequence[Any]) -> None:
        for raw in fragments:
            frag = as_object(raw)
            if frag is not None:
                self._add(frag)

    def _add(self, frag: dict[str, Any]) -> None:
        index = frag.get("index")
        index = index if isinstance(index, int) and not isinstance(index, bool) else None
        call_id = frag.get("id") if isinstance(frag.get("id"), str) and frag.get("id") else None
        fn = as_object(frag.get("function"))
        src = fn if fn is not None else frag
        name = src.get("name") if isinstance(src.get("name"), str) else ""
        args: Any = src.get("arguments")
        call: _PartialCall | None = None
        if index is not None:
            call = self._by_index.get(index)
        elif call_id is not None:
            call = self._by_id.get(call_id)
        elif not name and isinstance(args, str) and self._calls and isinstance(self._calls[-1].arguments, str):
            call = self._calls[-1]
        if call is None:
            call = _PartialCall(index=index)
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
        if call_id is not None and call.id is None:
            call.id = call_id
            self._by_id[call_id] = call
        kind = frag.get("type")
        if isinstance(kind, str) and kind:
            call.type = kind
        if name and name != call.name:
            call.name = call.name + name if call.name and index is not None else name
        if args is None:
            return
        if isinstance(args, str) and isinstance(call.arguments, str):
            call.arguments += args
        elif (new := as_object(args)) is not None and (old := as_object(call.arguments)) is not None:
            old.update(new)
        else:
            call.arguments = args


class EventJoiner:
    """Joins events as they come: text, reasoning, merged tool calls, the last usage and finish reason."""

    def __init__(self, limit: int | None = None, model_id: str = "") -> None:
        self.parts: list[str] = []
        self.reasoning: list[str] = []
        self.merger = ToolCallMerger()
        self.usage: Usage | None = None
        self.finish: str | None = None
        self.count = 0
        self.size = 0
        self._limit = limit
        self._model_id = model_id

    def add(self, ev: StreamEvent) -> None:
        """Join one event. Over ``limit`` bytes of events (the client's ``max_response_bytes``), an
        endless stream raises ``ResponseTooLargeError`` instead of growing until memory runs out."""
        self.count += 1
        if self._limit is not None:
            self.size += len(ev.raw) or len(ev.text)
            if self.size > self._limit:
                raise ResponseTooLargeError(
                    f"{self._model_id}: the stream's events add up to more than max_response_bytes"
                    f" ({self._limit:,} bytes); collect() stopped reading"
                )
        if ev.text:
            self.parts.append(ev.text)
        if ev.reasoning:
            self.reasoning.append(ev.reasoning)
        if ev.tool_calls:
            self.merger.add(ev.tool_calls)
        if ev.usage is not None:
            self.usage = ev.usage
        if ev.finish_reason:
            self.finish = ev.finish_reason

    def result(self) -> StreamResult:
        return StreamResult(
            "".join(self.parts), "".join(self.reasoning), self.merger.calls, self.usage, self.finish, self.count
        )


class StreamParser:
    """What sync and async event streams share: state and the parsing of a reply into events (no I/O)."""

    def __init__(
        self,
        response: Response | AsyncResponse,
        *,
        model_id: str,
        idle_timeout: float = 60.0,
        total_timeout: float | None = None,
        max_event_bytes: int = 16 * 1024 * 1024,
        max_response_bytes: int = 256 * 1024 * 1024,
        on_messages: Callable[[list[Any]], None] | None = None,
        on_end: Callable[[Usage | None], None] | None = None,
    ) -> None:
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
            yield [self._json_event((yield WANT_BODY))]
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
                yield events
            if failure is not None:
                raise failure
            if self.done:
                return
        if self.closed:
            return
        cut = ""
        for sse in (decoder.feed(b"".join(pieces)) if pieces else []) + decoder.flush():
            if _is_done(sse):
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
        """On close: tell ``on_end`` the last usage read (the usage event is the last or next to last one)."""
        if self._on_end is not None:
            seen = [ev.usage for ev in self._current if ev.usage is not None]
            self._on_end(seen[-1] if seen else None)

    def _read_failure(self, exc: APIConnectionError, idle_end: float) -> APIConnectionError | None:
        """The error to raise for a failed read (None when the stream was closed meanwhile)."""
        if self.closed:
            return None
        self.closed = True
        if isinstance(exc, APITimeoutError):
            if idle_end <= self._until:
                why = f"no event for {self._idle:g}s (stream_idle_timeout)"
            else:
                why = f"the stream took longer than {self._total:g}s (stream_timeout)"
            return APITimeoutError(f"{self.model_id}: {why}")
        return APIConnectionError(f"{self.model_id}: the stream broke off ({exc})")

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
            events = list(map(_event_decoder().decode, payloads))
        except DECODE_ERRORS:
            self.done = False
            return None
        # Error objects and OpenAI-style chunks decode as events without text; only then look closer.
        if "" in map(_TEXT, events) and (b'"error' in block or b'"success"' in block or b'"choices"' in block):
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
            if _is_done(sse):
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
                raise self._error(_loose(text))
        elif not text or text.isspace():
            return None  # keep-alive
        try:
            chunk = _decode_chunk(text)
        except msgspec.ValidationError:
            return self._odd_event(sse)  # valid JSON of another shape
        except DECODE_ERRORS:
            if not text or text.isspace():
                return None
            return StreamEvent(raw=text.encode(), event=sse.event, id=sse.id)
        if chunk.error is not None or chunk.errors is not None or chunk.success is not None:
            return self._odd_event(sse)
        response = chunk.response
        text_out = response if type(response) is str else _text_of(response)
        if chunk.choices is None:
            calls = chunk.tool_calls
            return StreamEvent(
                text_out,
                "",
                tuple(as_list(calls) or ()),
                chunk.usage,
                None,
                text.encode(),
                sse.event,
                sse.id,
            )
        return self._choice_event(chunk, text_out, sse)

    def _choice_event(self, chunk: _Chunk, text: str, sse: ServerSentEvent) -> StreamEvent:
        reasoning = ""
        calls: list[Any] = []
        finish: str | None = None
        choices = chunk.choices
        if choices:
            first = choices[0]
            delta = first.delta if first.delta is not None else first.message
            if delta is not None:
                text += _text_of(delta.content)
                reasoning = _text_of(delta.reasoning_content) or _text_of(delta.reasoning)
                calls = as_list(delta.tool_calls) or []
            text += _text_of(first.text)
            if isinstance(first.finish_reason, str):
                finish = first.finish_reason
        more = as_list(chunk.tool_calls)
        if more:
            calls = calls + more if calls else more
        return StreamEvent(text, reasoning, tuple(calls), chunk.usage, finish, sse.data.encode(), sse.event, sse.id)

    def _odd_event(self, sse: ServerSentEvent) -> StreamEvent | None:
        """An event that is not a plain chunk: an error object, or JSON of another shape."""
        data = _loose(sse.data)
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
                    self._current = want
                    yield want
                    since = time.monotonic()  # after the caller had the events: its time is not idle time
                    want = next(parser)
        except StopIteration:
            return
        except ResponseTooLargeError as exc:
            raise self._too_large(exc) from None
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


def _loose(text: str) -> Any:
    """``text`` decoded as JSON, or the text itself when it is not JSON."""
    try:
        return _decode(text)
    except DECODE_ERRORS:
        return text


def _is_done(sse: ServerSentEvent) -> bool:
    data = sse.data
    return data == "[DONE]" or (len(data) < 16 and data.strip() == "[DONE]")
