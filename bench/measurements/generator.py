"""The generator on the public catalog: the whole catalog into an empty folder, then again with one
model's description changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.paths import CATALOG, PY, ROOT
from bench.processes import last_line, measure_child


def catalog_copy(dest: Path) -> tuple[int, list[str]]:
    """Copy the catalog files that have both schema halves (the others are left out on purpose)."""
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    count = 0
    for path in sorted(CATALOG.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            skipped.append(path.name)
            continue
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(schema, dict) or not schema.get("input") or not schema.get("output"):
            skipped.append(path.name)
            continue
        shutil.copy2(path, dest / path.name)
        count += 1
    return count, skipped


def measure(ctx: Context) -> dict[str, Any]:
    if not CATALOG.is_dir():
        return {"error": f"catalog not found at {CATALOG}"}
    schemas = ctx.work / "gen-schemas"
    out_dir = ctx.work / "gen-out"
    count, skipped = catalog_copy(schemas)
    cmd = [PY, "-m", "codegen", "--schemas", str(schemas), "--out", str(out_dir), "--package", "bench_pkg"]
    full = measure_child(cmd, ROOT)
    if full.code != 0:
        raise RuntimeError(f"codegen exited {full.code}: {last_line(full.output)}")
    target = schemas / "bge-m3.json"
    if not target.exists():
        target = sorted(schemas.glob("*.json"))[0]
    doc = json.loads(target.read_text())
    doc["description"] = str(doc.get("description", "")) + " (edited by the benchmark)"
    target.write_text(json.dumps(doc, indent=2))
    one = measure_child(cmd, ROOT)
    if one.code != 0:
        raise RuntimeError(f"codegen exited {one.code}: {last_line(one.output)}")
    files = sum(1 for p in (out_dir / "bench_pkg").rglob("*") if p.is_file())
    return {
        "models": count,
        "left_out": skipped,
        "files": files,
        "full_s": round(full.wall, 2),
        "full_cpu_s": round(full.cpu, 2),
        "full_summary": last_line(full.output).replace(str(out_dir), "TMP2"),
        "one_changed_s": round(one.wall, 2),
        "one_changed_cpu_s": round(one.cpu, 2),
        "one_changed_file": target.name,
        "one_changed_summary": last_line(one.output).replace(str(out_dir), "TMP2"),
    }
