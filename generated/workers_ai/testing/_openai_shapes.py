"""The OpenAI shapes of a text generation (:class:`._textgen.Generation`): ``chat.completion`` (and
``text_completion``), the ``chat.completion.chunk`` stream, and the Responses-API object gpt-oss answers
with. Deterministic per request seed, like the generation itself."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ._textgen import Generation, reply_text

__all__ = ["CREATED", "PADDING", "chat_chunks", "chat_completion", "pieces", "responses_object"]

CREATED = 1735689600  # a fixed "created" timestamp keeps replies byte-identical across runs
PADDING = "abcdefghijklmnopqrstuvwxyz0123456789"
"""Workers AI pads stream events with a ``p`` field of varying length; the emulator does too."""


def _chat_id(seed: str) -> str:
    return "chatcmpl-" + seed[:24]


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


def responses_object(model_id: str, gen: Generation, seed: str) -> dict[str, Any]:
    """A Responses-API object for ``gen`` (what gpt-oss answers an ``input`` request with): a message
    item with the text, a ``function_call`` item when it calls a tool, usage as input/output tokens."""
    items: list[dict[str, Any]] = []
    text = reply_text(gen)
    if text:
        content: list[dict[str, Any]] = [{"type": "output_text", "text": text, "annotations": []}]
        items.append({"type": "message", "id": "msg_" + seed[:24], "role": "assistant", "content": content})
    if gen.tool is not None:
        call = _openai_tool_call(gen, seed)
        items.append(
            {
                "type": "function_call",
                "id": "fc_" + seed[:24],
                "call_id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
            }
        )
    usage = {
        "input_tokens": gen.usage["prompt_tokens"],
        "output_tokens": gen.usage["completion_tokens"],
        "total_tokens": gen.usage["total_tokens"],
    }
    return {
        "id": "resp_" + seed[:24],
        "object": "response",
        "created_at": CREATED,
        "model": model_id,
        "status": "completed",
        "output": items,
        "usage": usage,
    }
