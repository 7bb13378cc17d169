"""JSON mode against generated schemas: whatever schema a request gives (nested objects, arrays, enums,
bounds, required lists), the reply is an object the real ``jsonschema`` validator accepts against the
schema as sent; an invalid schema is refused with 400/5006. Schemas come from a hypothesis strategy;
most examples call the reply synthesis directly, a few go over HTTP through each request form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from workers_ai.testing import Emulator
from workers_ai.testing._textgen import generate

from tests.emulator._calls import call, result

LLAMA = "@cf/meta/llama-3.1-8b-instruct-fast"
NAMES = st.from_regex(r"[a-z][a-z_]{0,9}", fullmatch=True)


def _scalar() -> st.SearchStrategy[dict[str, Any]]:
    strings = st.builds(
        lambda lo, extra: {"type": "string", "minLength": lo, "maxLength": lo + extra},
        st.integers(0, 5),
        st.integers(0, 20),
    )
    integers = st.builds(
        lambda lo, span: {"type": "integer", "minimum": lo, "maximum": lo + span},
        st.integers(-50, 50),
        st.integers(0, 100),
    )
    numbers = st.builds(lambda lo: {"type": "number", "exclusiveMinimum": lo, "maximum": lo + 1.5}, st.floats(-10, 10))
    enums = st.lists(st.text("abcxyz", min_size=1, max_size=6), min_size=1, max_size=4, unique=True).map(
        lambda values: {"type": "string", "enum": values}
    )
    plain = st.sampled_from([{"type": "boolean"}, {"type": "string"}, {"type": "null"}, {"type": ["string", "null"]}])
    return st.one_of(strings, integers, numbers, enums, plain)


def _schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    objects = st.dictionaries(NAMES, children, min_size=1, max_size=5).flatmap(
        lambda props: st.builds(
            lambda required, closed: {
                "type": "object",
                "properties": props,
                "required": required,
                **({"additionalProperties": False} if closed else {}),
            },
            st.lists(st.sampled_from(sorted(props)), unique=True),
            st.booleans(),
        )
    )
    arrays = st.builds(
        lambda items, lo: {"type": "array", "items": items, "minItems": lo, "maxItems": lo + 3},
        children,
        st.integers(0, 3),
    )
    return st.one_of(objects, arrays)


SCHEMAS = st.recursive(_scalar(), _schema, max_leaves=12).map(
    lambda s: s if s.get("type") == "object" else {"type": "object", "properties": {"value": s}, "required": ["value"]}
)


@settings(
    max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(schema=SCHEMAS, seed=st.text(min_size=1, max_size=8))
def test_json_schema_replies_fit_any_generated_schema(schema: dict[str, Any], seed: str) -> None:
    Draft7Validator.check_schema(schema)
    for request in (
        {"response_format": {"type": "json_schema", "json_schema": schema}},
        {"guided_json": schema},
        {"response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}},
    ):
        gen = generate({"messages": [{"role": "user", "content": "Weather in Lisbon, 21 degrees"}], **request}, seed)
        errors = [e.message for e in Draft7Validator(schema).iter_errors(gen.structured)]
        assert not errors, (schema, gen.structured, errors)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(schema=SCHEMAS)
def test_json_object_follows_a_schema_stated_in_the_prompt(schema: dict[str, Any]) -> None:
    prompt = "You must respond with valid JSON that matches this schema.\n" + json.dumps(schema, indent=2)
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "Tell me about Lisbon"}]
    gen = generate({"messages": messages, "response_format": {"type": "json_object"}}, "seed")
    assert Draft7Validator(schema).is_valid(gen.structured), (schema, gen.structured)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


NESTED = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "forecast": {
            "type": "array",
            "minItems": 2,
            "items": {
                "type": "object",
                "properties": {"day": {"type": "string", "enum": ["mon", "tue"]}, "high": {"type": "integer"}},
                "required": ["day", "high"],
            },
        },
        "alerts": {"type": "object", "properties": {"level": {"enum": [1, 2, 3]}}, "required": ["level"]},
    },
    "required": ["city", "forecast", "alerts"],
}


@pytest.mark.parametrize("form", ["json_schema", "openai_wrapper", "guided_json"])
def test_every_request_form_over_http_gives_a_valid_object_with_the_prompts_words(emu: Emulator, form: str) -> None:
    fmt: dict[str, Any] = {
        "json_schema": {"response_format": {"type": "json_schema", "json_schema": NESTED}},
        "openai_wrapper": {"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": NESTED}}},
        "guided_json": {"guided_json": NESTED},
    }[form]
    body = {"messages": [{"role": "user", "content": "What is the forecast for Lisbon?"}], **fmt}
    out = result(call(emu, "POST", f"ai/run/{LLAMA}", body))["response"]
    assert Draft7Validator(NESTED).is_valid(out) and out["city"] == "Lisbon"
    assert len(out["forecast"]) >= 2 and set(out["alerts"]) == {"level"}


def test_json_object_takes_field_names_from_the_prompt(emu: Emulator) -> None:
    body = {
        "messages": [
            {"role": "system", "content": "Answer in JSON with the fields name, country and population."},
            {"role": "user", "content": "Tell me about Lisbon"},
        ],
        "response_format": {"type": "json_object"},
    }
    out = result(call(emu, "POST", f"ai/run/{LLAMA}", body))["response"]
    assert set(out) == {"name", "country", "population"}


def test_json_object_follows_an_example_object_in_the_prompt(emu: Emulator) -> None:
    prompt = 'Reply like {"title": "...", "year": 1999, "tags": ["x"]} about the film Casablanca.'
    body = {"prompt": prompt, "response_format": {"type": "json_object"}}
    out = result(call(emu, "POST", f"ai/run/{LLAMA}", body))["response"]
    assert set(out) == {"title", "year", "tags"} and isinstance(out["year"], int) and isinstance(out["tags"], list)


@pytest.mark.parametrize(
    "request_part",
    [
        {"response_format": {"type": "json_schema", "json_schema": {"type": "objekt"}}},
        {"guided_json": {"type": "object", "required": "city"}},
    ],
)
def test_an_invalid_schema_is_refused_with_the_apis_error(emu: Emulator, request_part: dict[str, Any]) -> None:
    resp = call(emu, "POST", f"ai/run/{LLAMA}", {"prompt": "hi", **request_part})
    assert resp.status == 400
    error = json.loads(resp.data)["errors"][0]
    assert error["code"] == 5006 and "not a valid JSON Schema" in error["message"]


def test_a_schema_no_object_fits_is_json_mode_unmet(emu: Emulator) -> None:
    impossible = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}}
    resp = call(emu, "POST", f"ai/run/{LLAMA}", {"prompt": "hi", "guided_json": {**impossible, "required": ["n"]}})
    assert resp.status == 400 and "JSON Mode couldn't be met" in resp.data.decode()
