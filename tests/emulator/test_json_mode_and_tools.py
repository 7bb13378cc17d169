"""Structured output and tool calls on ``/ai/run`` (raw HTTP): JSON-mode objects valid against the request's
schema, tool calls in both output shapes, text after a tool result, requests the API takes that published
schemas would refuse, and the error codes of this area (5023, json_mode_unmet, 5028, 5016)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft7Validator
from workers_ai.testing import Emulator

from tests.emulator._calls import call, error, result, sse

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # legacy output: {response, tool_calls: [{name, arguments}]}
QWEN = "@cf/qwen/qwen3-30b-a3b-fp8"  # OpenAI-shaped output: choices[0].message.tool_calls
RECIPE = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 3},
        "servings": {"type": "integer", "minimum": 1, "maximum": 12},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["quick", "vegan", "spicy"]}, "minItems": 1},
        "steps": {
            "type": "array",
            "items": {"type": "object", "properties": {"n": {"type": "integer"}, "text": {"type": "string"}}},
        },
    },
    "required": ["title", "servings", "tags"],
}
PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["city", "days"],
}
PLAIN_TOOL = {"name": "forecast", "description": "Weather forecast", "parameters": PARAMS}
OPENAI_TOOL = {"type": "function", "function": {"name": "forecast", "parameters": PARAMS}}  # no descriptions
CLOCK_TOOL = {"type": "function", "function": {"name": "clock", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


def _run(emu: Emulator, model: str, body: dict[str, Any], **headers: str) -> Any:
    return call(emu, "POST", f"ai/run/{model}", body, **headers)


def _ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_json_schema_response_is_an_object_valid_against_the_schema(emu: Emulator) -> None:
    body = {"messages": _ask("A recipe"), "response_format": {"type": "json_schema", "json_schema": RECIPE}}
    first = result(_run(emu, LLAMA, body))
    assert isinstance(first["response"], dict) and Draft7Validator(RECIPE).is_valid(first["response"])
    assert set(first["response"]) >= {"title", "servings", "tags"}
    assert result(_run(emu, LLAMA, body))["response"] == first["response"]  # deterministic
    other = result(_run(emu, LLAMA, {**body, "messages": _ask("Another recipe")}))["response"]
    assert Draft7Validator(RECIPE).is_valid(other)
    chat = result(_run(emu, QWEN, body))  # chat-shaped models carry it as the message's JSON text
    assert Draft7Validator(RECIPE).is_valid(json.loads(chat["choices"][0]["message"]["content"]))


def test_json_object_gives_some_object_and_prompt_form_works(emu: Emulator) -> None:
    out = result(_run(emu, LLAMA, {"prompt": "Any JSON", "response_format": {"type": "json_object"}}))
    assert isinstance(out["response"], dict) and out["response"]


def test_json_mode_with_stream_is_5023_and_unmet_is_a_fault(emu: Emulator) -> None:
    body: dict[str, Any] = {"messages": _ask("x"), "response_format": {"type": "json_object"}}
    assert error(_run(emu, LLAMA, {**body, "stream": True}))[:2] == (400, 5023)
    emu.inject("json_mode_unmet")
    assert result(_run(emu, LLAMA, {"prompt": "no JSON mode here"}))["response"]  # the fault waits for JSON mode
    status, _, message = error(_run(emu, LLAMA, body))
    assert status == 400 and message == "JSON Mode couldn't be met"
    assert isinstance(result(_run(emu, LLAMA, body))["response"], dict)  # one-shot
    impossible = {"type": "json_schema", "json_schema": {"type": "string", "minLength": 5, "maxLength": 2}}
    assert (
        error(_run(emu, LLAMA, {"messages": _ask("x"), "response_format": impossible}))[2]
        == "JSON Mode couldn't be met"
    )


@pytest.mark.parametrize("tool", [PLAIN_TOOL, OPENAI_TOOL], ids=["plain", "openai-form"])
def test_legacy_model_calls_a_tool_with_valid_arguments(emu: Emulator, tool: dict[str, Any]) -> None:
    out = result(_run(emu, LLAMA, {"messages": _ask("Weather in Oslo this week?"), "tools": [tool], "stop": None}))
    [called] = out["tool_calls"]
    assert called["name"] == "forecast" and isinstance(called["arguments"], dict)
    assert Draft7Validator(PARAMS).is_valid(called["arguments"])


def test_tool_named_in_the_question_is_picked_and_text_follows_a_tool_result(emu: Emulator) -> None:
    tools = [OPENAI_TOOL, CLOCK_TOOL]
    first = result(_run(emu, LLAMA, {"messages": _ask("What does the clock say?"), "tools": tools}))
    assert [c["name"] for c in first["tool_calls"]] == ["clock"]
    history = [
        *_ask("What does the clock say?"),
        {"role": "assistant", "content": "", "tool_calls": [{"name": "clock", "arguments": {}}]},
        {"role": "tool", "content": "12:00", "name": "clock"},
    ]
    second = result(_run(emu, LLAMA, {"messages": history, "tools": tools}))
    assert second["response"] and not second.get("tool_calls")
    none = result(_run(emu, LLAMA, {"messages": _ask("clock?"), "tools": tools, "tool_choice": "none"}))
    assert none["response"] and not none.get("tool_calls")


def test_chat_shaped_model_calls_tools_in_openai_shape(emu: Emulator) -> None:
    out = result(_run(emu, QWEN, {"messages": _ask("forecast for Rome, 3 days"), "tools": [OPENAI_TOOL]}))
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] == ""
    [called] = choice["message"]["tool_calls"]
    assert (
        called["type"] == "function" and called["id"].startswith("call_") and called["function"]["name"] == "forecast"
    )
    assert Draft7Validator(PARAMS).is_valid(json.loads(called["function"]["arguments"]))


def test_streamed_tool_calls(emu: Emulator) -> None:
    legacy = [
        json.loads(e)
        for e in sse(_run(emu, LLAMA, {"messages": _ask("forecast"), "tools": [PLAIN_TOOL], "stream": True}))[:-1]
    ]
    calls = [c for e in legacy for c in e.get("tool_calls") or []]
    assert [c["name"] for c in calls] == ["forecast"] and Draft7Validator(PARAMS).is_valid(calls[0]["arguments"])
    assert "usage" in legacy[-1]
    chunks = [
        json.loads(e)
        for e in sse(_run(emu, QWEN, {"messages": _ask("forecast"), "tools": [OPENAI_TOOL], "stream": True}))[:-1]
    ]
    pieces = [tc for c in chunks for ch in c.get("choices", []) for tc in ch["delta"].get("tool_calls") or []]
    assert len(pieces) >= 2 and pieces[0]["function"]["name"] == "forecast"
    arguments = json.loads("".join(p["function"]["arguments"] for p in pieces))
    assert Draft7Validator(PARAMS).is_valid(arguments)


def test_requests_the_platform_takes_are_accepted(emu: Emulator) -> None:
    # langchain-cloudflare's shape: no description on the tool or its parameters, stop: null, content: null
    body = {
        "messages": [*_ask("hi"), {"role": "assistant", "content": None, "tool_calls": []}, *_ask("weather?")],
        "tools": [
            {
                "type": "function",
                "function": {"name": "w", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
            }
        ],
        "stop": None,
    }
    assert _run(emu, LLAMA, body).status == 200
    assert _run(emu, QWEN, body).status == 200
    # still refused: what the API refuses too (a wrong type)
    assert error(_run(emu, LLAMA, {"messages": _ask("x"), "max_tokens": "lots"}))[:2] == (400, 5006)


@pytest.mark.parametrize(("fault", "status", "code"), [("model_deprecated", 410, 5028), ("model_agreement", 403, 5016)])
def test_model_lifecycle_faults(emu: Emulator, fault: str, status: int, code: int) -> None:
    emu.inject(fault, model=LLAMA)
    got_status, got_code, message = error(_run(emu, LLAMA, {"prompt": "x"}))
    assert (got_status, got_code) == (status, code) and LLAMA in message
    assert result(_run(emu, LLAMA, {"prompt": "x"}))["response"]
    assert error(_run(emu, QWEN, {"prompt": "x"}, **{"x-emulator-fault": fault}))[:2] == (status, code)
