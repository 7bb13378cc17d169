"""Stream events and their joining, without I/O: the typed chunk decoders, :class:`StreamEvent`,
:class:`StreamResult`, tool-call merging and :class:`EventJoiner`.

Two chunk shapes are read, in the same stream if need be: the classic Workers AI one,
``{"response": "...", "p": "<padding>", "tool_calls": [...]}``, and OpenAI-style
``chat.completion.chunk`` events (``choices[0].delta.content`` / ``reasoning_content`` /
``tool_calls``). Either may carry ``usage``; Workers AI ends with ``{"response": "", "usage": {...}}``
and then ``data: [DONE]``.

Each event is decoded once, by msgspec, straight into a small typed chunk; only unusual events (error
objects, odd shapes) take the slower path through plain JSON values.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, cast

import msgspec

from ..errors import ResponseTooLargeError
from .error_replies import DECODE_ERRORS
from .jsonview import as_list, as_object
from .sse import ServerSentEvent
from .toolcall import ToolCall
from .usage import Usage, usage_from

__all__ = [
    "EventJoiner",
    "FunctionDelta",
    "StreamEvent",
    "StreamResult",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallMerger",
    "Usage",
    "event_from",
]

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class FunctionDelta(msgspec.Struct, gc=False, omit_defaults=True):
    """The ``function`` of an OpenAI-style tool-call fragment."""

    name: str | None = None
    arguments: str | dict[str, Any] | None = None


class ToolCallDelta(msgspec.Struct, gc=False, omit_defaults=True):
    """One tool-call fragment of a stream event, whichever shape it came in: classic Workers AI
    (``{name, arguments}``, a whole call) or OpenAI-style (``{index, id, type, function: {name,
    arguments}}``, pieces of a call joined by ``index``). ``name`` and ``arguments`` are read from
    ``function`` when the fragment nests them; ``arguments`` is JSON text (a piece of it, in OpenAI
    fragments) or an object. Join fragments with :class:`ToolCallMerger` or ``EventStream.collect()``."""

    index: int | None = None
    id: str | None = None
    type: str | None = None
    name: str = ""
    arguments: str | dict[str, Any] | None = None
    function: FunctionDelta | None = None

    def __post_init__(self) -> None:
        fn = self.function
        if fn is not None:
            if not self.name and fn.name:
                self.name = fn.name
            if self.arguments is None:
                self.arguments = fn.arguments


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def tool_call_deltas(fragments: object) -> tuple[ToolCallDelta, ...]:
    """The typed fragments of a decoded ``tool_calls`` list (odd items salvaged field by field)."""
    out: list[ToolCallDelta] = []
    items: Sequence[object] = as_list(fragments) or ()
    if isinstance(fragments, tuple):
        items = cast("tuple[object, ...]", fragments)
    for raw in items:
        if isinstance(raw, ToolCallDelta):
            out.append(raw)
            continue
        frag = as_object(raw)
        if frag is None:
            continue
        try:
            out.append(msgspec.convert(frag, ToolCallDelta))
        except msgspec.ValidationError:
            fn = as_object(frag.get("function")) or frag
            index = frag.get("index")
            args = fn.get("arguments")
            out.append(
                ToolCallDelta(
                    index=index if type(index) is int else None,
                    id=_text_or_none(frag.get("id")),
                    type=_text_or_none(frag.get("type")),
                    name=_text_or_none(fn.get("name")) or "",
                    arguments=args
                    if isinstance(args, str)
                    else cast("dict[str, Any]", args)
                    if isinstance(args, dict)
                    else None,
                )
            )
    return tuple(out)


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


class Chunk(msgspec.Struct, gc=False):
    """The fields of one event this module reads; anything else in it is skipped while decoding."""

    response: Any = None
    tool_calls: Any = None
    usage: Usage | None = None
    choices: list[_Choice] | None = None
    error: Any = None
    errors: Any = None
    success: Any = None


_CHUNK_DECODER: list[msgspec.json.Decoder[Chunk]] = []  # built by the first stream: typed decoders cost import time


def decode_chunk(text: bytes | str) -> Chunk:
    if not _CHUNK_DECODER:
        _CHUNK_DECODER.append(msgspec.json.Decoder(Chunk))
    return _CHUNK_DECODER[0].decode(text)


class _PartialCall(msgspec.Struct):
    """A tool call while its stream fragments arrive (``arguments`` JSON text or an object so far)."""

    name: str = ""
    arguments: Any = None
    id: str | None = None
    type: str = "function"
    index: int | None = None

    def finish(self) -> ToolCall:
        return ToolCall.of(self.name, self.arguments, self.id, self.type, self.index)


class StreamEvent(
    msgspec.Struct,
    gc=False,
    rename={"text": "response", "raw": "~sse~raw", "event": "~sse~event", "id": "~sse~id"},
):
    """One event of a model stream, whichever chunk shape it came in.

    ``text`` is the text delta (``response`` or ``choices[0].delta.content``), ``reasoning`` the
    ``reasoning_content`` delta, ``tool_calls`` the typed tool-call fragments (:class:`ToolCallDelta`; merge them with
    :class:`ToolCallMerger` or :meth:`EventStream.collect`), ``usage`` the token counts when the event
    carries them (the final event does), ``event``/``id`` the SSE fields, ``raw`` the event's data as
    sent and :attr:`data` the whole decoded JSON (decoded when asked for).

    A classic Workers AI chunk decodes straight into this struct (its ``response`` is ``text``), which
    is what keeps a stream's per-event cost close to a bare ``msgspec`` decode.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
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


