"""The public API's static types, as mypy and pyright reveal them (the msgspec way of testing types)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
USER = HERE / "user_code.py"


def expected() -> dict[int, str]:
    out: dict[int, str] = {}
    for no, line in enumerate(USER.read_text().splitlines(), start=1):
        m = re.search(r"# E: (.+)$", line)
        if m:
            out[no] = m.group(1).strip()
    return out


def _short(type_text: str) -> str:
    # Drop module paths: "workers_ai.models.cf.baai.bge_m3.EmbeddingOutput" -> "EmbeddingOutput".
    return re.sub(r"\b(?:[A-Za-z_][A-Za-z0-9_]*\.)+([A-Za-z_][A-Za-z0-9_]*)", r"\1", type_text).replace("builtins.", "")


def test_mypy_reveals_concrete_types(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(USER),
        ],
        capture_output=True,
        text=True,
    )
    revealed: dict[int, str] = {}
    other: list[str] = []
    for line in proc.stdout.splitlines():
        m = re.match(r".*user_code\.py:(\d+): note: Revealed type is \"(.+)\"$", line)
        if m:
            revealed[int(m.group(1))] = _short(m.group(2)).replace("?", "")
        elif ": error:" in line:
            other.append(line)
    assert other == [], "\n".join(other)
    for no, want in expected().items():
        assert revealed.get(no) == want, f"line {no}: mypy revealed {revealed.get(no)!r}, expected {want!r}"


def test_pyright_reveals_concrete_types(tmp_path: Path) -> None:
    pyright = Path(sys.executable).parent / "pyright"
    if not pyright.exists():
        pytest.skip("pyright is not installed in this environment (pip install -e '.[dev]')")
    config = tmp_path / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "typeCheckingMode": "strict",
                "pythonVersion": "3.10",
                "venvPath": str(Path(sys.executable).parents[2]),
                "venv": Path(sys.executable).parents[1].name,
            }
        )
    )
    proc = subprocess.run([str(pyright), "--outputjson", "-p", str(config), str(USER)], capture_output=True, text=True)
    report = json.loads(proc.stdout)
    revealed: dict[int, str] = {}
    errors: list[str] = []
    for diag in report["generalDiagnostics"]:
        line = diag["range"]["start"]["line"] + 1
        m = re.match(r'Type of ".*" is "(.+)"$', diag["message"], re.S)
        if diag["severity"] == "information" and m:
            revealed[line] = _short(m.group(1))
        elif diag["severity"] == "error":
            errors.append(f"{line}: {diag['message']}")
    assert errors == [], "\n".join(errors)
    for no, want in expected().items():
        got = revealed.get(no)
        assert got == want, f"line {no}: pyright revealed {got!r}, expected {want!r}"
