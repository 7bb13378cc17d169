"""One typed tool call, whichever of the two shapes a model answered in.

Classic Workers AI models answer ``tool_calls: [{"name": ..., "arguments": {...}}]`` (arguments an
object); OpenAI-shaped ones ``[{"id": ..., "type": "function", "function": {"name": ..., "arguments":
"<JSON text>"}}]``, at the top level or under ``choices[0].message``. Both become :class:`ToolCall`.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from .._error_base import ResponseDecodeError
from .jsonview import DECODE_ERRORS, as_list, as_object

__all__ = ["ToolCall", "decode_arguments", "tool_call_from", "tool_calls"]


class ToolCall(msgspec.Struct):
    """A call of one tool: ``name``, ``arguments`` decoded to a dict, and ``id`` when the model gave one."""

    name: str = ""
    arguments: dict[str, Any] = {}
    id: str | None = None
    type: str = "function"
    index: int | None = None

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments (already decoded; kept for code written against the stream's older type)."""
        return self.arguments

    def openai_form(self) -> dict[str, Any]:
        """``{id, type: "function", function: {name, arguments: "<JSON text>"}}``: how OpenAI-shaped models take it."""
        return {
            "id": self.id or f"call_{self.name}",
            "type": "function",
            "function": {"name": self.name, "arguments": msgspec.json.encode(self.arguments).decode()},
        }

    def legacy_form(self) -> dict[str, Any]:
        """``{name, arguments: {...}}``, the classic Workers AI form."""
        return {"name": self.name, "arguments": self.arguments}


def decode_arguments(raw: Any, name: str, *, model_id: str | None = None) -> dict[str, Any]:
    """Arguments as a dict: an object as is, JSON text decoded; empty or missing gives ``{}``."""
    if raw is None or raw == "":
        return {}
    where = f"{model_id}: tool call {name!r}" if model_id else f"tool call {name!r}"
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = msgspec.json.decode(raw)
        except DECODE_ERRORS as exc:
            raise ResponseDecodeError(
                f"{where}: arguments are not valid JSON: {exc}", model_id=model_id, body=raw.encode()
            ) from None
    obj = as_object(value)
    if obj is None:
        raise ResponseDecodeError(
            f"{where}: arguments are not a JSON object", model_id=model_id, body=str(raw).encode()
        )
    return obj


def tool_call_from(raw: Any, *, model_id: str | None = None) -> ToolCall | None:
    """The :class:`ToolCall` for one item of a reply's ``tool_calls`` (either shape), or None if it is not one."""
    item = as_object(raw)
    if item is None:
        return None
    fn = as_object(item.get("function"))
    src = fn if fn is not None else item
    name = src.get("name")
    if not isinstance(name, str):
        return None
    ident = item.get("id")
    index = item.get("index")
    return ToolCall(
        name=name,
        arguments=decode_arguments(src.get("arguments"), name, model_id=model_id),
        id=ident if isinstance(ident, str) and ident else None,
        index=index if isinstance(index, int) and not isinstance(index, bool) else None,
    )


def _raw_calls(value: Any) -> list[Any]:
    obj = as_object(value)
    if obj is None:
        return []
    calls = as_list(obj.get("tool_calls")) or []
    choices = as_list(obj.get("choices"))
    if choices:
        first = as_object(choices[0]) or {}
        message = as_object(first.get("message")) or as_object(first.get("delta")) or {}
        calls = calls + (as_list(message.get("tool_calls")) or [])
    return calls


def tool_calls(reply: Any) -> list[ToolCall]:
    """The tool calls of a model's reply (a generated output struct or its decoded JSON), in either shape:
    top-level ``tool_calls`` or OpenAI's ``choices[0].message.tool_calls``. Empty when it answered in text."""
    value: Any = msgspec.to_builtins(reply) if isinstance(reply, msgspec.Struct) else reply
    model_id = cast("str | None", getattr(reply, "model_id", None))
    out: list[ToolCall] = []
    for raw in _raw_calls(value):
        call = tool_call_from(raw, model_id=model_id)
        if call is not None:
            out.append(call)
    return out