def event_decoder() -> msgspec.json.Decoder[StreamEvent]:
    if not _EVENT_DECODER:
        _EVENT_DECODER.append(msgspec.json.Decoder(StreamEvent))
    return _EVENT_DECODER[0]


EVENT_TEXT = operator.attrgetter("text")


class StreamResult(msgspec.Struct):
    """A whole stream joined: text, reasoning, merged tool calls and the last usage seen."""

    text: str
    reasoning: str = ""
    tool_calls: list[ToolCall] = []
    usage: Usage | None = None
    finish_reason: str | None = None
    events: int = 0


def text_of(value: Any) -> str:
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
    text = response if type(response) is str else text_of(response)
    reasoning = ""
    calls: list[Any] = []
    finish: str | None = None
    if "choices" in obj:
        choices = as_list(obj["choices"])
        first = as_object(choices[0]) if choices else None
        if first is not None:
            delta = as_object(first.get("delta")) or as_object(first.get("message"))
            if delta is not None:
                text += text_of(delta.get("content"))
                reasoning = text_of(delta.get("reasoning_content")) or text_of(delta.get("reasoning"))
                calls = as_list(delta.get("tool_calls")) or []
            text += text_of(first.get("text"))
            reason = first.get("finish_reason")
            if isinstance(reason, str):
                finish = reason
    more = as_list(obj.get("tool_calls"))
    if more:
        calls = calls + more if calls else more
    usage = usage_from(obj["usage"]) if "usage" in obj else None
    deltas = tool_call_deltas(calls)
    return StreamEvent(text, reasoning, deltas, usage, finish, _encode(obj) if raw is None else raw, event, id)


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
        """Join ``fragments``: :class:`ToolCallDelta` items, or the ``tool_calls`` dicts as decoded."""
        for frag in tool_call_deltas(fragments):
            self._add(frag)

    def _add(self, frag: ToolCallDelta) -> None:
        index, call_id, name = frag.index, frag.id or None, frag.name
        args: Any = frag.arguments
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
        if frag.type:
            call.type = frag.type
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


def loose(text: str) -> Any:
    """``text`` decoded as JSON, or the text itself when it is not JSON."""
    try:
        return _decode(text)
    except DECODE_ERRORS:
        return text


def is_done(sse: ServerSentEvent) -> bool:
    data = sse.data
    return data == "[DONE]" or (len(data) < 16 and data.strip() == "[DONE]")
