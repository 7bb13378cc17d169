"""How the emulator reads the schema a JSON-mode prompt asks for (issue 28): every key the prompt names,
with the type its words ask for, and a written schema by its ``properties`` (template-doubled braces too)."""

from __future__ import annotations

import json

import pytest
from workers_ai.testing._prompt import argument_hint, stated_schema


def _types(text: str) -> dict[str, str]:
    schema = stated_schema(text)
    assert schema is not None
    assert schema["required"] == list(schema["properties"])
    return {k: v["type"] for k, v in schema["properties"].items()}


@pytest.mark.parametrize(
    "text",
    [
        "Weather in Lisbon as JSON with the keys city (string), temperature_c (number) and conditions (string).",
        "Weather in Lisbon. Respond in JSON with keys city, temperature_c and conditions for today's weather",
        "Return JSON. Keys: `city`, `temperature_c`, `conditions`.",
        "Answer in JSON with these fields:\n- city: the city\n- temperature_c: degrees Celsius\n- conditions: text",
    ],
)
def test_every_named_key_is_asked_for(text: str) -> None:
    assert _types(text) == {"city": "string", "temperature_c": "number", "conditions": "string"}


def test_the_words_give_the_types() -> None:
    text = "Give JSON with fields name (string), age (integer), tags (a list of words) and active (boolean)."
    assert _types(text) == {"name": "string", "age": "integer", "tags": "array", "active": "boolean"}


def test_a_schema_is_read_by_its_properties_also_with_doubled_braces() -> None:
    schema = {
        "properties": {"city": {"title": "City", "type": "string"}, "hours": {"title": "Hours", "type": "integer"}},
        "required": ["city", "hours"],
        "title": "Forecast",
        "type": "object",
    }
    written = json.dumps(schema)
    for text in (written, written.replace("{", "{{").replace("}", "}}")):
        found = stated_schema(f"Forecast for Lisbon?\n\nHere's a JSON schema to follow:\n{text}\n\nOutput JSON.")
        assert found == schema


def test_a_written_schema_is_not_what_the_prompt_asks_about() -> None:
    prompt = 'Weather in Lisbon?\n\n{{"properties": {{"city": {{"type": "string"}}}}}}\n\nOutput a valid JSON object.'
    assert argument_hint("city", {"type": "string"}, prompt) == "Lisbon"
