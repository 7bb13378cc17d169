"""One typed tool call, whichever of the two shapes a model answered in.

Classic Workers AI models answer ``tool_calls: [{"name": ..., "arguments": {...}}]`` (arguments an
object); OpenAI-shaped ones ``[{"id": ..., "type": "function", "function": {"name": ..., "arguments":
"<JSON text>"}}]``, at the top level or under ``choices[0].message``. Both become :class:`ToolCall`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .jsonview import DECODE_ERRORS, as_list, as_object

__all__ = ["ToolCall", "read_arguments", "tool_call_from", "tool_calls"]


class ToolCall(msgspec.Struct):
    """A call of one tool: ``name``, ``arguments`` decoded to a dict, and ``id`` when the model gave one.

    Models sometimes send arguments that are not a JSON object; the reply is kept all the same, with
    ``arguments`` empty and ``arguments_error`` saying what is wrong. ``raw_arguments`` is the JSON text
    as the model sent it (OpenAI-shaped replies), None where it sent an object."""

    name: str = ""
    arguments: dict[str, Any] = {}
    id: str | None = None
    type: str = "function"
    index: int | None = None
    raw_arguments: str | None = None
    arguments_error: str | None = None

    @classmethod
    def of(
        cls, name: str, raw: Any, id: str | None = None, type: str = "function", index: int | None = None
    ) -> ToolCall:
        """The call of ``name`` with arguments as sent (an object, JSON text, or nothing)."""
        arguments, error = read_arguments(raw)
        text = raw if isinstance(raw, str) else None
        return cls(name, arguments, id, type, index, text, error)

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments (already decoded; kept for code written against the stream's older type)."""
        return self.arguments

    def openai_form(self) -> dict[str, Any]:
        """``{id, type: "function", function: {name, arguments: "<JSON text>"}}``: how OpenAI-shaped models take it
        (the text as the model sent it, where it sent text)."""
        text = self.raw_arguments if self.raw_arguments is not None else msgspec.json.encode(self.arguments).decode()
        return {
            "id": self.id or f"call_{self.name}",
            "type": "function",
            "function": {"name": self.name, "arguments": text},
        }

    def legacy_form(self) -> dict[str, Any]:
        """``{name, arguments: {...}}``, the classic Workers AI form."""
        return {"name": self.name, "arguments": self.arguments}


def read_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """``(arguments as a dict, None)``, or ``({}, what is wrong)`` for arguments that are not a JSON object:
    an object as is, JSON text decoded; empty or missing gives ``{}``."""
    if raw is None or raw == "":
        return {}, None
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = msgspec.json.decode(raw)
        except DECODE_ERRORS as exc:
            return {}, f"arguments are not valid JSON: {exc}"
    obj = as_object(value)
    return (obj, None) if obj is not None else ({}, "arguments are not a JSON object")


def tool_call_from(raw: Any) -> ToolCall | None:
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
    return ToolCall.of(
        name,
        src.get("arguments"),
        ident if isinstance(ident, str) and ident else None,
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
    out: list[ToolCall] = []
    for raw in _raw_calls(value):
        call = tool_call_from(raw)
        if call is not None:
            out.append(call)
    return out
