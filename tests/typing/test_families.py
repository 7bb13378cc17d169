"""Static types of every model family as a user sees them, checked by mypy --strict and pyright strict;
dict literals for nested inputs are checked (a misspelled key or a wrong value type is an error); and
the user-style file runs against the emulator."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _mypy(path: Path, cache: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


@pytest.mark.parametrize("name", ["families.py", "user_dicts.py", "async_families.py"])
def test_mypy_strict_accepts_every_family_without_narrowing(name: str, tmp_path: Path) -> None:
    # families.py is all assert_type(...): a field typed `T | UnsetType` or `T | None` where the API
    # always returns it would be an error here.
    assert _mypy(HERE / name, tmp_path / "cache") == []


def test_pyright_strict_accepts_families_and_user_code(tmp_path: Path) -> None:
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
    files = [str(HERE / "families.py"), str(HERE / "user_dicts.py"), str(HERE / "async_families.py")]
    proc = subprocess.run(
        [str(pyright), "--outputjson", "-p", str(config), *files], capture_output=True, text=True, timeout=600
    )
    report = json.loads(proc.stdout)
    errors = [d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert errors == []
    assert report["summary"]["filesAnalyzed"] >= 3


def test_wrong_dict_literals_are_mypy_errors_and_right_ones_are_not(tmp_path: Path) -> None:
    source = HERE / "negative_dicts.py"
    lines = source.read_text(encoding="utf-8").splitlines()
    expected = {no for no, line in enumerate(lines, start=1) if "  # error:" in line}
    errors = _mypy(source, tmp_path / "cache")
    reported = {int(m.group(1)) for e in errors if (m := re.match(r".*negative_dicts\.py:(\d+):", e))}
    assert expected and reported == expected, "\n".join(errors)


def test_user_code_with_dict_literals_runs_against_the_emulator() -> None:
    from workers_ai import WorkersAI
    from workers_ai.testing import Emulator

    sys.path.insert(0, str(HERE))
    try:
        import user_dicts
    finally:
        sys.path.remove(str(HERE))
    with Emulator(batch_polls=(1, 1)) as emu:
        with WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
            report = user_dicts.main(ai)
        sent = [r for r in emu.requests if r.method == "POST"]
    assert report["dims"] == report["first"] == 1024
    assert report["best"] == 0  # "a llama" shares the query's word
    assert isinstance(report["words"], int) and report["words"] > 0
    assert report["batch"] == [True, True]
    chat = next(r for r in sent if r.path.endswith("llama-3-8b-instruct"))
    assert json.loads(chat.body)["messages"][0] == {"role": "system", "content": "Answer briefly."}
