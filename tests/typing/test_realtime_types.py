"""Realtime sessions type-check as a user writes them (mypy --strict, pyright strict), and wrong options are errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _mypy(path: Path, cache: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


def test_mypy_and_pyright_accept_realtime_user_code(tmp_path: Path) -> None:
    assert _mypy(HERE / "realtime_user.py", tmp_path / "cache") == []
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
    pyright = Path(sys.executable).parent / "pyright"
    proc = subprocess.run(
        [str(pyright), "--outputjson", "-p", str(config), str(HERE / "realtime_user.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    assert [d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error"] == []


def test_wrong_options_are_mypy_errors(tmp_path: Path) -> None:
    source = HERE / "negative_realtime.py"
    lines = source.read_text(encoding="utf-8").splitlines()
    wanted = {i + 1 for i, line in enumerate(lines) if "# E" in line}
    found = {int(e.split(":")[1]) for e in _mypy(source, tmp_path / "cache")}
    assert found == wanted
