"""Every name a model module exported before shape modules existed is still importable from it, at run
time and for mypy --strict and pyright strict (which allow only re-exported names in a py.typed package).

``tests/codegen/data/model_exports.json`` is each model module's ``__all__`` as generated on main before
the split into shape modules (``models/_shapes/``) and thin model modules: a model module now re-exports
its shape's names with ``from <shape> import *`` (the shape's ``__all__``), and defines its handles,
``INFO`` and input/output aliases itself. A model added since has no entry; a removed one is skipped.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPORTS: dict[str, list[str]] = json.loads((ROOT / "tests/codegen/data/model_exports.json").read_text("utf-8"))
PACKAGE = ROOT / "generated"


def _present() -> dict[str, list[str]]:
    """The recorded modules that still exist (a model may leave the catalog)."""
    return {m: names for m, names in EXPORTS.items() if (PACKAGE / (m.replace(".", "/") + ".py")).exists()}


def _user_file(tmp_path: Path) -> Path:
    lines = ["from __future__ import annotations", ""]
    for i, (module, names) in enumerate(sorted(_present().items())):
        lines.append(f"from {module} import (")
        lines += [f"    {name} as _n{i}_{name}," for name in names]
        lines.append(")")
    user = tmp_path / "exports_user.py"
    user.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return user


def test_the_record_covers_the_catalog() -> None:
    assert len(_present()) >= 100
    assert sum(len(v) for v in _present().values()) >= 2000


@pytest.mark.parametrize("module", sorted(EXPORTS))
def test_every_recorded_name_is_importable(module: str) -> None:
    if module not in _present():
        pytest.skip("the model left the catalog")
    mod = importlib.import_module(module)
    missing = [name for name in EXPORTS[module] if not hasattr(mod, name)]
    assert missing == []


def test_mypy_strict_sees_every_recorded_name(tmp_path: Path) -> None:
    user = _user_file(tmp_path)
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "c")]
    cmd.append(str(user))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.stdout.strip() == "", proc.stdout[:3000]


def test_pyright_strict_sees_every_recorded_name(tmp_path: Path) -> None:
    pyright = Path(sys.executable).parent / "pyright"
    if not pyright.exists():
        pytest.skip("pyright is not installed in this environment (pip install -e '.[dev]')")
    user = _user_file(tmp_path)
    config = tmp_path / "pyrightconfig.json"
    venv = {"venvPath": str(Path(sys.executable).parents[2]), "venv": Path(sys.executable).parents[1].name}
    config.write_text(json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.10", **venv}))
    proc = subprocess.run([str(pyright), "--outputjson", "-p", str(config), str(user)], capture_output=True, text=True)
    report = json.loads(proc.stdout)
    errors = [
        f"{d['range']['start']['line'] + 1}: {d['message']}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error" and "is not accessed" not in d["message"]
    ]
    assert errors == [], "\n".join(errors[:30])
