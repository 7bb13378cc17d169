"""The catalog rule of tests/_catalog.py, run in a child pytest: missing catalog skips with the reason,
fails under CI, and ``WORKERS_AI_CATALOG`` points at it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._catalog import ROOT, under_ci

PROBE = """
from tests._catalog import catalog_dir

def test_probe():
    assert catalog_dir().is_dir()
"""


def _run(tmp_path: Path, catalog: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env.update({"WORKERS_AI_CATALOG": str(catalog), "PYTHONPATH": str(ROOT)})
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "test_probe.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_catalog_fails_under_ci(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-catalog"
    proc = _run(tmp_path, missing, "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout and "CI must provide it" in proc.stdout, proc.stdout
    assert str(missing) in proc.stdout


def test_a_missing_catalog_is_skipped_with_its_reason_outside_ci(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-catalog"
    proc = _run(tmp_path, missing, None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout, proc.stdout
    assert f"public catalog not found at {missing}" in proc.stdout  # -rs shows the reason


def test_the_env_var_names_the_catalog_even_under_ci(tmp_path: Path) -> None:
    elsewhere = tmp_path / "my-catalog"
    elsewhere.mkdir()
    proc = _run(tmp_path, elsewhere, "1")
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("value", "ci"),
    [("1", True), ("true", True), ("yes", True), ("", False), ("0", False), ("false", False), ("FALSE", False)],
)
def test_which_values_of_ci_count_as_ci(monkeypatch: pytest.MonkeyPatch, value: str, ci: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert under_ci() is ci
    monkeypatch.delenv("CI")
    assert under_ci() is False
