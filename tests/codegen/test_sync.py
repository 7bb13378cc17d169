"""``workers-ai sync`` against the emulator: a no-op when nothing changed, and otherwise a precise
report of what changed (variants, properties, types, constraints, enums, ``required``) per model,
with only the changed files written, our prose kept, and schema-less models reported and skipped.
"""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workers_ai._cli.main import main as cli
from workers_ai.testing import Emulator

from codegen.normalise import strip_prose
from codegen.schema_file import dump
from tests._codegen_util import importable, write_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
LISTED = ["@cf/baai/bge-m3", "@cf/meta/m2m100-1.2b", "@cf/deepgram/aura-1", "@cf/meta/llama-3-8b-instruct"]
NO_SCHEMA = "@cf/test/no-schema"
NEW = "@cf/test/sunset"


def _shipped(model_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SCHEMAS / f"{model_id}.json").read_text(encoding="utf-8"))
    return doc


def _copy(models: list[str], dest: Path) -> None:
    for model_id in models:
        target = dest / f"{model_id}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SCHEMAS / f"{model_id}.json", target)


def _mtimes(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _sync(emu: Emulator, schemas: Path, out: Path, *extra: str) -> int:
    argv = ["sync", "--schemas", str(schemas), "--out", str(out), "--package", "synced_pkg"]
    return cli([*argv, "--base-url", emu.base_url, "--per-page", "7", *extra])


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    with Emulator(models=LISTED) as emu:
        monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", emu.account_id)
        monkeypatch.setenv("CLOUDFLARE_API_TOKEN", emu.api_token)
        yield emu


def test_sync_of_every_shipped_model_right_after_generate_is_a_no_op(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    shutil.copytree(SCHEMAS, schemas)
    before = _mtimes(schemas)
    with Emulator() as emu:  # serves exactly the shipped models
        monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", emu.account_id)
        monkeypatch.setenv("CLOUDFLARE_API_TOKEN", emu.api_token)
        code = _sync(emu, schemas, out, "--exit-code")
        served = len(emu.models())
    text = capsys.readouterr().out
    assert code == 0, text
    shipped = len(list(SCHEMAS.rglob("*.json")))
    assert served == shipped
    assert f"0 added, 0 changed, 0 removed, {shipped} unchanged" in text, text
    assert _mtimes(schemas) == before  # nothing rewritten
    assert not out.exists()  # nothing to regenerate


def test_changed_property_enum_and_constraint_are_reported_precisely(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    _copy(LISTED, schemas)
    # Our copy is "older" than the account: the account changed these facts since.
    llama = _shipped("@cf/meta/llama-3-8b-instruct")
    prompt = llama["schema"]["input"]["oneOf"][0]["properties"]
    prompt["temperature"]["maximum"] = 2
    del prompt["seed"]
    write_schema(schemas, "@cf/meta/llama-3-8b-instruct.json", llama)
    aura = _shipped("@cf/deepgram/aura-1")
    aura["schema"]["input"]["properties"]["encoding"]["enum"].append("ogg")
    aura["schema"]["input"]["properties"]["sample_rate"]["type"] = "string"
    write_schema(schemas, "@cf/deepgram/aura-1.json", aura)
    m2m = _shipped("@cf/meta/m2m100-1.2b")
    m2m["schema"]["input"]["required"] = ["text"]
    write_schema(schemas, "@cf/meta/m2m100-1.2b.json", m2m)
    untouched = schemas / "@cf" / "baai" / "bge-m3.json"
    before = untouched.stat().st_mtime_ns

    code = _sync(emulator, schemas, out, "--exit-code", "--no-generate")
    text = capsys.readouterr().out
    assert code == 1, text
    lines = text.splitlines()
    block = lines[lines.index("  changed: @cf/meta/llama-3-8b-instruct") :]
    assert "    changed: /schema/input/oneOf/0/properties/temperature/maximum 2 -> 5" in block
    assert "    property added: /schema/input/oneOf/0/properties/seed (integer)" in block
    assert "  changed: @cf/deepgram/aura-1" in lines
    assert '    enum changed: /schema/input/properties/encoding/enum added [], removed ["ogg"]' in lines
    assert '    type changed: /schema/input/properties/sample_rate/type "string" -> "number"' in lines
    assert "  changed: @cf/meta/m2m100-1.2b" in lines
    assert '    now required: /schema/input/required ["target_lang"]' in lines
    assert "sync: 0 added, 3 changed, 0 removed, 1 unchanged" in text
    assert untouched.stat().st_mtime_ns == before  # unchanged files are not rewritten

    # The rewritten files hold the account's shapes and keep our prose.
    synced = json.loads((schemas / "@cf/meta/llama-3-8b-instruct.json").read_text(encoding="utf-8"))
    assert synced["schema"] == _shipped("@cf/meta/llama-3-8b-instruct")["schema"]
    assert synced["description"] == llama["description"]
    assert (schemas / "@cf/meta/llama-3-8b-instruct.json").read_bytes() == dump(synced)

    # A second run has nothing left to report.
    assert _sync(emulator, schemas, out, "--exit-code", "--no-generate") == 0
    assert "0 added, 0 changed, 0 removed, 4 unchanged" in capsys.readouterr().out


def test_variants_added_and_removed_are_reported_and_our_titles_kept(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    _copy(LISTED, schemas)
    bge = _shipped("@cf/baai/bge-m3")
    variants = bge["schema"]["input"]["oneOf"]
    assert variants[2]["title"] == "Embed Contexts"
    del variants[2]  # the account has a variant our copy lacks
    bge["schema"]["output"]["oneOf"].append(
        {"type": "object", "title": "Sparse", "properties": {"sparse": {"type": "array"}}}
    )  # ... and lacks one our copy has
    write_schema(schemas, "@cf/baai/bge-m3.json", bge)

    assert _sync(emulator, schemas, out, "--exit-code", "--no-generate") == 1
    lines = capsys.readouterr().out.splitlines()
    assert "  changed: @cf/baai/bge-m3" in lines
    assert "    variant added: /schema/input/oneOf/2 {contexts, truncate_inputs}" in lines
    assert '    variant removed: /schema/output/oneOf/4 (old numbering) "Sparse"' in lines
    synced = json.loads((schemas / "@cf/baai/bge-m3.json").read_text(encoding="utf-8"))
    titles = [v.get("title") for v in synced["schema"]["input"]["oneOf"]]
    assert titles == ["Query and Contexts", "Embedding", None, "Batch"]  # ours kept; the re-added one by the rule


def test_added_removed_and_schemaless_models(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    _copy(LISTED[1:], schemas)  # bge-m3 is missing locally: added
    write_schema(
        schemas,
        "@cf/retired/old-model.json",
        {"name": "@cf/retired/old-model", "schema": {"input": {"type": "object"}, "output": {"type": "object"}}},
    )
    emulator.add_model(
        NEW,
        {
            "name": NEW,
            "description": "Publisher prose that must not be copied.",
            "task": {"name": "Translation", "description": "Publisher task prose."},
            "properties": [{"property_id": "planned_deprecation_date", "value": "2026-05-30"}],
            "schema": {
                "input": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Publisher field prose."}},
                    "required": ["text"],
                },
                "output": {"type": "object", "properties": {"translated_text": {"type": "string"}}},
            },
        },
    )
    emulator.add_model(NO_SCHEMA, {"name": NO_SCHEMA, "description": "Listed but without a schema.", "schema": {}})

    code = _sync(emulator, schemas, out, "--exit-code")
    text = capsys.readouterr().out
    assert code == 1, text
    lines = text.splitlines()
    assert "  added: @cf/baai/bge-m3" in lines and f"  added: {NEW}" in lines
    assert "  removed: @cf/retired/old-model (no longer listed; file kept; --prune deletes it)" in lines
    assert f"  deprecated: {NEW} (planned_deprecation_date: 2026-05-30)" in lines
    assert [line for line in lines if NO_SCHEMA in line] == [
        f"  no schema: {NO_SCHEMA} (models/schema returned no input/output schema); skipped"
    ]
    assert not (schemas / "@cf" / "test" / "no-schema.json").exists()
    assert (schemas / "@cf" / "retired" / "old-model.json").is_file()

    # An added model is written in our canonical form, by our rules, without the publisher's prose.
    doc = json.loads((schemas / "@cf/test/sunset.json").read_text(encoding="utf-8"))
    assert list(doc) == ["name", "description", "task", "properties", "schema"]
    assert "Publisher" not in json.dumps(doc)
    assert doc["schema"]["output"]["required"] == ["translated_text"]  # the Translation rule
    assert doc["task"] == {"name": "Translation", "description": "Rewrites text in a different language."}
    # The same rules rebuild the shipped shapes (prose aside: a new file gets the glossary's words).
    added = json.loads((schemas / "@cf/baai/bge-m3.json").read_text(encoding="utf-8"))
    shipped = _shipped("@cf/baai/bge-m3")["schema"]
    for half in ("input", "output"):
        assert strip_prose(added["schema"][half]) == strip_prose(shipped[half])

    # Files were written, so the package was regenerated from the synced folder.
    with importable(out, "synced_pkg"):
        registry = importlib.import_module("synced_pkg._registry")
        assert sorted(registry.MODELS) == sorted([*LISTED, NEW, "@cf/retired/old-model"])

    assert _sync(emulator, schemas, out, "--no-generate", "--prune") == 0
    assert "file deleted (--prune)" in capsys.readouterr().out
    assert not (schemas / "@cf" / "retired" / "old-model.json").exists()
    assert _sync(emulator, schemas, out, "--no-generate", "--exit-code") == 0


def test_sync_is_not_part_of_the_runtime() -> None:
    """The sync tool lives beside the generator; the generated (and vendored) runtime has no copy."""
    # Found by what the tool defines, not by file name: the runtime has sync drivers named sync.py.
    assert not [p for p in (ROOT / "generated").rglob("*.py") if "class SyncReport" in p.read_text(encoding="utf-8")]
    assert (ROOT / "codegen" / "sync.py").is_file()
