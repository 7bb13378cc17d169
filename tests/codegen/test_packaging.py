"""What `pip install .` puts into site-packages: the runtime and the generator under names of ours only.

A top-level `codegen` package would sit beside a user's own package of that common name (and one of them
would shadow the other), so the generator ships as `workers_ai_codegen`; the checkout's folder stays
`codegen/` and `python -m codegen` works there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT


def _build_wheel(out: Path) -> Path:
    # A copy of the project files a wheel is built from, so the checkout's build/ and egg-info stay as they are.
    src = out / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "codegen"):
        path = ROOT / name
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, src / name)
    shutil.copytree(ROOT / "generated", src / "generated", symlinks=True, ignore=shutil.ignore_patterns("*.egg-info"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check", str(src)],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = out.glob("workers_ai-*.whl")
    return wheel


def test_the_wheel_installs_no_top_level_codegen(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    top = {n.split("/")[0] for n in names} - {dist_info}
    assert top == {"workers_ai", "workers_ai_codegen"}
    # The generator is whole under its own name: its modules, its templates, and the `sync` entry point.
    assert "workers_ai_codegen/__main__.py" in names and "workers_ai_codegen/sync.py" in names
    assert any(n.startswith("workers_ai_codegen/templates/") and n.endswith(".jinja") for n in names)
    assert "sync = workers_ai_codegen.sync:run_live" in entry_points
    assert "codegen.sync" not in entry_points.replace("workers_ai_codegen.sync", "")


def test_the_installed_generator_runs_under_its_own_name(tmp_path: Path) -> None:
    """`python -m workers_ai_codegen` (what an install offers) is the same generator as `python -m codegen`."""
    installed = [sys.executable, "-m", "workers_ai_codegen", "--help"]
    done = subprocess.run(installed, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m workers_ai_codegen ")
    in_checkout = subprocess.run(
        [sys.executable, "-m", "codegen", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert in_checkout.returncode == 0 and in_checkout.stdout.startswith("usage: python -m codegen ")
