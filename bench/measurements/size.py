"""The size of the generated package: lines of code and of docstrings, and repeated blocks across model
modules."""

from __future__ import annotations

import shutil
from typing import Any

from bench.context import Context
from bench.lines import count
from bench.paths import ROOT
from bench.processes import run


def measure(ctx: Context) -> dict[str, Any]:
    """The generated package: lines (code, docstrings, model modules), and repeated blocks across model modules."""
    pkg = ROOT / "generated" / "workers_ai"
    py = [p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts]
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in py}
    models = pkg / "models"
    whole = count(pkg)
    out: dict[str, Any] = {
        "lines": whole.code,
        "doc_lines": whole.docs,
        "model_lines": sum(n for p, n in lines.items() if models in p.parents),
        "runtime_lines": sum(n for p, n in lines.items() if models not in p.parents and "testing" not in p.parts),
        "files": len(py),
    }
    tool = shutil.which("duplicates")  # the team's duplicate-block scanner, where installed
    if tool is not None:
        text = run([tool, "--repo", str(models), "--most", "1", "--seconds", "120"], check=False)
        first = text.strip().splitlines()[0] if text.strip() else ""
        out["model_duplicate_pairs"] = int(first.split()[0]) if first[:1].isdigit() else None
        out["duplicates_says"] = first[:200]
    return out
