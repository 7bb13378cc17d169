"""Bad input, typed or as a mapping, is refused before anything is sent, naming the field path."""

from __future__ import annotations

import pytest
from workers_ai import WorkersAI, errors
from workers_ai.models.cf.baai import bge_m3

from tests._server import ScriptedServer
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import client


@pytest.mark.parametrize(
    ("call", "path", "fragment"),
    [
        (lambda h: h.embed(text=""), "$.text", "length >= 1"),
        (lambda h: h.embed(text=[f"t{i}" for i in range(101)]), "$.text", "length <= 100"),
        (lambda h: h.embed(text=["ok", ""]), "$.text[1]", "length >= 1"),
        (lambda h: h.embed(text=5), "$.text", "got `int`"),
        (lambda h: h.rank(query="q", contexts=[bge_m3.Context(text="")]), "$.contexts[0].text", "length >= 1"),
        (lambda h: h.embed_contexts(contexts=[bge_m3.Context(text="")]), "$.contexts[0].text", "length >= 1"),
        (lambda h: h.rank(query="", contexts=[bge_m3.Context(text="c")]), "$.query", "length >= 1"),
    ],
)
def test_bad_typed_input_fails_before_sending(server: ScriptedServer, call: object, path: str, fragment: str) -> None:
    handle = client(server).model("@cf/baai/bge-m3")
    with pytest.raises(errors.InputValidationError) as info:
        call(handle)  # type: ignore[operator]
    err = info.value
    assert err.model_id == "@cf/baai/bge-m3"
    assert err.path == path
    assert fragment in str(err)
    assert server.requests == []


@pytest.mark.parametrize(
    ("payload", "path", "fragment"),
    [
        ({}, "$.", "missing required field"),
        ({"truncate_inputs": True}, "$.", "missing required field"),
        ({"text": ""}, "$.text", "length >= 1"),
        ({"text": ["a"] * 101}, "$.text", "length <= 100"),
        ({"text": 3.5}, "$.text", "got `float`"),
        ({"contexts": "not a list"}, "$.contexts", "Expected `array`"),
    ],
)
def test_bad_mapping_input_fails_before_sending(
    server: ScriptedServer, payload: dict[str, object], path: str, fragment: str
) -> None:
    with pytest.raises(errors.InputValidationError) as info:
        client(server).run("@cf/baai/bge-m3", payload)
    assert info.value.path.startswith(path)
    assert fragment in str(info.value)
    assert "@cf/baai/bge-m3" in str(info.value)
    assert server.requests == []


def test_missing_required_keyword_is_a_type_error(server: ScriptedServer) -> None:
    handle = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url).model("@cf/baai/bge-m3")
    with pytest.raises(TypeError, match="text"):
        handle.embed()  # type: ignore[call-arg]


def test_enum_and_range_constraints(server: ScriptedServer) -> None:
    ai = client(server)
    with pytest.raises(errors.InputValidationError, match="temperature"):
        ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "hi", "temperature": 9})
    with pytest.raises(errors.InputValidationError) as info:
        ai.model("@cf/meta/llama-3-8b-instruct").generate(prompt="hi", temperature=9.0)
    assert info.value.path == "$.temperature" and "<= 5" in str(info.value)
    with pytest.raises(errors.InputValidationError) as info2:
        ai.run("@cf/baai/bge-base-en-v1.5", {"text": "a", "pooling": "max"})
    assert info2.value.path == "$.pooling"
    assert server.requests == []
