"""Benchmarks side by side: this SDK, the official ``cloudflare`` SDK, the ``openai`` SDK and the floor.

``make bench`` (or ``.venv/bin/python bench/run.py``) runs everything in one go and writes
``bench/results/latest.md`` and ``bench/results/latest.json``. It never asserts: a goal that is missed
shows as missed, and a comparison that cannot run says why while the rest goes on.

Where things run:

- the comparison SDKs live in ``bench/.venv-peers`` (created here, gitignored), never in the
  project's own environment;
- our SDK is measured as a user gets it: a wheel built from this tree and installed into a fresh
  venv holding only msgspec and urllib3 (the floor runs there too);
- every client talks to ``bench/_server.py`` (or, for batches, the project's emulator) in another
  process on 127.0.0.1, so the server's CPU never counts as the client's.

Options: ``--quick`` (fewer repeats, for trying the harness), ``--only NAME ...`` (some measurements:
the names in ``bench/measurements/__init__.py``, which ``--help`` lists), ``--skip-peers`` (no comparison
SDKs), ``--out DIR`` (default bench/results).

This file is the command line: it sets up the interpreters, runs the chosen measurements
(``bench/measurements/``), judges the goals (``bench/goals.py``) and prints the page (``bench/report.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (make bench): import `bench` from the repository's root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.context import Context
from bench.envs import Envs, own_versions, setup_peers, setup_wheel
from bench.goals import goals
from bench.measurements import MEASUREMENTS, NAMES
from bench.paths import RESULTS
from bench.processes import log
from bench.report import render_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (to try the harness)")
    parser.add_argument("--only", nargs="+", choices=NAMES, help="run only these sections")
    parser.add_argument("--skip-peers", action="store_true", help="do not install or run the comparison SDKs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default bench/results)")
    args = parser.parse_args(argv)
    wanted = args.only or NAMES
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    envs = Envs()
    with tempfile.TemporaryDirectory(prefix="workers-ai-bench-") as tmp:
        work = Path(tmp)
        needs_peers = any(m.uses_peers for m in MEASUREMENTS if m.name in wanted)
        setup_peers(envs, args.skip_peers or not needs_peers)
        wheel_info = setup_wheel(envs, work)
        log(f"ours: {envs.ours_kind}; peers: {envs.peer_ok or envs.peer_error}")
        ctx = Context(envs=envs, work=work, wheel_info=wheel_info, quick=args.quick)
        for measurement in MEASUREMENTS:
            name = measurement.name
            if name not in wanted:
                continue
            log(f"{name} ...")
            t0 = time.perf_counter()
            try:
                results[name] = measurement.measure(ctx)
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {str(exc)[-600:]}"
                results[name] = {"error": errors[name]}
            log(f"{name} done in {time.perf_counter() - t0:.1f} s")
    versions: dict[str, str] = dict(envs.peer_ok)
    versions.update(own_versions())
    results["meta"] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "ours_env": envs.ours_kind,
        "quick": args.quick,
        "sections": wanted,
        "total_s": time.perf_counter() - started,
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
    }
    results["goals"] = goals(results)
    if errors:
        results["errors"] = errors
    args.out.mkdir(parents=True, exist_ok=True)
    ordered = {k: results[k] for k in ["meta", "goals", *NAMES, "errors"] if k in results}
    (args.out / "latest.json").write_text(json.dumps(ordered, indent=2) + "\n")
    markdown = render_markdown(results)
    (args.out / "latest.md").write_text(markdown + "\n")
    log(f"wrote {args.out / 'latest.md'} and latest.json in {results['meta']['total_s']:.0f} s")
    print()
    print(markdown)
    return 0


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    sys.exit(main())
