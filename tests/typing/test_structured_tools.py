"""Structured outputs and tools as a user sees them: `reply.parsed` typed as the requested type under
mypy --strict and pyright strict, wrong uses are mypy errors, and the same file runs against the emulator."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import msgspec

HERE = Path(__file__).parent


def _mypy(path: Path, cache: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


def test_mypy_and_pyright_type_parsed_replies_and_tool_runs(tmp_path: Path) -> None:
    assert _mypy(HERE / "structured_tools.py", tmp_path / "cache") == []
    config = tmp_path / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "typeCheckingMode": "strict",
                "pythonVersion": "3.10",
                "venvPath": str(Path(sys.executable).parents[2]),
                "venv": Path(sys.executable).parents[1].name,
            }
        )
    )
    pyright = Path(sys.executable).parent / "pyright"
    proc = subprocess.run(
        [str(pyright), "--outputjson", "-p", str(config), str(HERE / "structured_tools.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    errors = [d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert errors == []
    assert report["summary"]["filesAnalyzed"] >= 1


def test_wrong_response_format_and_tools_are_mypy_errors(tmp_path: Path) -> None:
    source = HERE / "negative_structured_tools.py"
    lines = source.read_text(encoding="utf-8").splitlines()
    expected = {no for no, line in enumerate(lines, start=1) if "  # error:" in line}
    errors = _mypy(source, tmp_path / "cache")
    reported = {int(m.group(1)) for e in errors if (m := re.match(r".*negative_structured_tools\.py:(\d+):", e))}
    assert expected and reported == expected, "\n".join(errors)


def test_the_typed_user_code_runs_against_the_emulator() -> None:
    from workers_ai.testing import Emulator

    sys.path.insert(0, str(HERE))
    try:
        import structured_tools
    finally:
        sys.path.remove(str(HERE))
    with Emulator() as emu:
        report = structured_tools.main(emu.client())
    assert isinstance(report["weather"], structured_tools.Weather)
    assert report["weather"].unit in ("c", "f")
    assert isinstance(report["place"], structured_tools.Place)
    assert set(report["score"]) == {"label", "score"}
    assert isinstance(report["raw"], dict)
    assert [c.name for c in report["calls"]] in (["get_weather"], ["Weather"])
    assert report["rounds"] == 1 and report["oai_rounds"] == 1
    assert report["answer"]
    roles = [m["role"] for m in report["oai_messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = report["oai_messages"][1]["tool_calls"][0]
    assert report["oai_messages"][2]["tool_call_id"] == call["id"]
    assert msgspec.json.decode(call["function"]["arguments"])["city"]
