"""Typed iteration over a streamed (``text/event-stream``) model reply.

Two chunk shapes are read, in the same stream if need be: the classic Workers AI one,
``{"response": "...", "p": "<padding>", "tool_calls": [...]}``, and OpenAI-style
``chat.completion.chunk`` events (``choices[0].delta.content`` / ``reasoning_content`` /
``tool_calls``). Either may carry ``usage``; Workers AI ends with ``{"response": "", "usage": {...}}``
and then ``data: [DONE]``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import msgspec
from urllib3.exceptions import HTTPError, ProtocolError, ReadTimeoutError

from ._envelope import content_type_of, unwrap
from ._json import as_list, as_object
from ._sse import ServerSentEvent, SSEDecoder
from ._usage import Usage, usage_from
from .errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ErrorDetail,
    ResponseDecodeError,
    StreamError,
    details_from,
    error_for,
    format_details,
)

if TYPE_CHECKING:
    import urllib3

    from ._core import BaseClient

__all__ = ["EventStream", "StreamEvent", "StreamResult", "ToolCall", "ToolCallMerger", "Usage", "event_from"]

_READ_SIZE = 64 * 1024
_DRAIN_LIMIT = 1 << 20  # after [DONE], read at most this much to put the connection back in the pool
_DRAIN_SECONDS = 0.25  # ... and wait at most this long for it; a server that keeps the body open loses the connection
_decode = msgspec.json.Decoder().decode


class ToolCall(msgspec.Struct):
    """A tool call, merged from its stream fragments.

    ``arguments`` is a JSON *string* for OpenAI-style calls (joined from the fragments) and an
    object for classic Workers AI ones; :meth:`parsed_arguments` gives an object either way.
    """

    name: str = ""
    arguments: Any = None
    id: str | None = None
    type: str = "function"
    index: int | None = None

    def parsed_arguments(self) -> Any:
        """The arguments as decoded JSON; raises ``ValueError`` when a string is not valid JSON."""
        if self.arguments is None or self.arguments == "":
            return {}
        if isinstance(self.arguments, str):
            try:
                return msgspec.json.decode(self.arguments)
            except msgspec.DecodeError as exc:
                raise ValueError(f"tool call {self.name!r}: arguments are not valid JSON: {exc}") from None
        return self.arguments


class StreamEvent(msgspec.Struct):
    """One event of a model stream, whichever chunk shape it came in.

    ``text`` is the text delta (``response`` or ``choices[0].delta.content``), ``reasoning`` the
    ``reasoning_content`` delta, ``tool_calls`` the raw tool-call fragments (merge them with
    :class:`ToolCallMerger` or :meth:`EventStream.collect`), ``usage`` the token counts when the event
    carries them (the final event does), ``data`` the whole decoded JSON, ``event``/``id`` the SSE fields.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: list[Any] = []
    usage: Usage | None = None
    finish_reason: str | None = None
    data: Any = None
    event: str = "message"
    id: str | None = None


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


def event_from(data: Any, *, event: str = "message", id: str | None = None) -> StreamEvent:
    """The :class:`StreamEvent` for one decoded chunk (either shape)."""
    if not isinstance(data, dict):
        return StreamEvent(data if isinstance(data, str) else "", data=data, event=event, id=id)
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
    return StreamEvent(text, reasoning, calls, usage, finish, data, event, id)


class ToolCallMerger:
    """Joins tool-call fragments into whole calls.

    Fragments with an ``index`` (OpenAI style) are merged into the call with that index: the first
    ``id``/``name`` wins and string ``arguments`` are concatenated. A fragment with neither index nor id
    nor name that carries only more argument text continues the last call. Anything else (classic
    Workers AI ``{"name", "arguments": {...}}``) is a call of its own.
    """

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self._by_index: dict[int, ToolCall] = {}
        self._by_id: dict[str, ToolCall] = {}

    def add(self, fragments: list[Any]) -> None:
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
        call: ToolCall | None = None
        if index is not None:
            call = self._by_index.get(index)
        elif call_id is not None:
            call = self._by_id.get(call_id)
        elif not name and isinstance(args, str) and self.calls and isinstance(self.calls[-1].arguments, str):
            call = self.calls[-1]
        if call is None:
            call = ToolCall(index=index)
            self.calls.append(call)
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


