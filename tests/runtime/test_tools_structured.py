"""Tool calling and structured outputs in the runtime: one ToolCall for both reply shapes and streams,
the tool loop (3 rounds against a scripted server, 1 against the emulator), max_rounds, raising tools,
replies that do not fit the type, JSON mode refused with streaming before anything is sent."""

from __future__ import annotations

import json
import socket
from typing import Any, Literal

import msgspec
import pytest
from workers_ai import WorkersAI, errors, tool_calls
from workers_ai._core.stream_events import ToolCallMerger
from workers_ai._tools.tooldefs import tool_def
from workers_ai.testing import Emulator

from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._drivers import KINDS, Driver
from tests.runtime._raw import RawRequest, RawServer, envelope, reply

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
GPT = "@cf/openai/gpt-oss-20b"


class Weather(msgspec.Struct):
    city: str
    temperature: float


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def get_weather(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: Name of the city.
        unit: Temperature unit.
    """
    return {"city": city, "unit": unit, "days": days}


def test_both_tool_call_shapes_and_stream_fragments_decode_to_the_same_toolcall() -> None:
    legacy = {"response": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    openai = {
        "choices": [
            {
                "message": {
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        }
                    ]
                }
            }
        ]
    }
    flat = {
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
        ]
    }
    a, b, c = tool_calls(legacy)[0], tool_calls(openai)[0], tool_calls(flat)[0]
    assert (a.name, a.arguments, a.id) == ("get_weather", {"city": "Paris"}, None)
    assert (b.name, b.arguments, b.id) == ("get_weather", {"city": "Paris"}, "c1")
    assert b == c and type(a) is type(b)
    merger = ToolCallMerger()
    merger.add([{"index": 0, "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"ci'}}])
    merger.add([{"index": 0, "function": {"arguments": 'ty":"Paris"}'}}])
    assert merger.calls[0].arguments == b.arguments and type(merger.calls[0]) is type(b)
    # Arguments that are no JSON object lose nothing: the call keeps the text and says what is wrong.
    (broken,) = tool_calls({"tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{broken"}}]})
    assert (broken.name, broken.arguments, broken.raw_arguments) == ("f", {}, "{broken")
    assert broken.arguments_error is not None and "not valid JSON" in broken.arguments_error
    assert broken.openai_form()["function"]["arguments"] == "{broken"  # sent back as the model wrote it


def test_a_function_becomes_a_tool_from_its_signature_and_docstring() -> None:
    d = tool_def(get_weather)
    assert d.name == "get_weather" and d.description == "Current weather for a city."
    props = d.parameters["properties"]
    assert props["unit"]["enum"] == ["c", "f"] and props["unit"]["type"] == "string"
    assert props["city"] == {"type": "string", "description": "Name of the city."}
    assert d.parameters["required"] == ["city"]
    assert d.request("openai")["function"]["name"] == "get_weather" and "function" not in d.request("flat")
    assert d.convert({"city": "Oslo"}) == {"city": "Oslo", "unit": "c", "days": 1}
    with pytest.raises(msgspec.ValidationError):
        d.convert({"city": "Oslo", "unit": "kelvin"})
    with pytest.raises(errors.ConfigurationError):
        tool_def(lambda x: x)


def _scripted(rounds: int, shape: str) -> tuple[RawServer, list[dict[str, Any]]]:
    """A model that calls get_weather `rounds` times (one more per tool result it has seen), then answers."""
    bodies: list[dict[str, Any]] = []

    def handle(conn: socket.socket, req: RawRequest) -> bool:
        body = json.loads(req.body)
        bodies.append(body)
        seen = sum(1 for m in body["messages"] if m.get("role") == "tool")
        if seen >= rounds:
            result: Any = {"response": f"done after {seen}"}
        elif shape == "legacy":
            result = {"response": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": f"c{seen}"}}]}
        else:
            call = {
                "id": f"call{seen}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": f"c{seen}"})},
            }
            result = {"response": "", "tool_calls": [call]}
        return reply(conn, envelope({**result, "usage": USAGE}))  # text replies always carry usage

    return RawServer(handle), bodies


@pytest.mark.parametrize("shape", ["legacy", "openai"])
def test_a_tool_loop_of_three_rounds(shape: str) -> None:
    server, bodies = _scripted(3, shape)
    with server, WorkersAI(account_id="a" * 32, api_token="t", base_url=server.base_url) as ai:
        run = ai.model(LLAMA).run_tools(
            messages=[{"role": "user", "content": "weather?"}], tools=[get_weather], max_rounds=3
        )
    assert run.rounds == 3 and run.response == "done after 3" and len(bodies) == 4
    assert [c.arguments["city"] for c in run.calls] == ["c0", "c1", "c2"]
    last = bodies[-1]["messages"]
    tools_sent = [m for m in last if m["role"] == "tool"]
    assert [json.loads(m["content"])["city"] for m in tools_sent] == ["c0", "c1", "c2"]
    if shape == "legacy":
        assert all(m["name"] == "get_weather" and "tool_call_id" not in m for m in tools_sent)
    else:
        assert [m["tool_call_id"] for m in tools_sent] == ["call0", "call1", "call2"]
        assert last[1]["tool_calls"][0]["function"]["arguments"] == json.dumps({"city": "c0"})  # as the model wrote it
    assert bodies[0]["tools"][0]["name"] == "get_weather"  # llama-3.3 takes the flat form
    assert run.messages[-1] == {"role": "assistant", "content": "done after 3"}


def test_max_rounds_exceeded_names_the_last_calls() -> None:
    server, bodies = _scripted(5, "legacy")
    with server, WorkersAI(account_id="a" * 32, api_token="t", base_url=server.base_url) as ai:
        with pytest.raises(
            errors.ToolLoopError, match=r"after 2 round\(s\); last calls: get_weather\(\{\"city\":\"c2\"\}\)"
        ) as info:
            ai.model(LLAMA).run_tools(messages=[{"role": "user", "content": "x"}], tools=[get_weather], max_rounds=2)
    assert len(bodies) == 3 and info.value.calls[0].arguments == {"city": "c2"}


def _boom(city: str) -> str:
    raise RuntimeError(f"no weather for {city}")


def test_a_raising_tool_is_reported_to_the_model_or_re_raised() -> None:
    def get_weather(city: str) -> str:  # the name the scripted model calls
        return _boom(city)

    server, bodies = _scripted(1, "legacy")
    with server, WorkersAI(account_id="a" * 32, api_token="t", base_url=server.base_url) as ai:
        run = ai.model(LLAMA).run_tools(messages=[{"role": "user", "content": "x"}], tools=[get_weather])
        assert run.messages[2]["content"] == "error: RuntimeError: no weather for c0"
        assert bodies[-1]["messages"][2]["content"] == "error: RuntimeError: no weather for c0"
        before = len(bodies)
        with pytest.raises(RuntimeError, match="no weather for c0"):
            ai.model(LLAMA).run_tools(
                messages=[{"role": "user", "content": "x"}], tools=[get_weather], on_tool_error="raise"
            )
        assert len(bodies) == before + 1  # the first call only: nothing sent after the tool raised


def test_arguments_are_validated_against_the_signature_before_the_function_runs() -> None:
    ran: list[int] = []

    def get_weather(city: int) -> str:  # the scripted model sends a string
        ran.append(city)
        return "x"

    server, _ = _scripted(1, "legacy")
    with server, WorkersAI(account_id="a" * 32, api_token="t", base_url=server.base_url) as ai:
        run = ai.model(LLAMA).run_tools(messages=[{"role": "user", "content": "x"}], tools=[get_weather])
    assert ran == [] and run.messages[2]["content"].startswith("error: invalid arguments for get_weather at $.city")


def test_the_tool_loop_against_the_emulator_in_both_families() -> None:
    with Emulator() as emu:
        ai = emu.client()
        for model in (LLAMA, GPT):
            run = ai.model(model).run_tools(
                messages=[{"role": "user", "content": "weather in Paris"}], tools=[get_weather]
            )
            assert run.rounds == 1 and "Paris" in run.response
            assert run.calls[0].name == "get_weather" and isinstance(run.calls[0].arguments["city"], str)
        assert all(r.status == 200 for r in emu.requests)


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


def get_news(topic: str) -> list[str]:
    """Headlines about a topic."""
    return [f"news about {topic}"]


def test_a_three_round_tool_loop_against_the_emulator_in_both_families() -> None:
    # A question naming three tools is a multi-step task for the emulator: one named tool per round.
    question = "Use get_weather, then get_time, then get_news for Paris"
    with Emulator() as emu:
        ai = emu.client()
        for model in (LLAMA, GPT):
            before = len(emu.requests)
            run = ai.model(model).run_tools(
                messages=[{"role": "user", "content": question}], tools=[get_news, get_time, get_weather], max_rounds=4
            )
            assert run.rounds == 3, model
            assert [c.name for c in run.calls] == ["get_weather", "get_time", "get_news"], model
            assert "Paris" in run.response
            assert len(emu.requests) - before == 4  # three rounds of calls, then the answer
            assert sum(1 for m in run.messages if (m.get("role") if isinstance(m, dict) else None) == "tool") == 3
        with pytest.raises(errors.ToolLoopError):
            ai.model(LLAMA).run_tools(
                messages=[{"role": "user", "content": question}], tools=[get_news, get_time, get_weather], max_rounds=2
            )


def test_a_reply_that_does_not_fit_the_type_raises_with_the_raw_reply() -> None:
    def handle(conn: socket.socket, req: RawRequest) -> bool:
        return reply(conn, envelope({"response": {"city": "Paris", "temperature": "warm"}, "usage": USAGE}))

    with RawServer(handle) as server, WorkersAI(account_id="a" * 32, api_token="t", base_url=server.base_url) as ai:
        with pytest.raises(errors.ResponseDecodeError, match=r"does not fit Weather at \$.temperature") as info:
            ai.model(LLAMA).chat(messages=[{"role": "user", "content": "x"}], response_format=Weather)
        sent = json.loads(server.requests[0].body)["response_format"]
    assert b'"warm"' in (info.value.body or b"")
    assert sent["type"] == "json_schema" and sent["json_schema"]["properties"]["temperature"] == {"type": "number"}
    assert "$defs" not in sent["json_schema"] and "$ref" not in json.dumps(sent)


def test_json_mode_with_streaming_is_refused_before_sending() -> None:
    with Emulator() as emu:
        ai = emu.client()
        llama = ai.model(LLAMA)
        body = {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}}
        with pytest.raises(errors.InputValidationError, match="streaming"):
            llama.stream(body)
        with pytest.raises(errors.InputValidationError, match="streaming"):
            llama.run({**body, "stream": True})
        with pytest.raises(errors.InputValidationError, match="streaming"):
            ai.run(LLAMA, body, stream=True)
        with pytest.raises(errors.InputValidationError, match="no JSON mode"):
            ai.model("@cf/meta/llama-3-8b-instruct").run({"prompt": "x", "response_format": {"type": "json_object"}})
        assert emu.requests == []


def test_structured_output_from_the_emulator_and_json_mode_unmet() -> None:
    with Emulator() as emu:
        llama = emu.client().model(LLAMA)
        out = llama.chat(messages=[{"role": "user", "content": "weather"}], response_format=Weather)
        assert isinstance(out.parsed, Weather) and json.loads(out.output.response)["city"] == out.parsed.city
        assert out.usage is not None and out.usage.total_tokens > 0
        raw = llama.chat(messages=[{"role": "user", "content": "x"}], response_format={"type": "json_object"})
        assert isinstance(raw.parsed, dict)
        emu.inject("json_mode_unmet", times=1)
        with pytest.raises(errors.JsonModeError, match="couldn't be met"):
            llama.chat(messages=[{"role": "user", "content": "x"}], response_format=Weather)


def test_the_json_mode_message_maps_to_its_error_whatever_the_code() -> None:
    def handle(conn: socket.socket, req: RawRequest) -> bool:
        body = json.dumps(
            {"success": False, "result": None, "errors": [{"code": 5000, "message": "JSON Mode couldn't be met"}]}
        )
        return reply(conn, body.encode(), status=400)

    with RawServer(handle) as server, WorkersAI(account_id="a" * 32, api_token="t", base_url=server.base_url) as ai:
        with pytest.raises(errors.JsonModeError):
            ai.model(LLAMA).chat(messages=[{"role": "user", "content": "x"}], response_format=Weather)


@pytest.mark.parametrize("kind", KINDS)
def test_tool_dicts_are_sent_as_given_in_whichever_form_the_model_takes(server: ScriptedServer, kind: str) -> None:
    # gpt-oss takes both forms: a flat dict stays flat (it was rewritten into the OpenAI form); kimi and glm
    # take custom tools, which have no name at the top (the typed chat refused one, naming no model); a
    # classic model's flat tool needs its name and parameters (it was sent without).
    message = {"role": "assistant", "content": "x", "refusal": None}
    choice = {"index": 0, "finish_reason": "stop", "message": message, "logprobs": None}
    completion = {"id": "c", "object": "chat.completion", "created": 1, "model": GPT, "choices": [choice]}
    server.script(*[ok({**completion, "usage": USAGE})] * 3)
    drive = Driver(kind, ACCOUNT, TOKEN, server.base_url)
    flat = {"name": "f", "parameters": {"type": "object", "properties": {}}}
    custom = {"type": "custom", "custom": {"name": "grep", "description": "search"}}
    hi = [{"role": "user", "content": "x"}]
    drive.call(lambda ai: ai.model(GPT).chat(messages=hi, tools=[flat]))
    drive.call(lambda ai: ai.model("@cf/moonshotai/kimi-k2.5").chat(messages=hi, tools=[custom]))
    drive.call(lambda ai: ai.model("@cf/zai-org/glm-4.7-flash").chat(messages=hi, tools=[custom]))
    assert [r.json()["tools"] for r in server.requests] == [[flat], [custom], [custom]]
    for tool, missing in (({"parameters": {}}, "name"), ({"name": "f", "description": "d"}, "parameters")):
        with pytest.raises(errors.InputValidationError) as caught:
            drive.call(lambda ai, tool=tool: ai.model(LLAMA).chat(messages=hi, tools=[tool]))
        assert str(caught.value).startswith(f"{LLAMA}: invalid input at $.tools[0]") and missing in str(caught.value)
    with pytest.raises(errors.InputValidationError, match=f"^{GPT}: invalid input at"):
        drive.call(lambda ai: ai.model(GPT).run_tools(messages=hi, tools=[{"parameters": {}}]))
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_whose_tool_arguments_are_not_json_is_kept(server: ScriptedServer, kind: str) -> None:
    # gpt-oss emits malformed arguments at times; the schema says only `string`, so the reply is valid and
    # the user gets it, the text as sent and the parse problem; the tool loop tells the model.
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Paris"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    calls = {"id": "c", "object": "chat.completion", "created": 1, "model": GPT, "choices": [choice], "usage": USAGE}
    done = {
        **calls,
        "choices": [{**choice, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    }
    server.script(ok(calls), ok(calls), ok(done))
    drive = Driver(kind, ACCOUNT, TOKEN, server.base_url)
    ask = [{"role": "user", "content": "weather?"}]
    reply = drive.call(lambda ai: ai.model("@cf/openai/gpt-oss-120b").chat(messages=ask))
    (got,) = reply.tool_calls
    assert (got.name, got.arguments, got.raw_arguments) == ("get_weather", {}, "{city: Paris")
    assert got.arguments_error is not None and got.arguments_error.startswith("arguments are not valid JSON")
    assert reply.choices[0].message.tool_calls is not None  # the typed reply itself, as sent
    run = drive.call(lambda ai: ai.model(GPT).run_tools(messages=ask, tools=[get_weather]))
    assert run.response == "ok" and run.calls[0].raw_arguments == "{city: Paris"
    told = [m for m in server.requests[-1].json()["messages"] if m["role"] == "tool"]
    assert told[0]["content"].startswith("error: arguments are not valid JSON")
