"""examples/structured.py and examples/tools.py run against the emulator when no credentials are set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(name: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_structured_example_parses_into_its_types() -> None:
    out = _run("structured.py")
    assert "using the local emulator" in out
    assert "usage: Usage(" in out and "json_object: {" in out
    assert any(unit in out for unit in (" celsius [", " fahrenheit ["))


def test_tools_example_runs_the_loop_in_both_families() -> None:
    out = _run("tools.py")
    assert "llama wants " in out
    assert "llama after 1 round(s): " in out and "gpt-oss after 1 round(s): " in out
    assert "'tool_call_id': 'call_" in out
