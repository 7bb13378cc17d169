"""``workers-ai sync`` against the emulator: every page listed, schemas written in catalog form, the
package regenerated, and added / changed / removed / deprecated / schema-less models reported.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai._cli import main as cli
from workers_ai.testing import Emulator

from tests._codegen_util import importable, write_schema

LISTED = ["@cf/baai/bge-m3", "@cf/meta/m2m100-1.2b", "@cf/openai/whisper", "@cf/facebook/bart-large-cnn"]
OLD_ONLY = "@cf/retired/old-model"
DEPRECATED = "@cf/test/sunset"
NO_SCHEMA = "@cf/test/no-schema"


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    with Emulator(models=LISTED) as emu:
        emu.add_model(
            DEPRECATED,
            {
                "name": DEPRECATED,
                "description": "A model on its way out.",
                "task": {"name": "Translation"},
                "properties": [{"property_id": "planned_deprecation_date", "value": "2026-05-30"}],
                "schema": {
                    "input": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                    "output": {"type": "object", "properties": {"translated_text": {"type": "string"}}},
                },
            },
        )
        emu.add_model(NO_SCHEMA, {"name": NO_SCHEMA, "description": "Listed but without a schema.", "schema": {}})
        monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", emu.account_id)
        monkeypatch.setenv("CLOUDFLARE_API_TOKEN", emu.api_token)
        yield emu


def _sync(emu: Emulator, schemas: Path, out: Path, *extra: str) -> int:
    return cli(
        [
            "sync",
            "--schemas",
            str(schemas),
            "--out",
            str(out),
            "--package",
            "synced_pkg",
            "--base-url",
            emu.base_url,
            "--per-page",
            "2",
            *extra,
        ]
    )


def test_sync_writes_every_listed_model_and_regenerates(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(
        schemas,
        "@cf/retired/old-model.json",
        {"name": OLD_ONLY, "schema": {"input": {"type": "object"}, "output": {"type": "object"}}},
    )
    stale = json.loads(
        (Path(__file__).parent.parent / "schemas" / "@cf" / "baai" / "bge-m3.json").read_text(encoding="utf-8")
    )
    stale["description"] = "An older description."
    write_schema(schemas, "@cf/baai/bge-m3.json", stale)

    code = _sync(emulator, schemas, out, "--exit-code")
    text = capsys.readouterr().out
    assert code == 1, text  # --exit-code: something changed
    assert "changed: @cf/baai/bge-m3" in text
    for model_id in ("@cf/meta/m2m100-1.2b", "@cf/openai/whisper", "@cf/facebook/bart-large-cnn", DEPRECATED):
        assert f"added: {model_id}" in text
    assert f"removed: {OLD_ONLY} (no longer listed; file kept; --prune deletes it)" in text
    assert f"deprecated: {DEPRECATED} (planned_deprecation_date: 2026-05-30)" in text
    assert f"no schema: {NO_SCHEMA}" in text
    assert (schemas / "@cf" / "retired" / "old-model.json").is_file()
    assert not (schemas / "@cf" / "test" / "no-schema.json").exists()

    # Catalog form, with the listing's facts and the downloaded schema.
    doc = json.loads((schemas / "@cf" / "test" / "sunset.json").read_text(encoding="utf-8"))
    assert list(doc) == ["name", "description", "task", "properties", "schema"]
    assert doc["name"] == DEPRECATED and doc["task"]["name"] == "Translation"
    assert doc["schema"]["input"]["required"] == ["text"]

    # Every page of models/search was read (per_page=2, six models).
    pages = sorted(r.params.get("page") for r in emulator.requests if r.path.endswith("/ai/models/search"))
    assert pages == ["1", "2", "3"]

    # The package was regenerated from the synced folder and holds every synced model.
    with importable(out, "synced_pkg"):
        registry = importlib.import_module("synced_pkg._registry")
        assert sorted(registry.MODELS) == sorted([*LISTED, DEPRECATED, OLD_ONLY])
        module = importlib.import_module("synced_pkg." + registry.MODELS[DEPRECATED][0])
        assert module.INFO.properties == {"planned_deprecation_date": "2026-05-30"}


def test_second_sync_is_clean_and_prune_deletes(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(
        schemas, "old.json", {"name": OLD_ONLY, "schema": {"input": {"type": "object"}, "output": {"type": "object"}}}
    )
    assert _sync(emulator, schemas, out, "--no-generate") == 0
    capsys.readouterr()
    before = {p: p.stat().st_mtime_ns for p in schemas.rglob("*.json")}
    assert _sync(emulator, schemas, out, "--no-generate", "--exit-code") == 1  # the removed model still counts
    text = capsys.readouterr().out
    assert "0 added, 0 changed, 1 removed, 5 unchanged" in text
    assert {p: p.stat().st_mtime_ns for p in schemas.rglob("*.json")} == before  # nothing rewritten
    assert not out.exists()  # --no-generate
    assert _sync(emulator, schemas, out, "--no-generate", "--prune") == 0
    assert "file deleted (--prune)" in capsys.readouterr().out
    assert not (schemas / "old.json").exists()
    assert _sync(emulator, schemas, out, "--no-generate", "--exit-code") == 0
