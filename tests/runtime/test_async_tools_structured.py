"""The async client's structured outputs and tool loop: the same Parsed and ToolRun as the sync handles."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from workers_ai import AsyncWorkersAI, errors
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
GPT = "@cf/openai/gpt-oss-20b"


class Weather(msgspec.Struct):
    city: str
    temperature: float


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temperature": 20.5}


def test_async_structured_output_tool_loop_and_stream_refusal() -> None:
    with Emulator() as emu:

        async def main() -> dict[str, Any]:
            async with AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
                llama = ai.model(LLAMA)
                reply = await llama.chat(messages=[{"role": "user", "content": "weather"}], response_format=Weather)
                legacy = await llama.run_tools(
                    messages=[{"role": "user", "content": "weather in Oslo"}], tools=[get_weather]
                )
                oai = await ai.model(GPT).run_tools(
                    messages=[{"role": "user", "content": "weather in Oslo"}], tools=[get_weather]
                )
                before = len(emu.requests)
                with pytest.raises(errors.InputValidationError, match="streaming"):
                    llama.stream(
                        {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}}
                    )
                return {"reply": reply, "legacy": legacy, "oai": oai, "sent_after_refusal": len(emu.requests) - before}

        out = asyncio.run(main())
    assert isinstance(out["reply"].parsed, Weather)
    assert out["legacy"].rounds == 1 and "Oslo" in out["legacy"].response
    assert out["legacy"].messages[2]["role"] == "tool" and out["legacy"].messages[2]["name"] == "get_weather"
    assert out["oai"].rounds == 1 and out["oai"].messages[2]["tool_call_id"].startswith("call_")
    assert out["sent_after_refusal"] == 0
