"""Requests are checked against the model's effective input schema itself, not only against the structs
generated from it: what a struct cannot say (one alternative of several requiring a key, ``minProperties``)
is refused before sending, naming the model and the path (by both clients), and what the schema allows that
a struct's type would not (a whole-number float for an integer) is sent as given."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonschema
import pytest
from workers_ai import errors

from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import client
from tests.runtime._drivers import KINDS, Driver

LLAMA = "@cf/meta/llama-3.1-8b-instruct"
KIMI = "@cf/moonshotai/kimi-k2.5"
TEXT = {"response": "hi", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
QUESTION = {"type": "score", "instructions": "How clear is it?", "criteria": ["bad", "good"]}


@pytest.mark.parametrize(
    ("model", "payload", "path", "fragment"),
    [
        # minProperties: a clef needs at least one question, clairic one field.
        ("@cf/cloudflare/clef", {"model": "clef", "state": "s", "questions": {}}, "$.questions", "length >= 1"),
        ("@cf/cloudflare/clef-flash", {"model": "clef-flash", "state": "s", "questions": {}}, "$.questions", ">= 1"),
        ("@cf/cloudflare/clef-omni", {"model": "clef-omni", "state": "s", "questions": {}}, "$.questions", ">= 1"),
        ("@cf/cloudflare/clairic", {"model": "clairic", "state": "s", "fields": {}}, "$.fields", ">= 1"),
        # One alternative of the question's three requires `criteria`: the path names the question.
        (
            "@cf/cloudflare/clef",
            {"model": "clef", "state": "s", "questions": {"q1": {"type": "score", "instructions": "x"}}},
            "$.questions.q1",
            "`criteria`",
        ),
        (
            "@cf/cloudflare/clef",
            {"model": "clef", "state": "s", "questions": {"q1": {**QUESTION, "criteria": ["only one"]}}},
            "$.questions.q1.criteria",
            "length >= 2",
        ),
        # A classic tool needs `name` and `parameters` (the flat form) or `type` and `function`.
        (
            LLAMA,
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"description": "no name"}]},
            "$.tools[0]",
            "missing required field",
        ),
        (
            LLAMA,
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "description": "no parameters"}]},
            "$.tools[0]",
            "`parameters`",
        ),
        # Per-role messages: a user message has content (only an assistant's may be left out).
        (KIMI, {"messages": [{"role": "user"}]}, "$.messages[0]", "`content`"),
        (KIMI, {"messages": [{"role": "nobody", "content": "x"}]}, "$.messages[0].role", "Invalid enum value"),
        # String fields that carry base64 (overrides say so with contentEncoding).
        ("@cf/openai/whisper-large-v3-turbo", {"audio": "talk.mp3"}, "$.audio", "base64"),
        ("@cf/pipecat-ai/smart-turn-v2", {"audio": "talk.wav"}, "$.audio", "base64"),
        (
            "@cf/stabilityai/stable-diffusion-xl-base-1.0",
            {"prompt": "x", "image_b64": "a.png"},
            "$.image_b64",
            "base64",
        ),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_what_the_schema_refuses_is_refused_before_sending(
    server: ScriptedServer, kind: str, model: str, payload: dict[str, Any], path: str, fragment: str
) -> None:
    with pytest.raises(errors.InputValidationError) as caught:
        Driver(kind, ACCOUNT, TOKEN, server.base_url).call(lambda ai: ai.run(model, payload))
    assert caught.value.model_id == model and str(caught.value).startswith(f"{model}: invalid input at {path}:")
    assert caught.value.path == path and fragment in caught.value.detail
    assert server.requests == []


def test_the_emulator_example_of_a_base64_field_is_base64_text() -> None:
    from workers_ai.testing import Emulator

    with Emulator() as emu:
        assert base64.b64decode(emu.example_input("@cf/openai/whisper-large-v3-turbo")["audio"], validate=True)


def test_a_typed_request_is_checked_against_its_own_variant(server: ScriptedServer) -> None:
    # {"query": "", "contexts": [...]} fits bge-m3's contexts-only variant as JSON, but rank() sends the
    # query variant, whose query is not empty.
    with pytest.raises(errors.InputValidationError) as caught:
        client(server).model("@cf/baai/bge-m3").rank(query="", contexts=[{"text": "c"}])
    assert caught.value.path == "$.query"
    assert server.requests == []


def test_whole_number_floats_are_integers_and_sent_as_given(server: ScriptedServer) -> None:
    server.script(ok(TEXT))
    ai = client(server)
    ai.run(LLAMA, {"prompt": "x", "max_tokens": 3.0, "top_k": 2.0})
    ai.model(LLAMA).generate(prompt="x", max_tokens=3.0)  # type: ignore[arg-type]  # JSON Schema: an integer
    assert [r.body for r in server.requests] == [
        b'{"prompt":"x","max_tokens":3.0,"top_k":2.0}',
        b'{"prompt":"x","max_tokens":3.0}',
    ]
    with pytest.raises(errors.InputValidationError, match=r"at \$\.max_tokens: Expected `int`, got `float`"):
        ai.run(LLAMA, {"prompt": "x", "max_tokens": 3.5})
    assert len(server.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_value_equal_to_the_schema_default_is_sent(server: ScriptedServer, kind: str) -> None:
    # An input struct defaulted a field to the schema's value and omitted it when equal: raw=False and
    # max_tokens=256 were dropped from a typed request (they are sent as given, like any other value).
    from workers_ai.models.cf.baai import bge_m3

    server.script(ok(TEXT), ok(TEXT), ok({"shape": [1, 2], "data": [[0.1, 0.2]], "pooling": "cls"}))
    drive = Driver(kind, ACCOUNT, TOKEN, server.base_url)
    drive.call(lambda ai: ai.model(LLAMA).generate(prompt="x", raw=False, max_tokens=256))
    drive.call(lambda ai: ai.model(LLAMA).generate(prompt="x"))
    drive.call(lambda ai: ai.run("@cf/baai/bge-m3", bge_m3.EmbeddingInput(text="x", truncate_inputs=False)))
    assert [r.json() for r in server.requests] == [
        {"prompt": "x", "raw": False, "max_tokens": 256},
        {"prompt": "x"},  # left out, nothing is sent: the server applies its default
        {"text": "x", "truncate_inputs": False},
    ]


def _json_mode_models() -> list[str]:
    from workers_ai import _registry
    from workers_ai.testing._catalog import Catalog

    catalog = Catalog.from_package()
    found = []
    for model_id in sorted(_registry.MODELS):
        spec = catalog.get(model_id)
        text = json.dumps(spec.input_schema if spec is not None else {})
        if '"stream"' in text and '"response_format"' in text:
            found.append(model_id)
    return found


@pytest.mark.parametrize("model", _json_mode_models())
def test_json_mode_does_not_stream_says_the_schema(server: ScriptedServer, model: str) -> None:
    # The API refuses stream: true with response_format (docs: JSON mode); the schema states it (an
    # override), so the emulator, the SDK and a JSON Schema validator all refuse it.
    from workers_ai.testing._catalog import Catalog
    from workers_ai.testing._validate import relax

    spec = Catalog.from_package().get(model)
    assert spec is not None
    request = {**spec.example_input(), "stream": True, "response_format": {"type": "json_object"}}
    assert not jsonschema.Draft7Validator(relax(spec.input_schema)).is_valid(request)
    assert jsonschema.Draft7Validator(relax(spec.input_schema)).is_valid({**request, "stream": False})
    with pytest.raises(errors.InputValidationError, match="JSON mode"):
        client(server).run(model, request)
    assert server.requests == []
