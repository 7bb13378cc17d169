"""Stream events' tool calls are typed (:class:`ToolCallDelta`), whichever chunk shape carried them: the
classic Workers AI whole call (``{name, arguments: {...}}``, through the fast path), OpenAI-style
fragments joined by index, and odd fragments salvaged field by field; each stream ends with usage."""

from __future__ import annotations

from typing import Any

import msgspec
from workers_ai import ToolCallDelta, WorkersAI

from tests._server import Reply, ScriptedServer
from tests.conftest import ACCOUNT

USAGE = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


def _sse(*objs: Any) -> Reply:
    body = b"".join(b"data: " + msgspec.json.encode(o) + b"\n\n" for o in objs) + b"data: [DONE]\n\n"
    return Reply(200, content_type="text/event-stream", chunks=[body])


def _events(server: ScriptedServer, reply: Reply) -> list[Any]:
    server.script(reply)
    with WorkersAI(account_id=ACCOUNT, api_token="t", base_url=server.base_url, max_retries=0) as ai:
        with ai.model(MODEL).chat_stream(messages=[{"role": "user", "content": "weather?"}]) as events:
            return list(events)


def test_classic_tool_calls_are_typed_whole_calls(server: ScriptedServer) -> None:
    seen = _events(
        server,
        _sse(
            {"response": "Let me check. ", "tool_calls": []},
            {"response": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            {"response": "", "usage": USAGE},
        ),
    )
    calls = [c for e in seen for c in e.tool_calls]
    assert calls == [ToolCallDelta(name="get_weather", arguments={"city": "Paris"})]
    assert "".join(e.text for e in seen) == "Let me check. "
    assert seen[-1].usage is not None and seen[-1].usage.total_tokens == 12


def test_openai_fragments_are_typed_and_read_from_function(server: ScriptedServer) -> None:
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"ci'}}
    seen = _events(
        server,
        _sse(
            {"choices": [{"index": 0, "delta": {"content": "Sure"}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [first]}}]},
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}}
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": USAGE},
        ),
    )
    deltas = [c for e in seen for c in e.tool_calls]
    assert [(d.index, d.id, d.name, d.arguments) for d in deltas] == [
        (0, "call_1", "get_weather", '{"ci'),
        (0, None, "", 'ty": "Oslo"}'),
    ]
    assert all(type(d) is ToolCallDelta for d in deltas)
    assert seen[-1].usage is not None and seen[-1].usage.total_tokens == 12 and seen[-1].finish_reason == "tool_calls"


def test_odd_fragments_are_salvaged_not_fatal(server: ScriptedServer) -> None:
    seen = _events(
        server,
        _sse(
            {"response": "", "tool_calls": [{"name": "f", "arguments": [1, 2], "index": "zero"}, "junk"]},
            {"response": "ok", "usage": USAGE},
        ),
    )
    calls = [c for e in seen for c in e.tool_calls]
    assert calls == [ToolCallDelta(name="f")]
