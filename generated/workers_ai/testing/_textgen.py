"""What a text-generation model says: a reply that echoes the question, a call of one of the request's
tools (arguments valid against its parameters), or a JSON-mode object valid against the request's
schema (its OpenAI shapes are :mod:`._openai_shapes`). Deterministic per request: every choice comes
from the request's seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from .._core.jsonview import as_list, as_object
from ._prompt import argument_hint, stated_schema
from ._reply import APIError
from ._synth import MISSING, Synthesizer, Unsatisfiable
from ._validate import SchemaError

__all__ = [
    "JSON_MODE_UNMET",
    "Generation",
    "JsonModeUnmet",
    "answer_object",
    "count_tokens",
    "generate",
    "reply_text",
    "words",
]


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


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
    """The request's token limit; None when it sets none (``null`` too): the model's default (256 on
    Workers AI) is longer than any reply the emulator writes, and a JSON-mode object is not cut by it."""
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens", "max_new_tokens"):
        value = p.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _reply(question: str, seed: str, limit: int | None) -> tuple[str, bool]:
    """A deterministic answer echoing the question; (text, cut short by max_tokens).

    The text is cut after exactly ``limit`` tokens (as :func:`count_tokens` counts them), so a reply's
    ``completion_tokens`` never exceeds ``max_tokens``."""
    echo = re.findall(r"[\w']+", question)[:16]
    rng = random.Random(seed)
    opener = rng.choice(("Sure.", "Here is an emulated answer.", "Happy to help.", "Good question."))
    text = (
        f"{opener} You asked about: {' '.join(echo)}."
        if echo
        else f"{opener} This reply comes from the Workers AI emulator."
    )
    tokens = list(_TOKEN.finditer(text))
    if limit is not None and len(tokens) > limit:
        return text[: tokens[limit - 1].end()], True
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
            candidate = answer_object(params, question, seed)
            if as_object(candidate) is not None:
                args = candidate
        except (SchemaError, Unsatisfiable):
            args = {}
    return name, args


def answer_object(schema: Any, question: str, seed: str) -> Any:
    """An instance of ``schema`` with every property (nested too), valid against it, whose values come
    from the words of ``question`` where one fits (:func:`argument_hint`); :class:`Unsatisfiable` when
    no valid instance can be built."""
    synth = Synthesizer(schema)
    base = synth.generate(seed=seed, optional=1.0)
    value = base
    hint = _prompt_hint(synth.root, base, question, 0)
    if hint is not MISSING:
        try:
            candidate = synth.generate(seed=seed, hint=hint, optional=1.0)
            if synth.validator.is_valid(candidate):
                value = candidate
        except Unsatisfiable:
            pass
    if not synth.validator.is_valid(value):
        raise Unsatisfiable("no valid instance")
    return value


def _prompt_hint(schema: Any, base: Any, question: str, depth: int) -> Any:
    """``base`` with each property's value replaced by what the question says for that name."""
    obj, values = as_object(schema), as_object(base)
    props = as_object((obj or {}).get("properties"))
    if values is None or props is None or depth > 4:
        return MISSING
    out = dict(values)
    for key, sub in props.items():
        if key not in out:
            continue
        nested = _prompt_hint(sub, out[key], question, depth + 1)
        if nested is not MISSING:
            out[key] = nested
            continue
        said = argument_hint(key, sub, question)
        if said is not None:
            out[key] = said
    return out


JSON_MODE_UNMET = "JSON Mode couldn't be met"
"""The API's message when no reply fits a ``response_format`` (code unknown: the emulator answers 400/3030)."""


class JsonModeUnmet(Exception):
    """No object fits the request's ``response_format`` schema (the API's "JSON Mode couldn't be met")."""


def _json_mode(p: Mapping[str, Any], question: str, everything: str, text: str, seed: str) -> Any:
    """The object a JSON-mode reply holds (deterministic, valid against the request's schema), or MISSING
    without JSON mode; :class:`JsonModeUnmet` when no valid object can be made.

    ``response_format: {type: "json_schema", json_schema: S}`` and ``guided_json: S`` follow ``S``;
    ``{type: "json_object"}`` follows the schema, example object or field names the conversation
    states (clients put the schema in a system message), else answers ``{"answer": text}``. A schema
    that is not a valid JSON Schema is refused (400/5006), as the API requires a valid one."""
    fmt = as_object(p.get("response_format"))
    guided = p.get("guided_json")
    if guided is not None and as_object(guided) is not None and guided != {}:
        schema: Any = guided
        where = "/guided_json"
    elif guided is not None or (fmt is not None and fmt.get("type") == "json_object"):
        schema = stated_schema(everything)
        where = "the prompt"
        if schema is None:
            return {"answer": text}
    elif fmt is not None and fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema")
        where = "/response_format/json_schema"
        inner = as_object(schema)
        if inner is not None and as_object(inner.get("schema")) is not None and "type" not in inner:
            schema = inner["schema"]  # OpenAI's {name, schema} wrapper (the /ai/v1 routes take it)
            where += "/schema"
        if as_object(schema) is None or schema == {}:
            return {"answer": text}
    else:
        return MISSING
    try:
        return answer_object(schema, question, seed)
    except SchemaError as exc:
        if where == "the prompt":
            return {"answer": text}
        raise APIError(400, 5006, f"AiError: Bad input: {where}: not a valid JSON Schema ({exc})") from None
    except Unsatisfiable:
        raise JsonModeUnmet from None


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
    limit = _max_tokens(p)
    text, truncated = _reply(question, seed, limit)
    tool = _tool_call(p, question, seed)
    structured = _json_mode(p, question, everything, text, seed)
    if tool is not None:
        text = ""
        said = count_tokens(tool[0] + msgspec.json.encode(tool[1]).decode())
    elif structured is not MISSING:
        said = count_tokens(msgspec.json.encode(structured).decode())
        if limit is not None and said > limit:
            raise JsonModeUnmet  # the object would be cut off: no valid JSON within max_tokens
    else:
        said = count_tokens(text)
    if limit is not None:
        said = min(said, limit)
    prompt_tokens = count_tokens(everything) + 4 * messages
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": said, "total_tokens": prompt_tokens + said}
    return Generation(text, truncated, usage, tool, structured)


def reply_text(gen: Generation) -> str:
    """The reply as text: the words, or a JSON-mode object as JSON."""
    return gen.text if gen.structured is MISSING else msgspec.json.encode(gen.structured).decode()
