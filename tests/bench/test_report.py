"""The benchmark's command line, registry and printer (``bench/``): every measurement ``--only`` offers has a
printer, a recorded run prints as the page always printed it, and a measurement that failed says so in its
place. The measurements themselves run in ``make bench`` (they are long and measure the machine); one short
one runs here, through its printer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.envs import Envs
from bench.goals import goals
from bench.measurements import MEASUREMENTS, NAMES, sse
from bench.report import PAGE, render_markdown

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"


def _recorded() -> dict[str, Any]:
    results: dict[str, Any] = json.loads((DATA / "results.json").read_text())
    results["goals"] = goals(results)
    return results


def test_every_measurement_has_a_printer_and_its_name_on_the_command_line(tmp_path: Path) -> None:
    assert sorted({name for name, _, _ in PAGE}) == sorted(NAMES) and len(set(NAMES)) == len(MEASUREMENTS)
    # As `make bench` runs it: a script, here from another folder.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--only", "nonsense"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    choices = re.findall(r"[a-z]+", proc.stderr.split("choose from", 1)[1])
    assert choices == NAMES


def test_a_recorded_run_prints_as_the_page_always_printed_it() -> None:
    """``data/results.json`` holds a result of every measurement (a full run's, the 100k queue run's and
    short runs of the rest); ``data/results.md`` is what ``make bench`` printed from it before the printer
    was split into one function per measurement. A change of the page on purpose rewrites it:
    ``render_markdown`` of the results with their ``goals``, and a newline."""
    assert render_markdown(_recorded()) + "\n" == (DATA / "results.md").read_text()


def test_a_measurement_that_failed_prints_not_run_in_its_place() -> None:
    recorded = _recorded()
    results: dict[str, Any] = {name: {"error": f"{name} broke"} for name in NAMES}
    results["meta"] = recorded["meta"]
    results["goals"] = goals(results)
    results["errors"] = {name: f"{name} broke" for name in NAMES}
    page = render_markdown(results)
    for name in NAMES:
        sections = sum(1 for row in PAGE if row[0] == name)
        assert page.count(f"Not run: {name} broke") == sections, name  # in its place (calls has two)
        assert f"- {name}: {name} broke" in page  # and in the list of failures
    assert {g["met"] for g in results["goals"]} == {None}
    assert "| not measured | n/a |" in page


def test_a_short_measurement_runs_and_prints(tmp_path: Path) -> None:
    ctx = Context(envs=Envs(), work=tmp_path, wheel_info={}, quick=True)
    result = sse.measure(ctx)
    assert result["results"]["ours_events"]["mb_per_s"] > 0
    printer = next(printer for name, _, printer in PAGE if name == "sse")
    lines = printer(result, {})
    assert len([line for line in lines if line.startswith("| ours")]) == 2, lines
