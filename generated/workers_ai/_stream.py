"""Typed iteration over a streamed (``text/event-stream``) model reply."""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import msgspec
from urllib3.exceptions import HTTPError, ProtocolError

from ._sse import SSEDecoder, ServerSentEvent
from .errors import APIConnectionError, APIError, ErrorDetail, StreamError, error_for

if TYPE_CHECKING:
    import urllib3

    from ._core import BaseClient

__all__ = ["EventStream", "StreamEvent", "StreamResult", "Usage"]

_READ_SIZE = 64 * 1024


class Usage(msgspec.Struct):
    """Token counts reported by the model (the final stream event usually carries them)."""

    prompt_tokens: int | float = 0
    completion_tokens: int | float = 0
    total_tokens: int | float = 0


class StreamEvent(msgspec.Struct):
    """One event of a model stream.

    ``text`` is the text delta whichever shape the chunk had: legacy ``{"response": ...}`` or
    OpenAI-style ``chat.completion.chunk`` (``choices[0].delta.content``). ``reasoning`` holds
    ``reasoning_content`` deltas, ``tool_calls`` any tool-call fragments, ``usage`` the counts when the
    event carries them, ``data`` the whole decoded JSON.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: list[Any] = []
    usage: Usage | None = None
    finish_reason: str | None = None
    data: Any = None
    event: str = "message"


class StreamResult(msgspec.Struct):
    """A whole stream joined: the text, reasoning, tool-call fragments and the last usage seen."""

    text: str
    reasoning: str = ""
    tool_calls: list[Any] = []
    usage: Usage | None = None
    finish_reason: str | None = None
    events: int = 0


_USAGE = msgspec.json.Decoder(Usage)


def _to_event(sse: ServerSentEvent, data: Any) -> StreamEvent:
    ev = StreamEvent(data=data, event=sse.event)
    if not isinstance(data, dict):
        if isinstance(data, str):
            ev.text = data
        return ev
    response = data.get("response")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(response, (str, int, float)) and not isinstance(response, bool):
        ev.text = str(response)
    choices = data.get("choices")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        first: dict[str, Any] = choices[0]  # pyright: ignore[reportUnknownVariableType]
        delta = first.get("delta") or first.get("message") or {}
        if isinstance(delta, dict):
            content = delta.get("content")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(content, str):
                ev.text += content
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(reasoning, str):
                ev.reasoning = reasoning
            calls = delta.get("tool_calls")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(calls, list):
                ev.tool_calls = list(calls)  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(first.get("text"), str):
            ev.text += first["text"]
        reason = first.get("finish_reason")
        if isinstance(reason, str):
            ev.finish_reason = reason
    calls = data.get("tool_calls")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(calls, list) and calls:
        ev.tool_calls = list(calls)  # pyright: ignore[reportUnknownArgumentType]
    usage = data.get("usage")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(usage, dict):
        try:
            ev.usage = msgspec.convert(usage, Usage)
        except msgspec.ValidationError:
            ev.usage = None
    return ev


class EventStream:
    """Iterator of :class:`StreamEvent` over a live response; use it in ``with`` to close early.

    Ends cleanly at ``data: [DONE]``. A stream that stops without ``[DONE]`` raises
    :class:`~workers_ai.errors.StreamError`; an error object sent mid-stream raises the matching
    API error (with its Workers AI code).
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, *, model_id: str, client: BaseClient | None = None) -> None:
        self._resp = response
        self.model_id = model_id
        self._client = client
        self._iter: Iterator[StreamEvent] | None = None
        self.closed = False
        self.done = False
        self.cf_ray = response.headers.get("cf-ray")

    def __enter__(self) -> EventStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (not returned to the pool when the stream was left unfinished)."""
        if not self.closed:
            self.closed = True
            if self.done:
                self._resp.release_conn()
            else:
                self._resp.close()

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._iter is None:
            self._iter = self._events()
        return self._iter

    def __next__(self) -> StreamEvent:
        return next(iter(self))

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        try:
            while True:
                chunk = resp.read1(_READ_SIZE) if hasattr(resp, "read1") else resp.read(_READ_SIZE)
                if not chunk:
                    return
                yield chunk
        except (ProtocolError, HTTPError, OSError) as exc:
            raise APIConnectionError(f"{self.model_id}: the stream broke off ({type(exc).__name__})") from None

    def _events(self) -> Iterator[StreamEvent]:
        decoder = SSEDecoder()
        try:
            for chunk in self._chunks():
                for sse in decoder.feed(chunk):
                    ev = self._handle(sse)
                    if ev is None:
                        self.done = True
                        return
                    yield ev
            for sse in decoder.flush():
                ev = self._handle(sse)
                if ev is None:
                    self.done = True
                    return
                yield ev
            raise StreamError(
                f"{self.model_id}: the stream ended without [DONE]; the reply may be incomplete",
                status=self._resp.status,
                cf_ray=self.cf_ray,
                model_id=self.model_id,
            )
        finally:
            self.close()

    def _handle(self, sse: ServerSentEvent) -> StreamEvent | None:
        text = sse.data
        if text.strip() == "[DONE]":
            return None
        if not text.strip():
            return StreamEvent(event=sse.event)
        try:
            data: Any = msgspec.json.decode(text)
        except msgspec.DecodeError:
            if sse.event == "error":
                raise StreamError(f"{self.model_id}: error event: {text[:200]}", model_id=self.model_id) from None
            return StreamEvent(text="", data=text, event=sse.event)
        if sse.event == "error" or (isinstance(data, dict) and ("errors" in data or "error" in data) and "choices" not in data and "response" not in data):
            raise self._error(data)
        return _to_event(sse, data)

    def _error(self, data: Any) -> APIError:
        details: list[ErrorDetail] = []
        message = "error event in stream"
        if isinstance(data, dict):
            raw = data.get("errors") or ([data["error"]] if "error" in data else [])  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            for item in raw if isinstance(raw, list) else []:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(item, dict):
                    code: Any = item.get("code")  # pyright: ignore[reportUnknownMemberType]
                    details.append(ErrorDetail(code if isinstance(code, int) else None, str(item.get("message", ""))))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
                elif isinstance(item, str):
                    details.append(ErrorDetail(None, item))
            if details:
                message = "; ".join(f"{d.code}: {d.message}" if d.code is not None else d.message for d in details)
        codes = [d.code for d in details if d.code is not None]
        # A known Workers AI code raises the same class it would outside a stream; anything else is a StreamError.
        cls = error_for(None, codes) if codes else StreamError
        if cls is APIError:
            cls = StreamError
        return cls(
            f"{self.model_id}: {message} (mid-stream)",
            status=self._resp.status,
            errors=details,
            cf_ray=self.cf_ray,
            model_id=self.model_id,
        )

    def collect(self) -> StreamResult:
        """Read the rest of the stream and join it: text, reasoning, tool calls and the final usage."""
        parts: list[str] = []
        reasoning: list[str] = []
        calls: list[Any] = []
        usage: Usage | None = None
        finish: str | None = None
        count = 0
        for ev in self:
            count += 1
            parts.append(ev.text)
            if ev.reasoning:
                reasoning.append(ev.reasoning)
            calls.extend(ev.tool_calls)
            if ev.usage is not None:
                usage = ev.usage
            if ev.finish_reason:
                finish = ev.finish_reason
        return StreamResult("".join(parts), "".join(reasoning), calls, usage, finish, count)

    def text(self) -> str:
        """Read the rest of the stream and return the joined text."""
        return self.collect().text
