"""Helpers for the generator tests: run codegen, import what it wrote, type-check it, make examples."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codegen.cli import GenerateResult, generate

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def codegen_cli(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m codegen ARGS`` in a subprocess (the real command line, exit code and streams)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [PYTHON, "-m", "codegen", *map(str, args)],
        cwd=cwd or ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def build(
    schemas: Path, out: Path, package: str, models: tuple[str, ...] = (), *, with_testing: bool | None = None
) -> GenerateResult:
    """Generate in this process (much faster than the CLI); fails loudly on problems."""
    result = generate(schemas, out, package, models, with_testing=with_testing)
    assert result.code == 0, "\n".join(result.problems)
    return result


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (bytecode caches left out)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@contextmanager
def importable(folder: Path, package: str) -> Iterator[None]:
    """Put ``folder`` on ``sys.path`` for the block and forget ``package``'s modules afterwards."""
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        top = package.split(".")[0]
        for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
            del sys.modules[name]


def model_modules(package: str) -> dict[str, Any]:
    """Model id -> imported module, for every model in the package's registry."""
    registry = importlib.import_module(f"{package}._registry")
    return {mid: importlib.import_module(f"{package}.{module}") for mid, (module, _) in sorted(registry.MODELS.items())}


def handle_class(module: Any) -> Any:
    """A model module's sync handle class (a subclass of its shape's ``ShapeHandle``, defined there)."""
    base = module.ShapeHandle
    (cls,) = [v for v in vars(module).values() if isinstance(v, type) and v is not base and issubclass(v, base)]
    return cls


def model_exports(module: Any) -> list[str]:
    """What a model module exports: its handles and Input/Output aliases, then its shape's ``__all__``
    (re-exported with ``from <shape> import *``; a model module has no ``__all__`` of its own)."""
    name = handle_class(module).__name__
    shape = sys.modules[module.ShapeHandle.__module__]
    return [name, f"Async{name}", f"{name}Input", f"{name}Output", *shape.__all__]


def write_schema(folder: Path, rel: str, doc: dict[str, Any]) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def has_schema(path: Path) -> bool:
    """Whether a catalog file carries a non-empty input and output schema."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    schema = doc.get("schema") if isinstance(doc, dict) else None
    return isinstance(schema, dict) and bool(schema.get("input")) and bool(schema.get("output"))


def copy_catalog(catalog: Path, dest: Path) -> list[str]:
    """Copy the catalog files that have a schema into ``dest``; returns the names left out."""
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    for path in sorted(catalog.glob("*.json")):
        if has_schema(path):
            shutil.copyfile(path, dest / path.name)
        else:
            skipped.append(path.name)
    return skipped


def mypy_strict(folder: Path, package: str, cache: Path) -> list[str]:
    """``mypy --strict`` on a generated package; returns the error lines about generated model code.

    The runtime files are hand-written and checked by the project's own mypy run; here only what the
    generator wrote counts (model modules, client, registry, package init).
    """
    config = cache.parent / "mypy-generated.ini"
    config.write_text(
        "[mypy]\nstrict = True\npython_version = 3.10\nwarn_unused_ignores = False\n"
        "[mypy-jsonschema.*]\nignore_missing_imports = True\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [PYTHON, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache), "-p", package],
        cwd=folder,
        env={**os.environ, "MYPYPATH": str(folder)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    pkg_path = package.replace(".", "/")
    generated = (f"{pkg_path}/models/", f"{pkg_path}/_client.py", f"{pkg_path}/_registry.py", f"{pkg_path}/__init__.py")
    return [line for line in proc.stdout.splitlines() if line.startswith(generated) and ": error:" in line]
