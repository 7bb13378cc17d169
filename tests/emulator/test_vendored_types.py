"""A vendored copy of the emulator type-checks with no configuration of ours: plain ``mypy --strict``
and pyright strict, although ``jsonschema`` (which it uses) ships no type information."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._codegen_util import codegen_cli

PACKAGE = "myapp._vendor.workers_ai"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def vendored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vendor-testing")
    proc = codegen_cli("--package", PACKAGE, "--models", "@cf/baai/*", "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    if not (out / "myapp/_vendor/workers_ai/testing").is_dir():  # lean by default: ask for the emulator
        proc = codegen_cli("--package", PACKAGE, "--models", "@cf/baai/*", "--out", out, "-q", "--with-testing")
        assert proc.returncode == 0, proc.stderr
    assert (out / "myapp/_vendor/workers_ai/testing/_jsonschema.py").is_file()
    return out


def test_vendored_emulator_passes_plain_mypy_strict(vendored: Path, tmp_path: Path) -> None:
    # Errors are reported for the testing/ subpackage only (--follow-imports=silent): the runtime it
    # imports is checked by its own tests.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            os.devnull,
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            "-p",
            f"{PACKAGE}.testing",
        ],
        cwd=vendored,
        env={**os.environ, "MYPYPATH": str(vendored)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout


def test_vendored_emulator_passes_pyright_strict(vendored: Path) -> None:
    config = {"typeCheckingMode": "strict", "include": ["myapp/_vendor/workers_ai/testing"]}
    (vendored / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    proc = subprocess.run(
        [str(BIN / "pyright"), "--pythonpath", sys.executable, "--outputjson"],
        cwd=vendored,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    problems = [f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']}" for d in report["generalDiagnostics"]]
    assert problems == [] and report["summary"]["filesAnalyzed"] >= 20
