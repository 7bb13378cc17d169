"""Where the benchmarks find things: this folder, the repository, the results, the catalog, the interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
CATALOG = Path(os.environ.get("WORKERS_AI_CATALOG") or ROOT.parent / "shared" / "catalog")  # as the tests find it
PY = sys.executable  # the project's .venv: it has every extra and the emulator
