"""The bulk queue: many small requests through the emulator's batch queue (``bench/_queue.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, run_json


def measure(ctx: Context) -> dict[str, Any]:
    """``n`` small requests through the emulator's batch queue (bench/_queue.py): client CPU per item and
    peak RSS of batch_many and ``workers-ai batch``, with and without a journal, as ratios to the same JSON
    posted and polled with plain urllib3 + msgspec; the CLI also at n/10, to show its memory does not grow
    with the number of requests. Each run is a fresh process; the emulator is another one."""
    n = ctx.pick(quick=5000, full=100_000)
    with background([PY, str(BENCH / "_queue.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        runs: dict[str, Any] = {}
        for mode in ("floor", "many", "many_journal", "cli", "cli_journal"):
            runs[mode] = run_json([PY, str(BENCH / "_queue.py"), "client", spec, str(n), mode], timeout=1800)
        small = run_json([PY, str(BENCH / "_queue.py"), "client", spec, str(n // 10), "cli_journal"], timeout=600)
    floor = runs["floor"]
    out: dict[str, Any] = {"requests": n, "runs": runs, "cli_journal_at_n_over_10": small}
    for r in runs.values():
        r["cpu_us_per_item"] = round(r["cpu_s"] / n * 1e6, 2)
        r["cpu_vs_floor"] = round(r["cpu_s"] / floor["cpu_s"], 2)
        r["peak_rss_vs_floor"] = round(r["peak_rss_mb"] / floor["peak_rss_mb"], 2)
    out["journal_cpu_cost"] = round(runs["many_journal"]["cpu_s"] / runs["many"]["cpu_s"], 3)
    out["cli_journal_cpu_cost"] = round(runs["cli_journal"]["cpu_s"] / runs["cli"]["cpu_s"], 3)
    out["cli_peak_rss_n_vs_n_over_10"] = round(runs["cli_journal"]["peak_rss_mb"] / small["peak_rss_mb"], 2)
    return out
