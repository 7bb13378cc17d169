"""Vendoring: a self-contained copy under another package name, with only the selected models, that
runs in a fresh virtualenv holding nothing but msgspec and urllib3.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._codegen_util import codegen_cli
from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN

VENDORED = "myapp._vendor.workers_ai"

_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from myapp._vendor.workers_ai import WorkersAI
from myapp._vendor.workers_ai.models.cf.baai.bge_small_en_v1_5 import TextEmbeddingsOutput
ai = WorkersAI(account_id=sys.argv[2], api_token=sys.argv[3], base_url=sys.argv[4], max_retries=0)
out = ai.model("@cf/baai/bge-small-en-v1.5").embed(text=["hello"])
print(json.dumps({
    "type": type(out).__name__,
    "is_struct": isinstance(out, TextEmbeddingsOutput),
    "shape": out.shape,
    "models": ai.models(),
    "foreign": sorted(m for m in sys.modules if m.split(".")[0] in ("workers_ai", "codegen", "jsonschema", "jinja2")),
}))
"""


@pytest.fixture(scope="module")
def vendored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vendor")
    proc = codegen_cli("--package", VENDORED, "--models", "@cf/baai/*", "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    return out


def test_vendored_copy_is_self_contained(vendored: Path) -> None:
    out = vendored
    root = out / "myapp" / "_vendor" / "workers_ai"
    models = sorted(
        p.relative_to(root / "models").as_posix() for p in (root / "models").rglob("*.py") if p.name != "__init__.py"
    )
    assert models and all(m.startswith(("cf/baai/", "_shapes/")) for m in models), models
    # Relative imports only, and nothing at run time beyond the standard library, msgspec and urllib3
    # (the optional testing/ subpackage may use jsonschema and pytest, the optional ray module Ray, numpy
    # and pyarrow; imports under `if TYPE_CHECKING:` are for type checkers only).
    allowed = {"msgspec", "urllib3"}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                top = name.split(".")[0]
                assert top not in ("workers_ai", "codegen", "myapp"), f"{rel}: absolute import of {name}"
                if top not in allowed and top not in sys.stdlib_module_names:
                    optional = (
                        (rel == "ray.py" and top in ("ray", "numpy", "pyarrow"))
                        or (
                            rel.startswith("realtime/") and top == "websockets"  # the realtime extra
                        )
                        or (rel == "_core/otel.py" and top == "opentelemetry")
                    )  # the otel extra: loaded when present
                    assert rel.startswith("testing/") or optional, f"{rel}: imports {name}"
    # Lean by default: no emulator and no schema JSON (only the emulator reads it).
    assert (root / "py.typed").exists() and not (root / "_schemas").exists() and not (root / "testing").exists()


def test_vendored_copy_runs_in_a_bare_virtualenv(vendored: Path, tmp_path: Path, server: ScriptedServer) -> None:
    out = vendored
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    wheels = os.environ.get("WORKERS_AI_WHEELHOUSE")
    source = ["--no-index", "--find-links", wheels] if wheels else []
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--disable-pip-version-check",
            *source,
            "msgspec",
            "urllib3",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if pip.returncode != 0:
        pytest.skip(f"could not install msgspec and urllib3 into a fresh venv: {pip.stderr.strip()[-300:]}")
    freeze = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True)
    assert freeze.returncode != 0, "the venv should have no pip, let alone other packages"

    server.script(ok({"shape": [1, 3], "data": [[0.1, 0.2, 0.3]], "pooling": "mean"}))
    run = subprocess.run(
        [str(python), "-c", _SCRIPT, str(out), ACCOUNT, TOKEN, server.base_url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")},
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["is_struct"] and report["shape"] == [1, 3]
    assert report["models"] and all(m.startswith("@cf/baai/") for m in report["models"])
    assert report["foreign"] == []
    (request,) = server.requests
    assert request.path == f"/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-small-en-v1.5"
    assert request.json() == {"text": ["hello"]}
