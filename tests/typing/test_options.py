"""``ClientOptions`` and ``with_options`` as a user sees them: typed under mypy --strict and pyright strict,
wrong keywords and types are errors, and at run time a wrong keyword is a TypeError naming the client."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from workers_ai import AsyncWorkersAI, ClientOptions, WorkersAI

HERE = Path(__file__).parent
SOURCE = HERE / "options.py"


def test_mypy_types_options_and_flags_wrong_keywords(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    expected = {no for no, line in enumerate(lines, start=1) if "  # error:" in line}
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    reported = {int(m.group(1)) for e in errors if (m := re.match(r".*options\.py:(\d+):", e))}
    assert expected and reported == expected, "\n".join(errors)


def test_pyright_strict_reports_only_the_marked_lines(tmp_path: Path) -> None:
    config = tmp_path / "pyrightconfig.json"
    venv = Path(sys.executable).parents[1]
    config.write_text(json.dumps({"typeCheckingMode": "strict", "venvPath": str(venv.parent), "venv": venv.name}))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "pyright"), "--outputjson", "-p", str(config), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    expected = {no for no, line in enumerate(lines, start=1) if "  # error:" in line}
    errors = {d["range"]["start"]["line"] + 1 for d in report["generalDiagnostics"] if d["severity"] == "error"}
    assert errors == expected


@pytest.mark.parametrize("client", [WorkersAI, AsyncWorkersAI])
def test_a_wrong_keyword_names_the_client_and_its_parameters_are_all_named(client: type[WorkersAI]) -> None:
    message = rf"^{client.__name__}\.__init__\(\) got an unexpected keyword argument 'retries'"
    with pytest.raises(TypeError, match=message):
        client(account_id="a" * 32, api_token="t", retries=3)  # type: ignore[call-arg]
    import inspect

    params = inspect.signature(client).parameters
    option_fields = set(ClientOptions.__struct_fields__)
    assert option_fields <= set(params), option_fields - set(params)
    assert all(params[name].default is not inspect.Parameter.empty for name in option_fields)


def test_with_options_makes_a_configured_copy_that_pickles() -> None:
    ai = WorkersAI(account_id="a" * 32, api_token="t", timeout=5.0, max_retries=4, headers={"x-a": "1"})
    copy = ai.with_options(timeout=1.5)
    assert copy is not ai and type(copy) is WorkersAI
    assert copy.options == msgspec.structs.replace(ai.options, timeout=1.5)
    assert (copy.timeout, copy.max_retries, copy.account_id) == (1.5, 4, "a" * 32)
    assert ai.options.timeout == 5.0  # the original is untouched
    with pytest.raises(AttributeError):
        ai.options.timeout = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"WorkersAI\.__init__"):
        ai.with_options(retries=1)  # type: ignore[call-arg]
    again = pickle.loads(pickle.dumps(copy))
    assert again.options == copy.options and again.with_options(max_retries=0).max_retries == 0
