"""What a text-generation model says: a reply that echoes the question, a call of one of the request's
tools (arguments valid against its parameters), or a JSON-mode object valid against the request's
schema; and the OpenAI shapes of it (``chat.completion``, ``chat.completion.chunk``). Deterministic per
request: every choice comes from the request's seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from .._core.jsonview import as_list, as_object
from ._synth import MISSING, Synthesizer, Unsatisfiable
from ._validate import SchemaError

__all__ = [
    "CREATED",
    "JSON_MODE_UNMET",
    "PADDING",
    "Generation",
    "JsonModeUnmet",
    "chat_chunks",
    "chat_completion",
    "count_tokens",
    "generate",
    "pieces",
    "reply_text",
    "words",
]

CREATED = 1735689600  # a fixed "created" timestamp keeps replies byte-identical across runs
PADDING = "abcdefghijklmnopqrstuvwxyz0123456789"
"""Workers AI pads stream events with a ``p`` field of varying length; the emulator does too."""


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


def count_tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in as_list(content) or []:
        p = as_object(part)
        if p is not None and isinstance(p.get("text"), str):
            parts.append(cast(str, p["text"]))
        elif isinstance(part, str):
            parts.append(part)
    return " ".join(parts)


def _conversation(p: Mapping[str, Any]) -> tuple[str, str, int]:
    """(all input text, the text to answer, number of messages)."""
    prompt = p.get("prompt")
    if isinstance(prompt, str):
        return prompt, prompt, 1
    messages = as_list(p.get("messages"))
    if messages is None:
        raw_input = p.get("input")
        if isinstance(raw_input, str):
            return raw_input, raw_input, 1
        messages = as_list(raw_input)
    if messages is not None:
        texts: list[str] = []
        last = ""
        for m in messages:
            msg = as_object(m)
            if msg is None:
                continue
            text = _content_text(msg.get("content"))
            texts.append(text)
            if msg.get("role") in (None, "user") or not last:
                last = text
        return " ".join(texts), last, len(messages)
    for key in ("text", "input_text", "query"):
        value = p.get(key)
        if isinstance(value, str):
            return value, value, 1
    return "", "", 0


def _max_tokens(p: Mapping[str, Any]) -> int | None:
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens", "max_new_tokens"):
        value = p.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _reply(question: str, seed: str, limit: int | None) -> tuple[str, bool]:
    """A deterministic answer echoing the question; (text, cut short by max_tokens)."""
    echo = re.findall(r"[\w']+", question)[:16]
    rng = random.Random(seed)
    opener = rng.choice(("Sure.", "Here is an emulated answer.", "Happy to help.", "Good question."))
    text = (
        f"{opener} You asked about: {' '.join(echo)}."
        if echo
        else f"{opener} This reply comes from the Workers AI emulator."
    )
    pieces = text.split(" ")
    if limit is not None and len(pieces) > limit:
        return " ".join(pieces[:limit]), True
    return text, False


def _tools(p: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(name, parameters schema)`` of each tool, in either request form (``{name, parameters}`` or
    ``{type: "function", function: {...}}``; Anthropic's ``input_schema`` too)."""
    out: list[tuple[str, Any]] = []
    for raw in as_list(p.get("tools")) or []:
        tool = as_object(raw)
        if tool is None:
            continue
        fn = as_object(tool.get("function")) or tool
        name = fn.get("name")
        if isinstance(name, str) and name:
            out.append((name, fn.get("parameters", fn.get("input_schema"))))
    return out


def _tool_results(p: Mapping[str, Any]) -> int:
    """How many tool results follow the last user turn (``tool`` messages, Anthropic ``tool_result``
    blocks, Responses ``function_call_output`` items); 0 when the conversation does not end in one."""
    items = as_list(p.get("messages"))
    if items is None:
        items = as_list(p.get("input"))
    count = 0
    ends_in_result = False
    for raw in items or []:
        item = as_object(raw)
        if item is None:
            continue
        blocks = as_list(item.get("content")) or []
        results = sum(1 for b in blocks if (as_object(b) or {}).get("type") == "tool_result")
        if item.get("role") == "tool" or item.get("type") == "function_call_output":
            count, ends_in_result = count + 1, True
        elif results:
            count, ends_in_result = count + results, True
        elif item.get("role") == "user":
            count, ends_in_result = 0, False
        else:
            ends_in_result = False
    return count if ends_in_result else 0


def _tool_call(p: Mapping[str, Any], question: str, seed: str) -> tuple[str, Any] | None:
    """The tool a reply calls, with arguments synthesized from its parameters and valid against them.

    A first reply calls the tool ``tool_choice`` names, else the first one the question names, else the
    first tool. A question naming several tools is a multi-step task: after each tool result the next
    named tool (in the order the question names them) is called, one per round, and once every named
    tool has answered the reply is text. None with ``tool_choice: "none"`` or without tools."""
    tools = _tools(p)
    if not tools or p.get("tool_choice") == "none":
        return None
    lowered = question.lower()
    named = sorted((lowered.find(t[0].lower()), i, t) for i, t in enumerate(tools) if t[0].lower() in lowered)
    done = _tool_results(p)
    if done:
        if done >= len(named):
            return None
        picked = named[done][2]
    else:
        choice = as_object(p.get("tool_choice"))
        wanted = as_object((choice or {}).get("function")) or choice or {}
        found = next((t for t in tools if t[0] == wanted.get("name")), None)
        picked = found or (named[0][2] if named else tools[0])
    name, params = picked
    args: Any = {}
    if as_object(params) is not None:
        try:
            synth = Synthesizer(params)
            candidate = synth.generate(seed=seed, optional=0.0)
            if synth.validator.is_valid(candidate) and as_object(candidate) is not None:
                args = candidate
        except (SchemaError, Unsatisfiable):
            args = {}
    return name, args


