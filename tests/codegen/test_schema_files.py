"""The files in ``schemas/``: one canonical form, the whole public catalog covered, reproducible from
the published files by ``python -m codegen.sync adopt``, and none of the publisher's prose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codegen.normalise import OUTPUT_REQUIRED_RULE, TITLE_RULE, TITLES, strip_prose
from codegen.schema_file import dump
from codegen.sync import adopt, read_catalog
from codegen.sync import main as sync_main
from tests._catalog import catalog_dir

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
FILES = sorted(SCHEMAS.rglob("*.json"))


def _doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _prose(node: Any, in_properties: bool = False) -> Iterator[str]:
    """Every description and title of a document (property *names* and the title rule's labels are not prose)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if not in_properties and key in ("description", "title") and isinstance(value, str):
                if key == "title" and value in TITLES:
                    continue
                yield value
            elif key in ("enum", "const", "default", "examples", "required", "x-notes"):
                continue
            else:
                yield from _prose(value, key == "properties" and not in_properties)
    elif isinstance(node, list):
        for item in node:
            yield from _prose(item)


def test_every_file_is_in_the_canonical_form() -> None:
    assert len(FILES) >= 100
    for path in FILES:
        doc = _doc(path)
        assert path.read_bytes() == dump(doc), f"{path}: not in canonical form (run python -m codegen.sync adopt)"
        keys = [k for k in doc if k not in ("x-notes", "x-overrides", "x-realtime")]
        assert keys == ["name", "description", "task", "properties", "schema"], path
        for entry in doc.get("x-overrides", []):  # facts stated with their source (codegen.overrides)
            assert entry["fact"].strip() and entry["source"].startswith("https://"), (path, entry)
        assert list(doc["schema"]) == ["input", "output"], path
        assert path.relative_to(SCHEMAS).as_posix() == f"{doc['name']}.json"
        assert isinstance(doc["description"], str) and doc["description"], path
        assert all(isinstance(n, str) for n in doc.get("x-notes", [])), path


def test_no_description_or_title_is_the_publishers() -> None:
    catalog = catalog_dir()
    theirs: set[str] = set()
    for path in catalog.glob("*.json"):
        theirs.update(" ".join(t.split()).lower() for t in _prose(_doc(path)))
    for path in FILES:
        for text in _prose(_doc(path)):
            assert " ".join(text.split()).lower() not in theirs, f"{path}: copies the catalog's text {text!r}"


def test_every_catalog_model_with_a_schema_has_a_file_reproducible_by_the_tool(tmp_path: Path) -> None:
    published, skipped, dupes = read_catalog([catalog_dir()])
    ours = {_doc(p)["name"] for p in FILES}
    assert {p.model_id for p in published} <= ours
    assert all("no input/output schema" in why for why in skipped.values()), skipped
    assert len(dupes) <= 1, dupes  # qwen.json and qwen1.5-0.5b-chat.json name the same model
    report, _lines = adopt([catalog_dir()], SCHEMAS, dry_run=True)
    assert not report.added and not report.changed and not report.notes_only, report.lines("adopted")
    assert len(report.unchanged) == len(published)


def test_the_tool_rebuilds_a_file_from_the_published_one_alone(tmp_path: Path) -> None:
    """Without a local file, prose comes from our rules; the shapes are the shipped ones."""
    catalog = catalog_dir()
    report, _ = adopt([catalog / "whisper.json", catalog / "flux-2-dev.json"], tmp_path)
    assert sorted(report.added) == ["@cf/black-forest-labs/flux-2-dev", "@cf/openai/whisper"]
    for model_id in report.added:
        fresh, shipped = _doc(tmp_path / f"{model_id}.json"), _doc(SCHEMAS / f"{model_id}.json")
        for half in ("input", "output"):
            assert strip_prose(fresh["schema"][half]) == strip_prose(shipped["schema"][half])
    flux = _doc(tmp_path / "@cf/black-forest-labs/flux-2-dev.json")
    assert flux["schema"]["input"]["required"] == ["multipart"]
    assert "required" not in flux["schema"]["input"]["properties"]
    assert any("inside `properties`" in note for note in flux["x-notes"])


def test_outputs_state_what_is_always_returned() -> None:
    docs = {_doc(p)["name"]: _doc(p) for p in FILES}
    bge = docs["@cf/baai/bge-m3"]["schema"]["output"]["oneOf"]
    assert [b.get("required") for b in bge] == [["response"], ["response", "shape"], ["shape", "data"], ["request_id"]]
    assert bge[0]["properties"]["response"]["items"]["required"] == ["id", "score"]
    for model_id, doc in docs.items():
        out = doc["schema"]["output"]
        for branch in out.get("oneOf", [out]):
            props = branch.get("properties", {})
            if doc["task"]["name"] == "Text Embeddings" and "shape" in props:
                assert props["shape"]["items"]["type"] == "integer", model_id
            if doc["task"]["name"] == "Text Generation" and props.get("response", {}).get("type") == "string":
                assert "response" in branch["required"], model_id
            if list(props) == ["request_id"]:
                assert branch["required"] == ["request_id"], model_id
    assert docs["@cf/openai/whisper"]["schema"]["output"]["required"] == ["text"]
    assert docs["@cf/meta/m2m100-1.2b"]["schema"]["output"]["required"] == ["translated_text"]
    assert docs["@cf/facebook/detr-resnet-50"]["schema"]["output"]["items"]["required"] == ["label", "score", "box"]
    assert "tool_calls" not in docs["@cf/meta/llama-3-8b-instruct"]["schema"]["output"]["oneOf"][0]["required"]


def test_variant_titles_follow_the_rule() -> None:
    allowed = TITLES
    hand_written = {"@cf/baai/bge-m3"}  # its own titles (query / contexts variants) predate the rule
    for path in FILES:
        doc = _doc(path)
        if doc["name"] in hand_written:
            continue
        for half in ("input", "output"):
            root = doc["schema"][half]
            for branch in root.get("oneOf", root.get("anyOf", [])):
                inner = branch.get("oneOf", branch.get("anyOf")) if "properties" not in branch else None
                for leaf in inner or [branch]:
                    assert leaf.get("title", "Batch") in allowed, (path, leaf.get("title"))
    assert "requests" in TITLE_RULE and "translated_text" in OUTPUT_REQUIRED_RULE


def test_adopt_command_reports_a_schemaless_file_in_one_line_and_writes_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = catalog_dir()
    empty = [p for p in sorted(catalog.glob("*.json")) if not _doc(p).get("schema")]
    assert empty, "the catalog has files without a schema"
    code = sync_main(["adopt", str(empty[0]), str(catalog / "m2m100-1.2b.json"), "--schemas", str(tmp_path)])
    text = capsys.readouterr().out
    assert code == 0
    assert [line for line in text.splitlines() if empty[0].name in line] == [
        f"  {empty[0]}: no input/output schema; skipped"
    ]
    assert "  added: @cf/meta/m2m100-1.2b" in text.splitlines()
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json")) == ["@cf/meta/m2m100-1.2b.json"]
    # A second run finds nothing to do and, with --exit-code, says so with 0.
    assert sync_main(["adopt", str(catalog / "m2m100-1.2b.json"), "--schemas", str(tmp_path), "--exit-code"]) == 0
    assert "0 added, 0 changed, 0 removed, 1 unchanged" in capsys.readouterr().out
