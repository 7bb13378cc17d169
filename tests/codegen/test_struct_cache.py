"""The struct block cache is honest: reused only for the same key (generator, options, schema document,
aliases) and an unedited block; an edit inside it is regenerated, and ``--check`` never trusts it."""

from __future__ import annotations

import json
from pathlib import Path

from codegen.cli import generate

MODEL = {
    "name": "@cf/x/one",
    "task": {"name": "Translation"},
    "schema": {
        "input": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "output": {"type": "object", "properties": {"translated_text": {"type": "string"}}},
    },
}


def test_an_edited_struct_block_is_regenerated_and_check_sees_it(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    (schemas / "@cf" / "x").mkdir(parents=True)
    (schemas / "@cf" / "x" / "one.json").write_text(json.dumps(MODEL))
    assert generate(schemas, out, "pkg_cache").code == 0
    module = out / "pkg_cache" / "models" / "cf" / "x" / "one.py"
    pristine = module.read_text(encoding="utf-8")
    assert pristine.count("# structs: ") == 1 and "class TranslationOutput(" in pristine
    edited = pristine.replace("    translated_text: str\n", "    translated_text: int\n")
    assert edited != pristine
    module.write_text(edited, encoding="utf-8")
    assert generate(schemas, out, "pkg_cache", check=True).code == 1
    result = generate(schemas, out, "pkg_cache")
    assert result.code == 0 and result.changed == ["models/cf/x/one.py"]
    assert module.read_text(encoding="utf-8") == pristine
    # A changed schema changes the key: the block is generated anew, not reused.
    MODEL_2 = json.loads(json.dumps(MODEL))
    MODEL_2["schema"]["output"]["properties"]["score"] = {"type": "number"}
    (schemas / "@cf" / "x" / "one.json").write_text(json.dumps(MODEL_2))
    assert generate(schemas, out, "pkg_cache").changed == ["models/cf/x/one.py"]
    assert "    score: float | None = None\n" in module.read_text(encoding="utf-8")
