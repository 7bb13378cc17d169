"""Every ``workers-ai`` command reports a usage error the same way, from one place (``main``): one line,
``workers-ai COMMAND: message``, exit status 2, nothing sent; argparse's own errors (a missing argument,
an unknown option, a value of the wrong type) included. A command that made calls ends with its usage line
however it ends; one that failed before any call counted ends with its error alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from workers_ai._cli.main import main
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
SMALL = "@cf/baai/bge-small-en-v1.5"


@pytest.fixture
def emu(emulator_env: Emulator) -> Emulator:
    return emulator_env


CASES = [
    ("", [], "the following arguments are required: command"),
    ("", ["nope"], "invalid choice: 'nope'"),
    ("run", ["run"], "the following arguments are required: model"),
    ("run", ["run", LLAMA], "give the input"),
    ("run", ["run", LLAMA, "prompt=hi", "--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
    ("run", ["run", LLAMA, "--bogus"], "unrecognized arguments: --bogus (see workers-ai run --help)"),
    ("run", ["run", LLAMA, "max_tokens=many"], "max_tokens takes an integer"),
    ("run", ["run", LLAMA, "prompt=hi", "-o", "/no/such/folder/out.json"], "the folder /no/such/folder does not exist"),
    ("embed", ["embed", SMALL], "the following arguments are required: --texts"),
    ("embed", ["embed", SMALL, "--texts", "/no/such/file"], "cannot read /no/such/file"),
    ("batch", ["batch", LLAMA, "--input", "/no/such/file", "-o", "out.jsonl"], "cannot read /no/such/file"),
    ("models", ["models", "--bogus"], "unrecognized arguments: --bogus (see workers-ai models --help)"),
    ("listen", ["listen", "/no/such/audio.wav"], "/no/such/audio.wav"),
    ("speak", ["speak", "  ", "-o", "out.wav"], "the text is empty"),
    ("serve", ["serve", "--port", "many"], "argument --port: invalid int value: 'many'"),
]


@pytest.mark.parametrize(("command", "argv", "says"), CASES, ids=[" ".join(c[1]) or "(none)" for c in CASES])
def test_a_usage_error_is_one_line_exit_2_and_nothing_sent(
    emu: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, argv: list[str], says: str
) -> None:
    argv = [str(tmp_path / a) if a in ("out.jsonl", "out.wav") else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    prog = f"workers-ai {command}".strip()
    assert len(err) == 1 and err[0].startswith(f"{prog}: ") and says in err[0], err
    assert emu.requests == []


def test_a_failed_batch_run_ends_with_its_error_and_no_usage_line_of_nothing_used(
    emu: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    emu.batch_polls = (10**6, 0)  # never finishes: the run times out after queueing
    argv = ["batch", LLAMA, "--input", str(requests), "-o", str(tmp_path / "out.jsonl")]
    assert main([*argv, "--timeout", "0.2", "--poll-interval", "0.01"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("workers-ai: BatchTimeoutError")
    assert not any(line.startswith("workers-ai: usage: ") for line in err), err  # no "usage: 0 calls" first
