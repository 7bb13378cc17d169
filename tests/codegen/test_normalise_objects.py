"""A published schema that declares ``properties`` but no ``type`` is read as an object by our rules (JSON
Schema alone would let a string, a number or a list through it: a batch of ``["x"]``, say); the rule is
idempotent, so the shipped files, which carry it, re-adopt unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

from codegen.normalise import normalise_schema

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"

PUBLISHED: dict[str, Any] = {
    "input": {
        "type": "object",
        "oneOf": [
            {"properties": {"text": {"type": "string"}}, "required": ["text"]},
            {
                "properties": {
                    "requests": {
                        "type": "array",
                        "items": {"properties": {"text": {"type": "string"}}, "required": ["text"]},
                    }
                },
                "required": ["requests"],
            },
        ],
    },
    "output": {"properties": {"data": {"type": "array"}}},
}


def test_properties_without_a_type_are_an_object() -> None:
    notes: list[str] = []
    out = normalise_schema("@cf/x/y", "Text Embeddings", copy.deepcopy(PUBLISHED), notes)
    before = jsonschema.Draft7Validator(PUBLISHED["input"])
    after = jsonschema.Draft7Validator(out["input"])
    assert before.is_valid({"requests": ["x", 7]}) and not after.is_valid({"requests": ["x", 7]})
    assert after.is_valid({"requests": [{"text": "x"}]}) and after.is_valid({"text": "x"})
    assert _untyped(PUBLISHED["output"]) == 1 and _untyped(out) == 0
    assert [n.split(":")[0] for n in notes if "no `type` are objects" in n] == ["/schema/input", "/schema/output"]
    again: list[str] = []
    assert normalise_schema("@cf/x/y", "Text Embeddings", copy.deepcopy(out), again) == out
    assert not [n for n in again if "no `type` are objects" in n]


def _untyped(node: Any) -> int:
    """How many schemas in ``node`` declare properties but no type."""
    if isinstance(node, list):
        return sum(_untyped(v) for v in node)
    if not isinstance(node, dict):
        return 0
    here = int(isinstance(node.get("properties"), dict) and "type" not in node)
    return here + sum(_untyped(v) for k, v in node.items() if k not in ("enum", "const", "default"))


def test_no_shipped_schema_has_properties_without_a_type() -> None:
    for path in SCHEMAS.rglob("*.json"):
        assert _untyped(json.loads(path.read_text(encoding="utf-8"))["schema"]) == 0, path
