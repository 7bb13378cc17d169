"""Cold start: a fresh ``python -c`` per sample that imports a client library, builds a client and one
handle; wall and CPU time of the whole process, interleaved case by case so drift hits every case alike."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.processes import child_env, last_line, measure_child, run
from bench.stats import iqr, median

OURS_COLD = (
    "from workers_ai import WorkersAI; ai = WorkersAI(account_id='a' * 32, api_token='t'); ai.model('@cf/baai/bge-m3')"
)
COLD_CASES = {
    "python": "pass",
    "floor": "import urllib3, msgspec",
    "ours": OURS_COLD,
    "cloudflare": "from cloudflare import Cloudflare; c = Cloudflare(api_token='t'); c.ai.run",
    "openai": "from openai import OpenAI; c = OpenAI(api_key='t'); c.embeddings.create",
}


def measure(ctx: Context) -> dict[str, Any]:
    """Each case in ``COLD_CASES`` under the interpreter its library is installed in, ``-X importtime`` of ours."""
    envs, work, repeats = ctx.envs, ctx.work, ctx.pick(quick=5, full=100)
    cases: dict[str, tuple[Path, str]] = {}
    skipped: dict[str, str] = {}
    for name, code in COLD_CASES.items():
        python = envs.python_for(name) if name != "python" else envs.ours
        if python is None:
            skipped[name] = envs.missing(name)
        else:
            cases[name] = (python, code)
    if envs.peers is not None and envs.peer_ok:
        cases["python (peers venv)"] = (envs.peers, "pass")
    cwd = work / "cold"
    cwd.mkdir(exist_ok=True)
    modules: dict[str, int] = {}
    for name, (python, code) in cases.items():  # warm the OS cache and write any missing .pyc
        out = run([str(python), "-c", f"{code}\nimport sys; print(len(sys.modules))"], cwd=cwd)
        modules[name] = int(out.strip().splitlines()[-1])
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (python, code) in cases.items():
            child = measure_child([str(python), "-c", code], cwd)
            if child.code != 0:
                raise RuntimeError(f"{name}: exited {child.code}: {last_line(child.output)}")
            times[name].append(child.wall)
            cpu[name].append(child.cpu)
    rows: dict[str, Any] = {}
    for name, values in times.items():
        rows[name] = {
            "ms": round(median(values) * 1000, 1),
            "min_ms": round(min(values) * 1000, 1),
            "cpu_ms": round(median(cpu[name]) * 1000, 1),
            "modules": modules[name],
            "samples_ms": [round(v * 1000, 1) for v in values],
            "cpu_samples_ms": [round(v * 1000, 1) for v in cpu[name]],
        }
        # Paired per-round ratios: the samples of one round were taken back to back.
        for ref, key in (("floor", "vs_floor"), ("cloudflare", "vs_official")):
            if ref in times:
                paired = [v / r for v, r in zip(values, times[ref], strict=True)]
                rows[name][key] = round(median(paired), 3)
                rows[name][key + "_iqr"] = iqr(paired)  # the spread: the middle half of the paired ratios
                rows[name][key + "_cpu"] = round(
                    median([v / r for v, r in zip(cpu[name], cpu[ref], strict=True) if r > 0]), 3
                )
    for name, why in skipped.items():
        rows[name] = {"error": why}
    return {
        "repeats": repeats,
        "ours_env": envs.ours_kind,
        "rows": rows,
        "code": COLD_CASES,
        "ours_beyond_floor": _import_profile(envs.ours, cwd),
    }


def _import_profile(python: Path, cwd: Path) -> list[dict[str, Any]]:
    """``-X importtime`` of ours after the floor's imports: what our SDK adds, largest self time first."""
    code = f"import urllib3, msgspec\n{OURS_COLD}"
    proc = subprocess.run(
        [str(python), "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=cwd, env=child_env()
    )
    rows: list[dict[str, Any]] = []
    seen_floor = False
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[0].startswith("import time:"):
            continue
        name = parts[2].strip()
        if not seen_floor:
            seen_floor = name == "msgspec"
            continue
        try:
            rows.append({"module": name, "self_us": int(parts[0].split(":")[1]), "cumulative_us": int(parts[1])})
        except ValueError:
            continue
    return sorted(rows, key=lambda r: -r["self_us"])[:12]
