"""The real ``openai`` SDK against the emulator's OpenAI-compatible routes (``emu.openai_base_url``):
chat, streaming, tool calls, JSON mode, embeddings, the Responses API, and Workers AI's errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from jsonschema import Draft7Validator
from workers_ai.testing import Emulator

from tests.emulator._calls import call, result

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
QWEN = "@cf/qwen/qwen3-30b-a3b-fp8"
BGE = "@cf/baai/bge-base-en-v1.5"
GPT_OSS = "@cf/openai/gpt-oss-20b"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",  # no description anywhere, like langchain-cloudflare's bind_tools sends
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city", "unit"],
        },
    },
}


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


@pytest.fixture
def client(emu: Emulator) -> Iterator[openai.OpenAI]:
    oai = openai.OpenAI(base_url=emu.openai_base_url, api_key=emu.api_token, max_retries=0)
    yield oai
    oai.close()


@pytest.mark.parametrize("model", [LLAMA, QWEN])
def test_chat_completion_is_plain_openai_json(emu: Emulator, client: openai.OpenAI, model: str) -> None:
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Tell me about llamas in Peru"}], max_tokens=64
    )
    assert reply.object == "chat.completion" and reply.model == model
    content = reply.choices[0].message.content
    assert content and "llamas" in content and reply.choices[0].finish_reason == "stop"
    assert (
        reply.usage is not None
        and reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    )
    raw = emu.requests[-1]
    assert raw.path == f"/client/v4/accounts/{emu.account_id}/ai/v1/chat/completions" and raw.model == model
    again = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Tell me about llamas in Peru"}], max_tokens=64
    )
    assert again.choices[0].message.content == content  # deterministic per input


def test_streaming_chunks_end_with_done_and_add_up(client: openai.OpenAI) -> None:
    messages: Any = [{"role": "user", "content": "Write about the orange cloud"}]
    whole = client.chat.completions.create(model=LLAMA, messages=messages)
    stream = client.chat.completions.create(
        model=LLAMA, messages=messages, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks) and len(chunks) > 3
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == whole.usage.total_tokens  # type: ignore[union-attr]


def test_tool_call_then_text_after_the_tool_result(client: openai.OpenAI) -> None:
    messages: Any = [{"role": "user", "content": "What is the weather in Lisbon?"}]
    first = client.chat.completions.create(model=LLAMA, messages=messages, tools=[WEATHER], stop=None)
    assert first.choices[0].finish_reason == "tool_calls"
    calls = first.choices[0].message.tool_calls
    assert calls is not None and len(calls) == 1
    call0: Any = calls[0]
    assert call0.type == "function" and call0.function.name == "get_weather" and call0.id
    arguments = json.loads(call0.function.arguments)
    parameters: Any = WEATHER["function"]
    assert Draft7Validator(parameters["parameters"]).is_valid(arguments) and arguments["unit"] in ("c", "f")
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [call0.model_dump()]},  # null: 400 on /ai/v1
        {"role": "tool", "tool_call_id": call0.id, "content": '{"temp": 21}'},
    ]
    second = client.chat.completions.create(model=LLAMA, messages=messages, tools=[WEATHER])
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.content
    assert not second.choices[0].message.tool_calls


def test_streamed_tool_call_arrives_in_fragments(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model=QWEN, messages=[{"role": "user", "content": "weather in Oslo?"}], tools=[WEATHER], stream=True
    )
    fragments = [tc for c in stream if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert len(fragments) >= 2 and {f.index for f in fragments} == {0}
    merged = "".join((f.function.arguments or "") for f in fragments if f.function)
    assert fragments[0].function is not None and fragments[0].function.name == "get_weather"
    assert set(json.loads(merged)) == {"city", "unit"}


def test_json_schema_response_format_gives_a_valid_object(client: openai.OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name", "age"],
    }
    reply = client.chat.completions.create(
        model=LLAMA,
        messages=[{"role": "user", "content": "A person, as JSON"}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}},
    )
    value = json.loads(reply.choices[0].message.content or "")
    assert Draft7Validator(schema).is_valid(value) and set(value) == {"name", "age"}


def test_embeddings_match_ai_run_vectors(emu: Emulator, client: openai.OpenAI) -> None:
    texts = ["a llama on a hill", "an orange cloud"]
    floats = client.embeddings.create(model=BGE, input=texts, encoding_format="float")
    default = client.embeddings.create(model=BGE, input=texts)  # the SDK asks for base64 and decodes it
    run = result(call(emu, "POST", f"ai/run/{BGE}", {"text": texts}))
    assert [d.embedding for d in floats.data] == run["data"]
    assert [len(d.embedding) for d in default.data] == [768, 768]
    for got, want in zip(default.data, run["data"], strict=True):
        assert max(abs(a - b) for a, b in zip(got.embedding, want, strict=True)) < 1e-6  # float32 on the wire
    assert floats.model == BGE and [d.index for d in floats.data] == [0, 1] and floats.usage.prompt_tokens > 0


def test_responses_api_text_in_text_out(client: openai.OpenAI) -> None:
    reply = client.responses.create(model=GPT_OSS, input="Name three rivers in Africa")
    assert reply.object == "response" and reply.status == "completed" and reply.model == GPT_OSS
    assert "rivers" in reply.output_text and reply.usage is not None and reply.usage.output_tokens > 0


def test_responses_api_refuses_other_models_and_streaming(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as other:
        client.responses.create(model=LLAMA, input="hi")
    assert other.value.status_code == 400 and "Responses API" in other.value.response.json()["errors"][0]["message"]
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=GPT_OSS, input="hi", stream=True)


def test_errors_use_workers_ai_envelope_and_codes(emu: Emulator, client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as unknown:
        client.chat.completions.create(model="@cf/nobody/missing", messages=[{"role": "user", "content": "x"}])
    assert unknown.value.status_code == 400
    env: Any = unknown.value.response.json()
    assert env["success"] is False and env["errors"][0]["code"] == 5007
    bad = openai.OpenAI(base_url=emu.openai_base_url, api_key="wrong-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as auth:
        bad.embeddings.create(model=BGE, input="x")
    assert auth.value.status_code == 401 and auth.value.response.json()["errors"][0]["code"] == 10000
    elsewhere = openai.OpenAI(base_url=emu.openai_base_url.replace(emu.account_id, "other"), api_key=emu.api_token)
    with pytest.raises(openai.NotFoundError) as account:
        elsewhere.with_options(max_retries=0).chat.completions.create(model=LLAMA, messages=[])
    assert account.value.response.json()["errors"][0]["code"] == 7003
    with pytest.raises(openai.BadRequestError) as not_text:
        client.chat.completions.create(model=BGE, messages=[{"role": "user", "content": "x"}])
    assert not_text.value.response.json()["errors"][0]["code"] == 5006


def test_json_mode_with_streaming_is_5023(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model=LLAMA,
            messages=[{"role": "user", "content": "x"}],
            response_format={"type": "json_object"},
            stream=True,
        )
    assert refused.value.response.json()["errors"][0]["code"] == 5023
    plain = client.chat.completions.create(  # {"type": "text"} is not JSON mode: streaming is fine
        model=LLAMA, messages=[{"role": "user", "content": "x"}], response_format={"type": "text"}, stream=True
    )
    assert [c for c in plain if c.choices and c.choices[0].delta.content]


@pytest.mark.parametrize("tail", ["workers-ai/v1", "compat"])
def test_openai_sdk_through_the_ai_gateway_paths(emu: Emulator, tail: str) -> None:
    base = f"{emu.gateway_url}/{emu.account_id}/my-gateway/{tail}"
    oai = openai.OpenAI(base_url=base, api_key=emu.api_token, max_retries=0)
    model = "workers-ai/" + LLAMA if tail == "compat" else LLAMA  # the compat endpoint names the provider
    reply = oai.chat.completions.create(model=model, messages=[{"role": "user", "content": "hello gateway"}])
    assert reply.choices[0].message.content and "gateway" in reply.choices[0].message.content
    assert emu.requests[-1].model == LLAMA and emu.requests[-1].path.startswith("/v1/")
    vectors = oai.embeddings.create(model=BGE, input="x", encoding_format="float")
    assert len(vectors.data[0].embedding) == 768
    oai.close()