def error_details(data: Any) -> list[ErrorDetail] | None:
    """The errors an error object carries, or None when ``data`` is not an error object.

    An error object has a non-empty ``errors``, a truthy ``error`` or ``success: false``; the entries
    are read by :func:`~workers_ai.errors.details_from`.
    """
    obj = as_object(data)
    if obj is None:
        return None
    errors, error = obj.get("errors"), obj.get("error")
    if not errors and not error and obj.get("success") is not False:
        return None
    return details_from(errors) + (details_from(error) if error else [])


def _socket_of(resp: Any) -> socket.socket | None:
    """The socket under a urllib3 response, when it still holds its connection."""
    try:
        sock = getattr(getattr(resp, "connection", None), "sock", None)
    except Exception:  # a response type that does not implement ``connection``
        return None
    return sock if isinstance(sock, socket.socket) else None


class EventStream:
    """Iterator of :class:`StreamEvent` over a live reply; use it in ``with`` to close it early.

    - Ends cleanly at ``data: [DONE]``; the connection then goes back to the pool.
    - A stream that stops without ``[DONE]`` raises :class:`~workers_ai.errors.StreamError` after the
      events it did deliver; a broken connection raises :class:`~workers_ai.errors.APIConnectionError`.
    - An error object sent mid-stream (``event: error``, ``{"error": ...}``, ``{"errors": [...]}``)
      raises the error class its Workers AI code maps to (e.g. ``CapacityError`` for 3040), otherwise
      ``StreamError``; ``.code`` and ``.errors`` carry the details.
    - Leaving a ``with`` block (or calling :meth:`close`) before the end closes the socket, so the
      rest of the reply is never read. A stream that is neither read to the end nor closed holds its
      pooled connection until it is garbage-collected, when it is closed the same way; use ``with``
      (or :meth:`close`) to give the connection back at a known point.
    - After ``[DONE]`` the end of the body is read for at most a fraction of a second so the connection
      can be reused; a server that keeps the body open longer gets the connection closed instead.
    - A server that answers a stream request with a JSON envelope instead gives one event holding its
      ``result``.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, *, model_id: str, client: BaseClient | None = None) -> None:
        self._resp = response
        self.model_id = model_id
        self._client = client
        self._iter: Iterator[StreamEvent] | None = None
        self.closed = False
        self.done = False
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self.cf_ray: str | None = response.headers.get("cf-ray")
        self.last_event_id: str | None = None
        self.bytes_read = 0
        if client is not None:
            client.remember(response, [])

    def __repr__(self) -> str:
        state = "done" if self.done else "closed" if self.closed else "open"
        return f"<EventStream {self.model_id} {state}>"

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
        resp = self._resp
        if self.done and self._drain():
            resp.release_conn()
            return
        try:
            resp.close()
        finally:
            resp.release_conn()  # the pool gets the closed connection back and reconnects when it is next used

    def _drain(self) -> bool:
        """Read what follows ``[DONE]`` (normally only the end of the chunked body) within a short time
        bound; True when the body ended, so the connection can go back to the pool."""
        resp = self._resp
        sock = _socket_of(resp)
        if sock is None:
            return False  # no way to bound the wait (or the body already ended and the connection went back)
        deadline = time.monotonic() + _DRAIN_SECONDS
        left = _DRAIN_LIMIT
        try:
            while left > 0:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    return False
                # urllib3 sets the socket timeout again whenever it reuses the connection.
                sock.settimeout(wait)
                chunk = resp.read1(_READ_SIZE)
                if not chunk:
                    return True
                left -= len(chunk)
        except (ProtocolError, HTTPError, OSError):
            return False
        return False

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._iter is None:
            self._iter = self._events()
        return self._iter

    def __next__(self) -> StreamEvent:
        return next(iter(self))

    # ------------------------------------------------------------------ reading

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        while not self.closed:
            try:
                chunk = resp.read1(_READ_SIZE)
            except ReadTimeoutError:
                if self.closed:
                    return
                raise APITimeoutError(f"{self.model_id}: the stream sent nothing for the read timeout") from None
            except (ProtocolError, HTTPError, OSError) as exc:
                if self.closed:
                    return
                raise APIConnectionError(f"{self.model_id}: the stream broke off ({type(exc).__name__})") from None
            if not chunk:
                return
            self.bytes_read += len(chunk)
            yield chunk

    def _events(self) -> Iterator[StreamEvent]:
        try:
            kind = content_type_of(self._resp, default="")
            if kind == "application/json" or kind.endswith("+json"):
                yield self._json_reply()
                return
            if kind and kind != "text/event-stream":
                raise StreamError(
                    f"{self.model_id}: expected text/event-stream, got {kind}",
                    status=self.status,
                    cf_ray=self.cf_ray,
                    model_id=self.model_id,
                )
            decoder = SSEDecoder()
            for chunk in self._chunks():
                for sse in decoder.feed(chunk):
                    if self.closed:
                        return
                    if _is_done(sse):
                        self.done = True
                        return
                    ev = self._event(sse)
                    if ev is not None:
                        yield ev
            if self.closed:
                return
            cut = ""
            for sse in decoder.flush():
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
        finally:
            self.close()

    def _json_reply(self) -> StreamEvent:
        body = self._resp.data
        self.bytes_read += len(body)
        self.done = True
        if self._client is not None:
            what = "reply to a stream request"
            return event_from(unwrap(self._client, self._resp, body, model_id=self.model_id, what=what))
        # A bare EventStream (no client): no envelope checks to share, so read it leniently.
        try:
            env: Any = _decode(body)
        except msgspec.DecodeError:
            raise ResponseDecodeError(
                f"{self.model_id}: the reply to a stream request is not valid JSON",
                status=self.status,
                cf_ray=self.cf_ray,
                model_id=self.model_id,
                body=body,
            ) from None
        obj = as_object(env)
        if obj is not None and error_details(obj) is not None:
            raise self._error(obj)
        return event_from(obj.get("result") if obj is not None and "result" in obj else env)

    def _event(self, sse: ServerSentEvent) -> StreamEvent | None:
        self.last_event_id = sse.id
        text = sse.data
        if not text or text.isspace():
            return None  # keep-alive
        try:
            data: Any = _decode(text)
        except msgspec.DecodeError:
            if sse.event == "error":
                raise self._error(text) from None
            return StreamEvent(data=text, event=sse.event, id=sse.id)
        if sse.event == "error":
            raise self._error(data)
        if isinstance(data, dict) and ("error" in data or "errors" in data or "success" in data):
            if error_details(data) is not None:
                raise self._error(data)
        return event_from(data, event=sse.event, id=sse.id)

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

    # ------------------------------------------------------------------ joining

    def collect(self) -> StreamResult:
        """Read the rest of the stream and join it: text, reasoning, merged tool calls, final usage."""
        parts: list[str] = []
        reasoning: list[str] = []
        merger = ToolCallMerger()
        usage: Usage | None = None
        finish: str | None = None
        count = 0
        for ev in self:
            count += 1
            if ev.text:
                parts.append(ev.text)
            if ev.reasoning:
                reasoning.append(ev.reasoning)
            if ev.tool_calls:
                merger.add(ev.tool_calls)
            if ev.usage is not None:
                usage = ev.usage
            if ev.finish_reason:
                finish = ev.finish_reason
        return StreamResult("".join(parts), "".join(reasoning), merger.calls, usage, finish, count)

    def text(self) -> str:
        """Read the rest of the stream and return the joined text."""
        return self.collect().text


def _is_done(sse: ServerSentEvent) -> bool:
    data = sse.data
    return data == "[DONE]" or (len(data) < 16 and data.strip() == "[DONE]")
