"""A schema file for a model that publishes no schema: one warning line, skipped, the rest generates
(exit 0); ``--strict`` makes it exit 2 with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from tests._codegen_util import codegen_cli


def _write(schemas: Path) -> None:
    folder = schemas / "@cf" / "x"
    folder.mkdir(parents=True)
    good = {
        "name": "@cf/x/good",
        "task": {"name": "Translation"},
        "schema": {
            "input": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "output": {"type": "object", "properties": {"translated_text": {"type": "string"}}},
        },
    }
    (folder / "good.json").write_text(json.dumps(good))
    (folder / "none.json").write_text(json.dumps({"name": "@cf/x/none", "description": "no schema published"}))
    (folder / "empty.json").write_text(json.dumps({"name": "@cf/x/empty", "schema": {}}))


def test_schema_less_files_warn_once_each_and_the_rest_generates(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    _write(schemas)
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_none")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and all("publishes no input/output schema" in w for w in warnings)
    assert {Path(w.split(": ")[1]).name for w in warnings} == {"none.json", "empty.json"}
    models = out / "pkg_none" / "models" / "cf" / "x"
    assert (models / "good.py").is_file() and not (models / "none.py").exists()


def test_strict_turns_them_into_exit_2_with_nothing_written(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    _write(schemas)
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_none", "--strict")
    assert proc.returncode == 2
    problems = [line for line in proc.stderr.splitlines() if "publishes no input/output schema" in line]
    assert len(problems) == 2 and "nothing written" in proc.stderr
    assert not out.exists()
