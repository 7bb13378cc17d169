"""What mypy has to read to check a small user program: none of numpy, aiohttp, pydantic, websockets or
opentelemetry (all installed here, as in most users' environments) is reached through our imports when the
program uses no feature that needs them. mypy follows imports even inside functions and under
``TYPE_CHECKING``: the optional ones are loaded by name. The program is the benchmark's
(``bench/measurements/type_check.py``, ``MYPY_FILES["ours-3-models"]``)."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from bench.measurements.type_check import MYPY_FILES

EXTRAS = ("numpy", "aiohttp", "yarl", "multidict", "pydantic", "pydantic_core", "websockets", "opentelemetry")


def test_mypy_checks_a_three_model_program_without_reaching_the_extras(tmp_path: Path) -> None:
    # the check means something only where they are installed
    for name in ("numpy", "aiohttp", "pydantic", "websockets", "opentelemetry"):
        assert importlib.util.find_spec(name) is not None, name
    user = tmp_path / "user_three_models.py"
    user.write_text(MYPY_FILES["ours-3-models"])
    cache = tmp_path / "cache"
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file=", "--strict", "--cache-dir", str(cache), user.name],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    packages = _analysed(cache)
    assert packages.get("workers_ai", 0) > 20 and packages.get("msgspec", 0) > 0, packages  # the cache was read
    assert {name: packages[name] for name in EXTRAS if name in packages} == {}
    # _core/otel.py is loaded by name only (its Call and Telemetry are typed by _core/telemetry's protocols)
    assert [p for p in _cached(cache) if "workers_ai/_core/otel." in p] == []


def _cached(cache: Path) -> list[str]:
    """The paths of the modules mypy analysed (its cache: JSON files or its SQLite store)."""
    paths = [str(p.relative_to(cache)) for p in cache.rglob("*.meta.json")]
    for db in cache.rglob("*.db"):
        with sqlite3.connect(db) as conn:
            paths += [row[0] for row in conn.execute("select path from files2") if ".meta." in row[0]]
    return paths


def _analysed(cache: Path) -> dict[str, int]:
    """Modules mypy analysed, counted by top-level package."""
    counts: dict[str, int] = {}
    for path in _cached(cache):
        parts = Path(path).parts
        top = (parts[1] if parts[0].startswith("3.") else parts[0]).split(".")[0]
        counts[top] = counts.get(top, 0) + 1
    return counts


MISSPELT = """from workers_ai import WorkresAI
from workers_ai.families import EmbedingView
import workers_ai

workers_ai.AsyncWorkersAl
"""


def test_a_misspelt_public_name_is_an_error_not_any(tmp_path: Path) -> None:
    """The packages load their names lazily (``__getattr__``) at run time only: type checkers see the
    imports, so a name that does not exist is reported instead of silently typed ``Any``."""
    user = tmp_path / "misspelt.py"
    user.write_text(MISSPELT)
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file=", "--strict", "--cache-dir", str(tmp_path / "c"), user.name],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert sorted(int(line.split(":")[1]) for line in mypy.stdout.splitlines() if ": error:" in line) == [1, 2, 5]
    pyright = Path(sys.executable).parent / "pyright"
    config = tmp_path / "pyrightconfig.json"
    venv = Path(sys.executable).parents[1]
    config.write_text(json.dumps({"typeCheckingMode": "strict", "venvPath": str(venv.parent), "venv": venv.name}))
    proc = subprocess.run([str(pyright), "--outputjson", "-p", str(config), str(user)], capture_output=True, text=True)
    errors = [d for d in json.loads(proc.stdout)["generalDiagnostics"] if d["severity"] == "error"]
    lines = sorted({d["range"]["start"]["line"] + 1 for d in errors})
    assert lines == [1, 2, 5], [(d["range"]["start"]["line"] + 1, d["message"]) for d in errors]
