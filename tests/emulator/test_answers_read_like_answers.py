"""Replies that read like answers to the request: tool arguments from the prompt's words (every
parameter), classifier and extraction answers for every id, transcripts as long as the audio, vectors of
each model's documented size whose similarity follows shared words and stems, ``max_tokens`` honoured
exactly, the same reply for the same seed; and the request forms the API documents beyond the published
schemas (raw audio for nova-3, multipart for FLUX.2, ``max_tokens: null``)."""

from __future__ import annotations

import json
import math
import wave
from collections.abc import Iterator
from io import BytesIO
from typing import Any

import pytest
import urllib3
from jsonschema import Draft7Validator
from workers_ai.testing import Emulator

from tests.emulator._calls import call, result

LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"
QWEN = "@cf/qwen/qwen3-30b-a3b-fp8"
WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "include_wind": {"type": "boolean"},
    },
    "required": ["city"],
}


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


@pytest.mark.parametrize("model", [LLAMA, QWEN])
def test_tool_arguments_come_from_the_prompt_and_fill_every_parameter(emu: Emulator, model: str) -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_PARAMS}}
    body = {"messages": [{"role": "user", "content": "What's the weather in Lisbon for 3 days, in fahrenheit?"}]}
    out = result(call(emu, "POST", f"ai/run/{model}", {**body, "tools": [tool]}))
    if "choices" in out:
        args = json.loads(out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    else:
        args = out["tool_calls"][0]["arguments"]
    assert Draft7Validator(WEATHER_PARAMS).is_valid(args)
    assert set(args) == set(WEATHER_PARAMS["properties"])  # optional parameters too
    assert args["city"] == "Lisbon" and args["unit"] == "fahrenheit" and args["days"] == 3


def test_max_tokens_is_honoured_exactly_in_usage(emu: Emulator) -> None:
    for limit in (1, 3, 7):
        body = {"prompt": "Tell me everything about llamas and alpacas in the Andes", "max_tokens": limit}
        out = result(call(emu, "POST", f"ai/run/{LLAMA}", body))
        assert out["usage"]["completion_tokens"] == limit and isinstance(out["usage"]["completion_tokens"], int)
    chat = result(
        call(emu, "POST", f"ai/run/{QWEN}", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    )
    assert chat["usage"]["completion_tokens"] == 2 and chat["choices"][0]["finish_reason"] == "length"


def test_max_tokens_null_means_the_default(emu: Emulator) -> None:
    with_null = result(call(emu, "POST", f"ai/run/{LLAMA}", {"prompt": "hi there", "max_tokens": None}))
    without = result(call(emu, "POST", f"ai/run/{LLAMA}", {"prompt": "hi there"}))
    assert with_null["usage"]["completion_tokens"] == without["usage"]["completion_tokens"] > 0


def test_same_seed_same_reply_other_seed_other_reply(emu: Emulator) -> None:
    def reply(seed: int) -> Any:
        return result(call(emu, "POST", f"ai/run/{LLAMA}", {"prompt": "Name a colour", "seed": seed}))["response"]

    assert reply(1) == reply(1)
    assert len({reply(s) for s in range(1, 9)}) > 1


def test_clef_answers_every_question_in_its_type(emu: Emulator) -> None:
    questions = {
        "overdue": {"type": "noul", "instructions": "Is the invoice overdue?"},
        "kind": {
            "type": "choice",
            "instructions": "Which document is it?",
            "criteria": {"invoice": "a bill", "memo": "a note"},
        },
        "urgency": {
            "type": "score",
            "instructions": "How urgent is the overdue invoice?",
            "criteria": ["low", "mid", "high"],
        },
    }
    body = {"model": "clef", "state": "This invoice is overdue; pay the invoice now.", "questions": questions}
    out = result(call(emu, "POST", "ai/run/@cf/cloudflare/clef", body))
    answers = out["answers"]
    assert set(answers) == set(questions)
    assert answers["overdue"]["type"] == "noul" and 0 <= answers["overdue"]["noul"] <= 1
    assert answers["kind"]["choice"] == "invoice" and set(answers["kind"]["probabilities"]) == {"invoice", "memo"}
    assert math.isclose(sum(answers["kind"]["probabilities"].values()), 1.0, abs_tol=1e-3)
    assert answers["urgency"]["type"] == "score" and 0 <= answers["urgency"]["score"] <= 2
    assert isinstance(out["usage"]["input_tokens"], int)


def test_clairic_extracts_every_field_from_the_state(emu: Emulator) -> None:
    state = (
        "Invoice INV-2291 from Northwind Supply, issued 2026-09-02, totals 1080 USD. Contacts: Dana Ruiz, Priya Shah."
    )
    fields = {
        "supplier": {"type": "text"},
        "total": {"type": "number", "unit": "USD"},
        "issued": {"type": "date"},
        "contacts": {"type": "list", "items": "text"},
        "pay_days": {"type": "estimate", "min": 0, "max": 120},
    }
    out = result(
        call(emu, "POST", "ai/run/@cf/cloudflare/clairic", {"model": "clairic", "state": state, "fields": fields})
    )
    answers = out["answers"]
    assert set(answers) == set(fields) and out["truncated"] is False
    assert answers["total"]["value"] == 1080 and answers["issued"]["value"] == "2026-09-02"
    assert "Northwind Supply" in answers["contacts"]["value"] and "Dana Ruiz" in answers["contacts"]["value"]
    start, end = answers["issued"]["span"]
    assert state[start:end] == "2026-09-02"
    assert all(answers[f]["type"] == fields[f]["type"] for f in fields)


def _wav(seconds: float) -> bytes:
    out = BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(16000)
        w.writeframes(b"\x80" * int(16000 * seconds))
    return out.getvalue()


def test_transcripts_grow_with_the_audio(emu: Emulator) -> None:
    def words(seconds: float) -> int:
        body = _wav(seconds)
        url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/@cf/openai/whisper"
        headers = {"Authorization": f"Bearer {emu.api_token}", "Content-Type": "audio/wav"}
        reply = urllib3.request("POST", url, body=body, headers=headers)
        return int(json.loads(reply.data)["result"]["word_count"])

    short, long = words(2), words(20)
    assert 3 <= short < long and long >= 40


def test_nova_3_takes_raw_audio_with_query_options_and_answers_a_transcript(emu: Emulator) -> None:
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/@cf/deepgram/nova-3?language=en&punctuate=true"
    headers = {"Authorization": f"Bearer {emu.api_token}", "Content-Type": "audio/wav"}
    reply = urllib3.request("POST", url, body=_wav(6), headers=headers)
    assert reply.status == 200, reply.data[:300]
    alternative = json.loads(reply.data)["result"]["results"]["channels"][0]["alternatives"][0]
    assert len(alternative["transcript"].split()) >= 10 and alternative["words"]
    assert emu.requests[-1].params["language"] == "en"


@pytest.mark.parametrize("model", ["@cf/black-forest-labs/flux-2-dev", "@cf/black-forest-labs/flux-2-klein-4b"])
def test_flux_2_takes_a_multipart_body(emu: Emulator, model: str) -> None:
    resp = call(emu, "POST", f"ai/run/{model}", fields={"prompt": "a lighthouse", "width": "320", "height": "256"})
    image = result(resp)["image"]
    import base64
    import struct

    png = base64.b64decode(image)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (320, 256)


@pytest.mark.parametrize(
    ("model", "size"),
    [
        ("@cf/qwen/qwen3-embedding-0.6b", 1024),
        ("@cf/pfnet/plamo-embedding-1b", 2048),
        ("@cf/google/embeddinggemma-300m", 768),
        ("@cf/baai/bge-m3", 1024),
        ("@cf/baai/bge-small-en-v1.5", 384),
        ("@cf/baai/bge-base-en-v1.5", 768),
        ("@cf/baai/bge-large-en-v1.5", 1024),
    ],
)
def test_embeddings_have_each_models_documented_size(emu: Emulator, model: str, size: int) -> None:
    out = result(call(emu, "POST", f"ai/run/{model}", {"text": ["a llama"]}))
    assert out["shape"] == [1, size] and len(out["data"][0]) == size


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_similarity_follows_shared_words_and_stems(emu: Emulator) -> None:
    texts = ["llama", "Llamas graze in the Andes", "The stock market fell sharply", "retrieval of documents"]
    data = result(call(emu, "POST", "ai/run/@cf/baai/bge-base-en-v1.5", {"text": texts}))["data"]
    assert _cos(data[0], data[1]) > 0.3 > _cos(data[0], data[2])
    ranked = result(
        call(
            emu,
            "POST",
            "ai/run/@cf/baai/bge-m3",
            {"query": "llamas", "contexts": [{"text": t} for t in ["stock prices", "a llama farm", "documents"]]},
        )
    )["response"]
    assert ranked[0]["id"] == 1 and ranked[0]["score"] > ranked[1]["score"]


def test_ai_v1_refuses_an_assistant_turn_with_null_content(emu: Emulator) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "again"},
    ]
    resp = call(emu, "POST", "ai/v1/chat/completions", {"model": LLAMA, "messages": messages})
    assert resp.status == 400 and json.loads(resp.data)["errors"][0]["code"] == 5006
    # /ai/run takes the same conversation (clients send it back that way in tool loops)
    assert call(emu, "POST", f"ai/run/{LLAMA}", {"messages": messages}).status == 200


def test_image_descriptions_follow_the_image(emu: Emulator) -> None:
    from workers_ai.testing._media import png

    def describe(side: int) -> str:
        body = {"image": list(png(side, side, "seed")), "prompt": "What is in this picture?"}
        return str(result(call(emu, "POST", "ai/run/@cf/llava-hf/llava-1.5-7b-hf", body))["description"])

    small, large = describe(16), describe(640)
    assert "16x16 image" in small and "640x640 image" in large and len(large) > len(small)