JSON_MODE_UNMET = "JSON Mode couldn't be met"
"""The API's message when no reply fits a ``response_format`` (code unknown: the emulator answers 400/3030)."""


class JsonModeUnmet(Exception):
    """No object fits the request's ``response_format`` schema (the API's "JSON Mode couldn't be met")."""


def _json_mode(p: Mapping[str, Any], text: str, seed: str) -> Any:
    """The object a JSON-mode reply holds (deterministic, valid against the request's schema), or MISSING
    without ``response_format``; :class:`JsonModeUnmet` when no valid object can be made."""
    fmt = as_object(p.get("response_format"))
    if fmt is None or fmt.get("type") not in ("json_schema", "json_object"):
        return MISSING
    schema = fmt.get("json_schema") if fmt.get("type") == "json_schema" else None
    inner = as_object(schema)
    if inner is not None and as_object(inner.get("schema")) is not None and "type" not in inner:
        schema = inner["schema"]  # OpenAI's {name, schema} wrapper (the /ai/v1 routes take it)
    if as_object(schema) is None or schema == {}:
        return {"answer": text}
    try:
        synth = Synthesizer(schema)
        value = synth.generate(seed=seed, optional=1.0)
    except (SchemaError, Unsatisfiable):
        raise JsonModeUnmet from None
    if not synth.validator.is_valid(value):
        raise JsonModeUnmet
    return value


@dataclass
class Generation:
    text: str
    truncated: bool
    usage: dict[str, int]
    tool: tuple[str, Any] | None
    structured: Any


def generate(p: Mapping[str, Any], seed: str) -> Generation:
    """A text-generation reply to the request ``p``: text, a tool call or a JSON-mode object, and usage."""
    everything, question, messages = _conversation(p)
    text, truncated = _reply(question, seed, _max_tokens(p))
    tool = _tool_call(p, question, seed)
    structured = _json_mode(p, text, seed)
    if tool is not None:
        text = ""
    prompt_tokens = count_tokens(everything) + 4 * messages
    completion_tokens = count_tokens(text) + (8 if tool is not None else 0)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return Generation(text, truncated, usage, tool, structured)


def _chat_id(seed: str) -> str:
    return "chatcmpl-" + seed[:24]


def reply_text(gen: Generation) -> str:
    """The reply as text: the words, or a JSON-mode object as JSON."""
    return gen.text if gen.structured is MISSING else msgspec.json.encode(gen.structured).decode()


def _finish(gen: Generation) -> str:
    return "tool_calls" if gen.tool is not None else ("length" if gen.truncated else "stop")


def _openai_tool_call(gen: Generation, seed: str) -> dict[str, Any]:
    assert gen.tool is not None
    return {
        "id": "call_" + seed[:9],
        "type": "function",
        "function": {"name": gen.tool[0], "arguments": msgspec.json.encode(gen.tool[1]).decode()},
    }


def chat_completion(
    model_id: str, gen: Generation, seed: str, *, text_completion: bool = False, tool_content: str | None = None
) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` (or ``text_completion``) object for ``gen``; a message that calls a
    tool has ``tool_content`` as its content (OpenAI's null unless a model's output schema wants a string)."""
    if text_completion:
        choice: dict[str, Any] = {"index": 0, "text": reply_text(gen), "finish_reason": _finish(gen)}
        obj, ident = "text_completion", "cmpl-" + seed[:24]
    else:
        message: dict[str, Any] = {"role": "assistant", "content": reply_text(gen)}
        if gen.tool is not None:
            message["content"] = tool_content
            message["tool_calls"] = [_openai_tool_call(gen, seed)]
        message["refusal"] = None
        choice = {"index": 0, "message": message, "finish_reason": _finish(gen), "logprobs": None}
        obj, ident = "chat.completion", _chat_id(seed)
    return {"id": ident, "object": obj, "created": CREATED, "model": model_id, "choices": [choice], "usage": gen.usage}


def pieces(text: str) -> list[str]:
    """The text in stream-sized pieces (a word and its trailing space each)."""
    parts = re.findall(r"\S+\s*", text)
    return parts or [text]


def chat_chunks(model_id: str, gen: Generation, seed: str, *, padding: bool = True) -> list[dict[str, Any]]:
    """OpenAI ``chat.completion.chunk`` objects for ``gen``: text deltas (Workers AI adds a ``p``
    padding field; ``padding=False`` leaves it out), a tool call's fragments, then the finish chunk."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": _chat_id(seed),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model_id,
            "choices": [choice],
        }

    events: list[dict[str, Any]] = []
    if gen.tool is None:
        for i, piece in enumerate(pieces(reply_text(gen))):
            event = chunk({"content": piece, **({"role": "assistant"} if i == 0 else {})})
            if padding:
                event["p"] = PADDING[: 4 + (i * 7) % 20]
            events.append(event)
    else:
        call = _openai_tool_call(gen, seed)
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        head = {"index": 0, "id": call["id"], "type": "function", "function": {"name": gen.tool[0], "arguments": ""}}
        events.append(chunk({"role": "assistant", "content": None, "tool_calls": [head]}))
        for part in (arguments[:half], arguments[half:]):  # arguments arrive in fragments, merged by index
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
    events.append(chunk({}, _finish(gen)))
    return events
