"""The unified AI REST API in the emulator: the universal ``POST /ai/run`` (model in the body), third-party
ids in their provider's shape, ``/ai/v1/messages`` with the real ``anthropic`` SDK, AI Gateway headers,
and the errors of this surface (2008 invalid provider, 402/2021 unfunded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from workers_ai.testing import Emulator

from tests.emulator._calls import call, error, result, sse

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
BGE = "@cf/baai/bge-m3"
CLAUDE = "anthropic/claude-sonnet-4-5"
WEATHER_TOOL = {
    "name": "get_weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


@pytest.fixture
def claude(emu: Emulator) -> Iterator[anthropic.Anthropic]:
    # the SDK posts to {base_url}/v1/messages; Workers AI takes a Bearer token (auth_token), not x-api-key
    base = f"{emu.base_url}/accounts/{emu.account_id}/ai"
    client = anthropic.Anthropic(base_url=base, auth_token=emu.api_token, api_key=None, max_retries=0)
    yield client
    client.close()


def test_universal_route_answers_workers_ai_ids_like_ai_run(emu: Emulator) -> None:
    direct = result(call(emu, "POST", f"ai/run/{BGE}", {"text": ["a llama"]}))
    universal = result(call(emu, "POST", "ai/run", {"model": BGE, "text": ["a llama"]}))
    prefixed = result(call(emu, "POST", "ai/run", {"model": "workers-ai/" + BGE, "text": ["a llama"]}))
    assert universal == direct == prefixed and universal["shape"] == [1, 1024]
    assert [r.model for r in emu.requests] == [BGE, BGE, BGE]
    streamed = sse(call(emu, "POST", "ai/run", {"model": LLAMA, "prompt": "hi there", "stream": True}))
    assert streamed[-1] == "[DONE]" and json.loads(streamed[0])["response"]
    status, code, _ = error(call(emu, "POST", "ai/run", {"model": "@cf/nobody/missing", "prompt": "x"}))
    assert (status, code) == (400, 5007)


def test_third_party_ids_answer_in_their_provider_shape(emu: Emulator) -> None:
    messages = [{"role": "user", "content": "Summarise the plot of Hamlet"}]
    gpt = result(call(emu, "POST", "ai/run", {"model": "openai/gpt-4.1-mini", "messages": messages}))
    assert gpt["object"] == "chat.completion" and gpt["model"] == "openai/gpt-4.1-mini"
    assert "Hamlet" in gpt["choices"][0]["message"]["content"]
    resp = result(call(emu, "POST", "ai/run", {"model": "openai/gpt-4.1-mini", "input": "Say hi"}))
    assert resp["object"] == "response" and resp["output"][0]["content"][0]["type"] == "output_text"
    msg = result(call(emu, "POST", "ai/run", {"model": CLAUDE, "max_tokens": 50, "messages": messages}))
    assert msg["type"] == "message" and msg["role"] == "assistant" and msg["stop_reason"] == "end_turn"
    assert "Hamlet" in msg["content"][0]["text"] and msg["usage"]["input_tokens"] > 0
    chat = call(emu, "POST", "ai/v1/chat/completions", {"model": CLAUDE, "messages": messages})
    assert json.loads(chat.data)["object"] == "chat.completion"  # the OpenAI route answers any provider in its shape


def test_unknown_provider_is_2008_and_a_missing_model_is_5006(emu: Emulator) -> None:
    assert error(call(emu, "POST", "ai/run", {"model": "acme/thing-1", "prompt": "x"}))[:2] == (400, 2008)
    assert error(call(emu, "POST", "ai/run", {"model": "no-provider-here", "prompt": "x"}))[:2] == (400, 2008)
    assert error(call(emu, "POST", "ai/v1/chat/completions", {"messages": []}))[:2] == (400, 5006)


def test_unfunded_fault_hits_third_party_models_only(emu: Emulator) -> None:
    emu.inject("unfunded", times=None)
    body = {"model": "openai/gpt-4.1-mini", "messages": [{"role": "user", "content": "x"}]}
    status, code, message = error(call(emu, "POST", "ai/run", body))
    assert (status, code) == (402, 2021) and "openai/gpt-4.1-mini" in message
    assert error(call(emu, "POST", "ai/v1/chat/completions", body))[:2] == (402, 2021)
    assert result(call(emu, "POST", "ai/run", {"model": LLAMA, "prompt": "x"}))[
        "response"
    ]  # Workers AI: billed as usual
    assert error(call(emu, "POST", "ai/run", body, **{"x-emulator-fault": "unfunded"}))[:2] == (402, 2021)


def test_gateway_headers_are_recorded_and_answered(emu: Emulator) -> None:
    body = {"model": "openai/gpt-4.1-mini", "messages": [{"role": "user", "content": "x"}]}
    headers = {"cf-aig-gateway-id": "my-gateway", "cf-aig-cache-ttl": "3600", "cf-aig-authorization": "Bearer g-secret"}
    resp = call(emu, "POST", "ai/run", body, **headers)
    assert resp.status == 200 and resp.headers["cf-aig-log-id"] and resp.headers["cf-aig-cache-status"] == "MISS"
    seen = emu.requests[-1].aig
    assert seen == {"cf-aig-gateway-id": "my-gateway", "cf-aig-cache-ttl": "3600", "cf-aig-authorization": "Bearer ***"}


def test_anthropic_sdk_messages_text(emu: Emulator, claude: anthropic.Anthropic) -> None:
    for model in (CLAUDE, LLAMA):  # a third-party id and a Workers AI model, both in Anthropic's shape
        reply = claude.messages.create(
            model=model,
            max_tokens=100,
            system="Be brief.",
            messages=[{"role": "user", "content": [{"type": "text", "text": "Why is the sky blue?"}]}],
        )
        block: Any = reply.content[0]
        assert reply.type == "message" and reply.model == model and block.type == "text" and "sky" in block.text
        assert reply.stop_reason == "end_turn" and reply.usage.output_tokens > 0
    assert emu.requests[-1].path.endswith("/ai/v1/messages")


def test_anthropic_sdk_tool_use_then_text(claude: anthropic.Anthropic) -> None:
    ask: Any = {"role": "user", "content": "Weather in Rome?"}
    first = claude.messages.create(model=CLAUDE, max_tokens=100, messages=[ask], tools=[WEATHER_TOOL])  # type: ignore[list-item]
    use: Any = first.content[0]
    assert first.stop_reason == "tool_use" and use.type == "tool_use" and use.name == "get_weather"
    assert isinstance(use.input, dict) and isinstance(use.input["city"], str)
    answer: Any = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}
    history: Any = [ask, {"role": "assistant", "content": first.content}, answer]
    second = claude.messages.create(model=CLAUDE, max_tokens=100, messages=history, tools=[WEATHER_TOOL])  # type: ignore[list-item]
    assert second.stop_reason == "end_turn" and second.content[0].type == "text"


def test_anthropic_sdk_stream(claude: anthropic.Anthropic) -> None:
    whole = claude.messages.create(model=CLAUDE, max_tokens=100, messages=[{"role": "user", "content": "Count sheep"}])
    with claude.messages.stream(
        model=CLAUDE, max_tokens=100, messages=[{"role": "user", "content": "Count sheep"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    first: Any = whole.content[0]
    assert text.strip() == first.text and final.stop_reason == "end_turn"


def test_messages_errors_use_the_envelope(emu: Emulator, claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as missing:
        claude.messages.create(model="@cf/nobody/missing", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert missing.value.response.json()["errors"][0]["code"] == 5007
    wrong = anthropic.Anthropic(base_url=str(claude.base_url), auth_token="nope", api_key=None, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        wrong.messages.create(model=CLAUDE, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert error(call(emu, "POST", "ai/v1/messages", {"model": CLAUDE, "messages": []}))[:2] == (400, 5006)
