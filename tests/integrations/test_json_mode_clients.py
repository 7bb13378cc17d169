"""JSON mode as real clients use it (issue 28): every key the prompt names is answered, and a JSON Schema
in the prompt is read by its ``properties``, with the types they ask for. langchain's
``with_structured_output(method="json_mode")`` puts the keys in the user's words; llama-index's
``structured_predict`` writes pydantic's schema into the prompt (with template-doubled braces). Both
run unmodified against the emulator's OpenAI-compatible route, sync and async."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from llama_index.core.prompts import PromptTemplate
from llama_index.llms.litellm import LiteLLM
from pydantic import BaseModel
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
ASKED = (
    "What's the weather in Lisbon right now? Reply in JSON with the keys city (string), temperature_c (number) "
    "and conditions (a short description)."
)


class Weather(BaseModel):
    city: str
    temperature_c: float
    conditions: str


class Forecast(BaseModel):
    city: str
    temperature_c: float
    rain_expected: bool
    hours: int


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def _quiet_clients() -> Iterator[None]:
    # The clients' own async HTTP pools are left for the garbage collector: their noise, collected here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)  # litellm's pydantic models warn on first use
        yield
        gc.collect()


def _run(value: Any) -> Any:
    return asyncio.run(value) if asyncio.iscoroutine(value) else value


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_langchain_json_mode_answers_every_named_key(emu: Emulator, kind: str) -> None:
    chat = ChatOpenAI(model=LLAMA, base_url=emu.openai_base_url, api_key=emu.api_token, max_retries=0)  # type: ignore[arg-type]
    structured = chat.with_structured_output(Weather, method="json_mode")
    out = _run(structured.invoke(ASKED) if kind == "sync" else structured.ainvoke(ASKED))
    assert isinstance(out, Weather) and out.city == "Lisbon"
    assert isinstance(out.temperature_c, float) and out.conditions
    assert b'"response_format":{"type":"json_object"}' in emu.requests[-1].body


def _llama_index(emu: Emulator, *, json_mode: bool) -> LiteLLM:
    """llama-index's LLM on the OpenAI-compatible route (through litellm: llama-index's own OpenAI classes
    need openai<3, which this venv's other clients cannot share)."""
    extra: dict[str, Any] = {"api_base": emu.openai_base_url, "api_key": emu.api_token}
    if json_mode:
        extra["response_format"] = {"type": "json_object"}
    return LiteLLM(model=f"openai/{LLAMA}", temperature=0.1, max_retries=0, additional_kwargs=extra)


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("json_mode", [True, False], ids=["json-mode", "text"])
def test_llama_index_structured_predict_reads_the_schema_by_its_properties(
    emu: Emulator, kind: str, json_mode: bool
) -> None:
    llm = _llama_index(emu, json_mode=json_mode)
    prompt = PromptTemplate("What is the weather forecast for {city}?")
    call = llm.structured_predict if kind == "sync" else llm.astructured_predict
    if not json_mode:  # no JSON mode asked: the emulator answers words, as a model may; llama-index cannot parse
        with pytest.raises(ValueError, match="Could not extract json"):
            _run(call(Forecast, prompt, city="Lisbon"))
        return
    out = _run(call(Forecast, prompt, city="Lisbon"))
    assert isinstance(out, Forecast) and out.city == "Lisbon"
    assert isinstance(out.temperature_c, float) and isinstance(out.rain_expected, bool) and isinstance(out.hours, int)
    body = emu.requests[-1].body
    assert b"properties" in body and b'"response_format":{"type":"json_object"}' in body  # schema in the prompt
