"""A real client, langchain-cloudflare 0.4.3 (a dev-only dependency), against the emulator: its
`bind_tools` and `with_structured_output` requests (no per-parameter descriptions, `"stop": null`) are
taken, both tool-call reply shapes come back as its tool calls, and our own client-side validation
accepts exactly the bodies it sent (it must never refuse what the platform takes)."""

from __future__ import annotations

import gc
import json
import warnings
from collections.abc import Iterator

import httpx
import pytest
from langchain_cloudflare import ChatCloudflareWorkersAI
from pydantic import BaseModel
from workers_ai.testing import Emulator


# langchain-cloudflare 0.4.3 opens an httpx client of its own per REST call and never closes it (even
# with http_client= given); the unclosed sockets it leaves are its own, not ours.
@pytest.fixture(autouse=True)
def _collect_langchain_sockets() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield
        gc.collect()


class Weather(BaseModel):
    city: str
    temperature: float


def get_weather(city: str) -> str:
    """Weather for a city."""
    return "sunny"


@pytest.mark.parametrize(
    "model", ["@cf/meta/llama-3.3-70b-instruct-fp8-fast", "@cf/openai/gpt-oss-20b", "@cf/qwen/qwen3-30b-a3b-fp8"]
)
def test_bind_tools_and_structured_output_against_the_emulator(model: str) -> None:
    with Emulator() as emu, httpx.Client() as http:
        chat = ChatCloudflareWorkersAI(
            model=model, account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, http_client=http
        )
        message = chat.bind_tools([get_weather]).invoke("weather in Paris?")
        assert [c["name"] for c in message.tool_calls] == ["get_weather"]
        assert isinstance(message.tool_calls[0]["args"]["city"], str)
        weather = chat.with_structured_output(Weather).invoke("weather in Paris?")
        assert isinstance(weather, Weather)
        sent = [json.loads(r.body) for r in emu.requests if r.method == "POST"]
        assert [r.status for r in emu.requests] == [200, 200]
        tool_body = sent[0]
        assert tool_body["stop"] is None
        assert "description" not in tool_body["tools"][0]["function"]["parameters"]["properties"]["city"]
        # Our client validates the same bodies locally and sends them: nothing refused.
        with emu.client() as ai:
            for body in sent:
                ai.model(model).run(body)
        assert [r.status for r in emu.requests][-len(sent) :] == [200] * len(sent)


def test_the_openai_shaped_tool_calls_reach_langchain_from_a_chat_completion_model() -> None:
    with Emulator() as emu, httpx.Client() as http:
        chat = ChatCloudflareWorkersAI(
            model="@cf/openai/gpt-oss-20b",
            account_id=emu.account_id,
            api_token=emu.api_token,
            base_url=emu.base_url,
            http_client=http,
        )
        message = chat.bind_tools([get_weather]).invoke("weather in Paris?")
        assert message.tool_calls[0]["id"].startswith("call_")
