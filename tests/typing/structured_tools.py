# Structured outputs and tools as a user writes them; checked by mypy --strict and pyright strict
# (tests/typing/test_structured_tools.py) and run against the emulator there.
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import msgspec
from typing_extensions import assert_type

from workers_ai import AsyncWorkersAI, Parsed, ToolCall, ToolRun, WorkersAI, tool_calls
from workers_ai.models.cf.meta.llama_3_3_70b_instruct_fp8_fast import TextGenerationOutput
from workers_ai.models.cf.openai.gpt_oss_20b import ChatCompletionOutput


class Weather(msgspec.Struct):
    city: str
    temperature: float
    unit: Literal["c", "f"] = "c"


@dataclass
class Place:
    name: str
    country: str


class Score(TypedDict):
    label: str
    score: float


def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temperature": 21.5, "unit": unit}


def main(ai: WorkersAI) -> dict[str, Any]:
    llama = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")
    question = [{"role": "user", "content": "weather in Paris"}]
    reply = llama.chat(messages=[{"role": "user", "content": "weather in Paris"}], response_format=Weather)
    assert_type(reply, Parsed[TextGenerationOutput, Weather])
    assert_type(reply.parsed, Weather)
    assert_type(reply.output, TextGenerationOutput)
    assert_type(reply.output.response, str)
    place = llama.generate(prompt="where is Paris", response_format=Place)
    assert_type(place.parsed, Place)
    score = llama.generate(prompt="rate it", response_format=Score)
    assert_type(score.parsed, Score)
    raw = llama.chat(messages=[{"role": "user", "content": "hi"}], response_format={"type": "json_object"})
    assert_type(raw.parsed, Any)
    plain = llama.chat(messages=[{"role": "user", "content": "hi"}])
    assert_type(plain, TextGenerationOutput)
    called = llama.chat(messages=[{"role": "user", "content": "weather in Paris"}], tools=[get_weather, Weather])
    calls = tool_calls(called)
    assert_type(calls, list[ToolCall])
    run = llama.run_tools(messages=[{"role": "user", "content": "weather in Paris"}], tools=[get_weather])
    assert_type(run, ToolRun[TextGenerationOutput])
    assert_type(run.response, str)
    assert_type(run.messages, list[dict[str, Any]])
    gpt = ai.model("@cf/openai/gpt-oss-20b")
    oai_run = gpt.run_tools(messages=[{"role": "user", "content": "weather in Paris"}], tools=[get_weather])
    assert_type(oai_run.output, ChatCompletionOutput)
    assert_type(oai_run.response, str)
    del question
    return {
        "weather": reply.parsed,
        "place": place.parsed,
        "score": score.parsed,
        "raw": raw.parsed,
        "calls": calls,
        "rounds": run.rounds,
        "answer": run.response,
        "oai_rounds": oai_run.rounds,
        "oai_messages": oai_run.messages,
    }


async def amain(ai: AsyncWorkersAI) -> str:
    llama = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")
    reply = await llama.chat(messages=[{"role": "user", "content": "weather in Paris"}], response_format=Weather)
    assert_type(reply.parsed, Weather)
    run = await llama.run_tools(messages=[{"role": "user", "content": "weather in Paris"}], tools=[get_weather])
    assert_type(run, ToolRun[TextGenerationOutput])
    return run.response
