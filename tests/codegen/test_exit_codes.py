"""Generator exit codes: bad input exits 2 with one line per problem, an internal error exits 3 (never 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import codegen.cli
from codegen.cli import generate, main
from tests._codegen_util import codegen_cli, write_schema
from tests.codegen._schemas import TEXT_IN, TEXT_OUT, _model, _obj


def _deep_items(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return node


def test_unreadable_files_odd_types_and_deep_nesting_exit_2(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "good.json", _model("@cf/x/good", TEXT_IN, TEXT_OUT))
    (schemas / "folder.json").mkdir()
    (schemas / "dangling.json").symlink_to(tmp_path / "missing-target.json")
    bad_types = {"empty-list": [], "object": {}}
    for name, kind in bad_types.items():
        write_schema(schemas, f"{name}.json", _model(f"@cf/x/{name}", _obj({"a": {"type": kind}}), TEXT_OUT))
    write_schema(schemas, "deep.json", _model("@cf/x/deep", _obj({"a": _deep_items(165)}), TEXT_OUT))
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_bad_input")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith(("warning:", "codegen:"))]
    for name in ("folder.json", "dangling.json", "empty-list.json", "object.json", "deep.json"):
        assert any(line.startswith(f"{schemas / name}: ") for line in lines), (name, proc.stderr)
    assert not out.exists()


def test_an_internal_error_exits_3_never_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(codegen.cli, "generate", broken)
    assert main(["-q"]) == 3
    err = capsys.readouterr().err
    assert err.splitlines() == ["codegen: internal error: ValueError: boom\\nsecond line"]


@pytest.mark.parametrize("package", ["abc\n", "class", "a.class.b", "pkg.None"])
def test_package_names_must_be_importable(tmp_path: Path, package: str) -> None:
    result = generate(Path("schemas"), tmp_path / "out", package)
    assert result.code == 2 and "--package" in result.problems[0]
    assert not (tmp_path / "out").exists()


def test_a_problem_in_a_file_with_a_newline_in_its_name_stays_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "bad\nname\x1b.json").write_text("{", encoding="utf-8")
    assert main(["--schemas", str(schemas), "--out", str(tmp_path / "out"), "-q"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert "bad\\nname\\x1b.json: /: not valid JSON" in lines[0]
