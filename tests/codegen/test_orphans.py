"""Files a regeneration leaves behind: a model whose schema file is gone loses its module *and* its
compressed schema copy (``_schemas/``), ``--check`` reports such orphans (exit 1, naming them), and only
files the generator owns are ever removed: the hand-written runtime where it is written stays byte for byte,
whatever the options, and a user's own module in a vendored copy is kept.

The in-place case runs the generator of a temporary copy of the checkout (``codegen/``, ``generated/`` and
three schema files), so the package it writes into is that copy's runtime folder, as ``make generate``'s is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from codegen.runtime_source import runtime_files
from tests._codegen_util import ROOT, build, tree, write_schema
from tests.codegen._schemas import TEXT_IN, TEXT_OUT, _model

MODELS = ("@cf/baai/bge-m3", "@cf/baai/bge-small-en-v1.5", "@cf/meta/llama-3-8b-instruct")
GONE = "@cf/baai/bge-small-en-v1.5"
GONE_FILES = ("_schemas/models/cf/baai/bge_small_en_v1_5.json.gz", "models/cf/baai/bge_small_en_v1_5.py")


def _checkout(tmp: Path) -> Path:
    """A copy of the checkout with three models' schema files; its generated package is its runtime's home."""
    copy = tmp / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "codegen")  # generated/codegen: a link
    shutil.copytree(ROOT / "codegen", copy / "codegen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "generated", copy / "generated", ignore=ignore, symlinks=True)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for model in MODELS:
        source = ROOT / "schemas" / f"{model}.json"
        (copy / "schemas" / source.parent.relative_to(ROOT / "schemas")).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, copy / "schemas" / f"{model}.json")
    return copy


def _codegen(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args], cwd=checkout, env=env, capture_output=True, text=True, timeout=600
    )


def test_a_removed_schema_leaves_no_orphan_and_check_names_it_first(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    package = checkout / "generated" / "workers_ai"
    hand_written = runtime_files(ROOT / "generated" / "workers_ai")
    first = _codegen(checkout, "-q")
    assert first.returncode == 0, first.stderr
    assert all((package / rel).is_file() for rel in GONE_FILES)

    (checkout / "schemas" / f"{GONE}.json").unlink()
    check = _codegen(checkout, "--check")
    assert check.returncode == 1, check.stdout + check.stderr
    for rel in GONE_FILES:
        assert f"drift: orphaned, to remove generated/workers_ai/{rel}\n" in check.stderr, check.stderr
    assert "up to date" not in check.stdout

    again = _codegen(checkout)
    assert again.returncode == 0, again.stderr
    assert not any((package / rel).exists() for rel in GONE_FILES)
    assert (package / "_schemas/models/cf/baai/bge_m3.json.gz").is_file()  # the models still there keep theirs
    assert _codegen(checkout, "--check").returncode == 0
    assert {rel: data for rel, data in tree(package).items() if rel in hand_written} == hand_written


def test_the_hand_written_runtime_is_never_removed_where_it_is_written(tmp_path: Path) -> None:
    """Leaving the emulator out of the package in its own folder (``--without-testing``) drops what the
    generator owns of it (the schema copies) and never the hand-written ``testing/`` modules."""
    checkout = _checkout(tmp_path)
    package = checkout / "generated" / "workers_ai"
    hand_written = runtime_files(ROOT / "generated" / "workers_ai")
    assert any(rel.startswith("testing/") for rel in hand_written)
    lean = _codegen(checkout, "-q", "--without-testing", "--without-ray")
    assert lean.returncode == 0, lean.stderr
    assert {rel: data for rel, data in tree(package).items() if rel in hand_written} == hand_written
    assert not (package / "_schemas").exists()


def test_a_vendored_copy_loses_the_copies_it_no_longer_gets_and_keeps_a_module_of_its_own(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/x/one.json", _model("@cf/x/one", TEXT_IN, TEXT_OUT))
    build(schemas, out, "pkg_vendor", with_testing=True)
    root = out / "pkg_vendor"
    assert (root / "testing" / "__init__.py").is_file() and (root / "_schemas").is_dir()
    (root / "mine.py").write_text("VALUE = 1\n", encoding="utf-8")  # no generated header: the user's
    result = build(schemas, out, "pkg_vendor", with_testing=False)
    assert "testing/__init__.py" in result.removed and "mine.py" not in result.removed
    assert not (root / "testing").exists() and not (root / "_schemas").exists()
    assert (root / "mine.py").read_text(encoding="utf-8") == "VALUE = 1\n"
