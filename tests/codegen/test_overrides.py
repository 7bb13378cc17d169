"""The ``x-overrides`` layer: facts stated in a schema file, applied by the generator's load step (so the
structs and the emulator's ``_schemas`` copies agree), refused with exit 2 when malformed, and kept by
``python -m codegen.sync`` across catalog updates."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from codegen.sync import main as sync_main
from tests._codegen_util import build, codegen_cli, importable, write_schema
from tests.codegen._schemas import _model, _obj

SOURCE = "https://developers.cloudflare.com/workers-ai/models/"
OUT = _obj({"translated_text": {"type": "string"}, "count": {"type": "number"}})
IN = _obj({"text": {"type": "string"}}, ["text"])


def _with(*overrides: dict[str, Any]) -> dict[str, Any]:
    doc = _model("@cf/x/patched", IN, OUT)
    doc["x-overrides"] = list(overrides)
    return doc


INT_COUNT: dict[str, Any] = {
    "op": "replace",
    "path": "/schema/output/properties/count",
    "value": {"type": "integer"},
    "fact": "The API sends count as an integer.",
    "source": SOURCE,
}
REQUIRED: dict[str, Any] = {
    "op": "add",
    "path": "/schema/output/required",
    "value": ["translated_text", "count"],
    "fact": "Both fields are always returned.",
    "source": SOURCE,
}


def test_overrides_shape_the_structs_and_the_shipped_schema_copy(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "patched.json", _with(INT_COUNT, REQUIRED))
    build(schemas, out, "pkg_overrides", with_testing=True)
    with importable(out, "pkg_overrides"):
        import importlib

        mod = importlib.import_module("pkg_overrides.models.cf.x.patched")
        import msgspec

        info = msgspec.structs.fields(mod.TranslationOutput)
        by_name = {f.name: f for f in info}
        assert by_name["count"].type is int and by_name["count"].required
        assert by_name["translated_text"].required
    copy_path = out / "pkg_overrides" / "_schemas" / "models" / "cf" / "x" / "patched.json.gz"
    shipped = json.loads(gzip.decompress(copy_path.read_bytes()))
    output = shipped["schema"]["output"]
    assert output["properties"]["count"]["type"] == "integer"
    assert output["required"] == ["translated_text", "count"]
    assert "x-overrides" not in shipped


@pytest.mark.parametrize(
    ("entry", "pointer", "says"),
    [
        ({**INT_COUNT, "op": "patch"}, "/x-overrides/1/op", "unknown op 'patch'"),
        ({**INT_COUNT, "path": "schema/output"}, "/x-overrides/1/path", "not a JSON pointer"),
        ({**INT_COUNT, "path": "/schema/output/properties/nope/type"}, "/x-overrides/1", "does not apply"),
        ({k: v for k, v in INT_COUNT.items() if k != "fact"}, "/x-overrides/1/fact", "`fact` is required"),
        ({**INT_COUNT, "source": " "}, "/x-overrides/1/source", "`source` is required"),
        ({k: v for k, v in INT_COUNT.items() if k != "value"}, "/x-overrides/1", "needs a `value`"),
        ({**INT_COUNT, "why": "x"}, "/x-overrides/1", "unknown keys ['why']"),
        ({**INT_COUNT, "op": "test", "value": {"type": "string"}}, "/x-overrides/1", "does not apply"),
    ],
)
def test_a_bad_override_exits_2_naming_file_and_pointer_and_writes_nothing(
    tmp_path: Path, entry: dict[str, Any], pointer: str, says: str
) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    path = write_schema(schemas, "patched.json", _with(REQUIRED, entry))
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_bad_override")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path.as_posix()}: {pointer}: " in proc.stderr and says in proc.stderr, proc.stderr
    assert not out.exists()


def test_overrides_list_must_be_a_list(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    doc = _with()
    doc["x-overrides"] = {"op": "add"}
    path = write_schema(schemas, "patched.json", doc)
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_bad_override")
    assert proc.returncode == 2 and f"{path.as_posix()}: /x-overrides: must be a list" in proc.stderr


def _catalog(tmp_path: Path, output: dict[str, Any]) -> Path:
    doc = _model("@cf/x/patched", IN, output)
    path = tmp_path / "catalog" / "patched.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _adopt(catalog: Path, schemas: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert sync_main(["adopt", str(catalog), "--schemas", str(schemas)]) == 0
    return capsys.readouterr().out


def test_sync_keeps_overrides_across_catalog_updates_and_reports_stale_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    # First adoption, then the facts are written into the file.
    _adopt(_catalog(tmp_path, OUT), schemas, capsys)
    path = schemas / "@cf" / "x" / "patched.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["x-overrides"] = [INT_COUNT, REQUIRED]
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    before = path.read_bytes()

    # Nothing published changed: nothing written.
    report = _adopt(_catalog(tmp_path, OUT), schemas, capsys)
    assert "1 unchanged" in report and path.read_bytes() == before

    # The catalog adds a field: the file follows it and keeps both overrides.
    grown = copy.deepcopy(OUT)
    grown["properties"]["source_lang"] = {"type": "string"}
    report = _adopt(_catalog(tmp_path, grown), schemas, capsys)
    assert "changed: @cf/x/patched" in report and "overrides:" not in report
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert "source_lang" in doc["schema"]["output"]["properties"]
    assert [o["fact"] for o in doc["x-overrides"]] == [INT_COUNT["fact"], REQUIRED["fact"]]

    # The catalog renames `count`: the first override no longer applies, the second one still does.
    # The report says so and names the fact.
    moved = copy.deepcopy(grown)
    moved["properties"]["n"] = moved["properties"].pop("count")
    report = _adopt(_catalog(tmp_path, moved), schemas, capsys)
    assert "overrides: @cf/x/patched" in report
    assert "override no longer applies, dropped: replace /schema/output/properties/count" in report
    assert INT_COUNT["fact"] in report
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert [o["path"] for o in doc["x-overrides"]] == ["/schema/output/required"]


def test_sync_says_when_the_catalog_now_publishes_an_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    _adopt(_catalog(tmp_path, OUT), schemas, capsys)
    path = schemas / "@cf" / "x" / "patched.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["x-overrides"] = [INT_COUNT]
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    fixed = copy.deepcopy(OUT)
    fixed["properties"]["count"] = {"type": "integer"}
    fixed["properties"]["extra"] = {"type": "string"}
    report = _adopt(_catalog(tmp_path, fixed), schemas, capsys)
    assert "override now published, dropped: replace /schema/output/properties/count" in report
    assert "x-overrides" not in json.loads(path.read_text(encoding="utf-8"))
