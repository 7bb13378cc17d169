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


_LONG_PROMPTS = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import urllib3
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"

ask = "Weather in Lisbon? "
prompts = {
    "unclosed": ask + '{"' * 100_000,  # every brace opens a parse that fails: once counted its lines
    "empty objects": ask + "{}" * 100_000,  # 100,000 objects cut out of the prompt one copy at a time
    "deep": ask + '{"a": [' * 30_000,  # deeper than the JSON decoder goes
    "nested, invalid": ask + ('{"a":' * 400 + "x" + "}" * 400 + " ") * 80,  # each level read again
    "template": ask + '{{"a": 1}} ' * 20_000,
}
schema = {"type": "object", "properties": {k: {"type": "string"} for k in ("city", "a", "b", "c", "d", "e")}}
with Emulator(models=[LLAMA]) as emu:
    pool = urllib3.PoolManager(retries=False, timeout=120)
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{LLAMA}"
    auth = {"Authorization": f"Bearer {emu.api_token}", "Content-Type": "application/json"}
    for name, prompt in prompts.items():
        assert len(prompt) > 150_000, name
        body = {"messages": [{"role": "user", "content": prompt}],
                "response_format": {"type": "json_schema", "json_schema": schema}}
        reply = pool.request("POST", url, body=json.dumps(body).encode(), headers=auth)
        assert reply.status == 200, (name, reply.status, reply.data[:300])
        print(json.dumps([name, json.loads(reply.data)["result"]["response"]["city"]]), flush=True)
"""


def test_a_long_prompt_full_of_braces_is_read_in_linear_time() -> None:
    """200 KB prompts of braces through JSON mode (which reads the prompt for every property): each
    answered in a fraction of a second; before, the scan was quadratic (or hit the recursion limit)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")} | {"MALLOC_ARENA_MAX": "2"}
    done = subprocess.run(
        [sys.executable, "-c", _LONG_PROMPTS], capture_output=True, text=True, timeout=20, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [[name, "Lisbon"] for name in ("unclosed", "empty objects", "deep", "nested, invalid", "template")]
