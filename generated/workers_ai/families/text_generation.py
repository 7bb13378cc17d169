"""Text generation: ``.text``, ``.tool_calls``, ``.usage``, ``.finish_reason``, ``.reasoning`` on every
text model's result, whether it answered in the classic shape (``{response, tool_calls, usage}``), as an
OpenAI chat completion (``choices[0].message``) or as a Responses-API object (``output`` items)."""

from __future__ import annotations

from typing import Any, Protocol

from .._core.toolcall import ToolCall

__all__ = ["ResponsesUsageView", "TextResult", "TextView", "TokenUsage", "text_of", "tool_calls_of"]


class TokenUsage(Protocol):
    """Token counts of one call: integers, always present on text generation replies."""

    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def total_tokens(self) -> int: ...


class TextResult(Protocol):
    """What every text model's result offers, whatever its wire shape."""

    @property
    def text(self) -> str: ...
    @property
    def tool_calls(self) -> list[ToolCall]: ...
    @property
    def usage(self) -> TokenUsage: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def reasoning(self) -> str | None: ...


def _first_choice(obj: Any) -> Any:
    choices = getattr(obj, "choices", None)
    return choices[0] if choices else None


def _output_items(obj: Any, kind: str) -> list[Any]:
    items: Any = getattr(obj, "output", None)
    if not isinstance(items, list) or getattr(obj, "created_at", None) is None:
        return []
    listed: list[Any] = items  # pyright: ignore[reportUnknownVariableType]
    return [i for i in listed if getattr(i, "type", None) == kind]


def _contents_text(items: list[Any]) -> str:
    parts: list[str] = []
    for item in items:
        for part in getattr(item, "content", None) or ():
            text = getattr(part, "text", None)
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def text_of(obj: Any) -> str:
    """The assistant's text of a reply in any of the three shapes (``""`` when it only calls tools)."""
    if hasattr(obj, "response"):
        value = obj.response
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        import msgspec  # JSON mode: the answer is an object; its JSON text is the text

        return msgspec.json.encode(value).decode()
    choice = _first_choice(obj)
    if choice is not None:
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None) if message is not None else getattr(choice, "text", None)
        return content if isinstance(content, str) else ""
    return _contents_text(_output_items(obj, "message"))


def _raw_calls(obj: Any) -> list[Any]:
    if hasattr(obj, "response"):
        return list(getattr(obj, "tool_calls_", None) or ())  # the wire field, renamed beside the view
    choice = _first_choice(obj)
    if choice is not None:
        message = getattr(choice, "message", None)
        return list(getattr(message, "tool_calls", None) or ())
    return _output_items(obj, "function_call")


def tool_calls_of(obj: Any) -> list[ToolCall]:
    """The tool calls of a reply in any shape, arguments always a dict (JSON text decoded; text that is no
    JSON object gives ``{}`` and says so in the call's ``arguments_error``)."""
    out: list[ToolCall] = []
    for raw in _raw_calls(obj):
        item: Any = raw
        if isinstance(raw, dict):
            import msgspec

            item = msgspec.convert(raw, dict[str, Any])
            fn: Any = item.get("function") or item
            name, args, ident = fn.get("name"), fn.get("arguments"), item.get("id") or item.get("call_id")
        else:
            fn = getattr(item, "function", None) or item
            name, args = getattr(fn, "name", None), getattr(fn, "arguments", None)
            ident = getattr(item, "id", None) if getattr(item, "call_id", None) is None else item.call_id
        if not isinstance(name, str):
            continue
        if not isinstance(args, (str, dict)) and args is not None:
            import msgspec

            args = msgspec.to_builtins(args)
        out.append(ToolCall.of(name, args, ident if isinstance(ident, str) and ident else None))
    return out


class TextView:
    """Mixin of every text generation output struct (see :class:`TextResult`)."""

    __slots__ = ()

    @property
    def text(self) -> str:
        """The assistant's text (``""`` when the reply is only tool calls)."""
        return text_of(self)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the model asked for (``[]`` when none): ``.id``, ``.name``, ``.arguments`` (a dict)."""
        return tool_calls_of(self)

    @property
    def finish_reason(self) -> str | None:
        """Why generation stopped (``stop``, ``length``, ``tool_calls``...), where the wire says."""
        choice = _first_choice(self)
        reason = getattr(choice, "finish_reason", None) if choice is not None else None
        return reason if isinstance(reason, str) else None

    @property
    def reasoning(self) -> str | None:
        """The model's reasoning text, for models that return it."""
        choice = _first_choice(self)
        if choice is not None:
            message = getattr(choice, "message", None)
            for key in ("reasoning_content", "reasoning"):
                value = getattr(message, key, None)
                if isinstance(value, str):
                    return value
            return None
        items = _output_items(self, "reasoning")
        return _contents_text(items) if items else None


class ResponsesUsageView:
    """Mixin of a Responses-API ``usage`` (``input_tokens``/``output_tokens``): the chat-completion names too."""

    __slots__ = ()

    @property
    def prompt_tokens(self) -> int:
        value: int = getattr(self, "input_tokens", 0)
        return value

    @property
    def completion_tokens(self) -> int:
        value: int = getattr(self, "output_tokens", 0)
        return value
