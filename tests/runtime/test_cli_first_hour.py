"""The command line in a newcomer's first hour: a misspelt input key is one line and exit 2 with "did you
mean" (nothing sent), an error is not preceded by ``usage: 0 calls``, the usage line never says the cost is
unknown for want of token counts it has just printed, errors name the real cause (account id, token source),
and ``--help`` documents every option and names the ``CLOUDFLARE_*`` variables. The command runs in this
process (``main``) against an emulator, or a server answering as the real API does."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest
from workers_ai._cli.main import _parser, main
from workers_ai.testing import Emulator
from workers_ai.testing.__main__ import build_parser

from tests._server import Reply, ScriptedServer
from tests.conftest import ACCOUNT

LLAMA = "@cf/meta/llama-3-8b-instruct"  # no published price; replies report token counts
PRICED = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


@pytest.fixture
def emu(emulator_env: Emulator) -> Emulator:
    return emulator_env


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    return code, capsys.readouterr().err.splitlines()


def test_a_misspelt_key_is_one_line_exit_2_with_did_you_mean_and_nothing_sent(
    emu: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(capsys, "run", LLAMA, "promt=hi")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"workers-ai run: {LLAMA}: invalid input at $.prompt: ")
    assert err[0].endswith("did you mean 'prompt' instead of 'promt'?")
    code, err = _run(capsys, "run", LLAMA, "--strict", "prompt=hi", "max_token=5")
    assert code == 2 and len(err) == 1 and "$.max_token" in err[0] and "did you mean 'max_tokens'" in err[0], err
    code, err = _run(capsys, "run", LLAMA, "--json", '{"messages": [{"role": "user", "contnet": "hi"}]}')
    assert code == 2 and len(err) == 1 and "did you mean 'content' instead of 'contnet'" in err[0], err
    assert emu.requests == []


def test_an_error_is_not_preceded_by_a_usage_line_of_no_calls(emu: Emulator) -> None:
    # In a process of its own: the warning goes to stderr as the user sees it (pytest would record it).
    command = [sys.executable, "-c", "import sys; from workers_ai._cli.main import main; sys.exit(main())"]
    done = subprocess.run(
        [*command, "run", "@cf/meta/llama-3-8b-instruk", "prompt=hi"], capture_output=True, text=True, timeout=120
    )
    err = done.stderr.splitlines()
    assert done.returncode == 1
    assert not any("usage:" in line for line in err), err
    assert err[-1].startswith("workers-ai: ModelNotFoundError: @cf/meta/llama-3-8b-instruk: 5007")
    assert f"(did you mean {LLAMA!r}?) | HTTP 400 | cf-ray " in err[-1] and len(emu.requests) == 1
    assert err[:-1] == [
        f"workers-ai: warning: @cf/meta/llama-3-8b-instruk is not a model this package knows: did you mean '{LLAMA}'?"
        " (used as given; a model newer than this package is not in its registry)"
    ]


def test_the_usage_line_gives_the_real_reason_for_a_missing_cost(
    emu: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(capsys, "run", LLAMA, "prompt=hi")
    assert code == 0
    line = err[-1]
    assert line.startswith("workers-ai: usage: 1 call, ") and " tokens (" in line, line
    assert line.endswith(f"out), no published price for {LLAMA}"), line
    assert "cost unknown" not in line
    code, err = _run(capsys, "run", "@cf/baai/bge-m3", "text=hi")  # priced per token; the reply reports none
    assert code == 0 and err[-1].endswith(
        "no token counts reported, cost of @cf/baai/bge-m3 unknown without token counts"
    )
    code, err = _run(capsys, "run", PRICED, "prompt=hi")
    assert code == 0 and err[-1].rpartition(", ")[2].startswith("$"), err


def test_a_wrong_account_id_from_the_environment_is_named(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = "f" * 32
    message = (
        f"Could not route to /client/v4/accounts/{wrong}/ai/run/{LLAMA}, perhaps your object identifier is invalid?"
    )
    body = b'{"result":null,"success":false,"errors":[{"code":7003,"message":"%s"}],"messages":[]}' % message.encode()
    server.script(Reply(404, body))
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", wrong)
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", "tok-SECRET-1234567890")
    code, err = _run(capsys, "run", LLAMA, "prompt=hi", "--base-url", server.base_url)
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("workers-ai: RouteNotFoundError: ")
    assert f"account id {wrong} (from CLOUDFLARE_ACCOUNT_ID)" in err[0] and "SECRET" not in err[0]
    server.script(
        Reply(401, b'{"result":null,"success":false,"errors":[{"code":10000,"message":"Authentication error"}]}')
    )
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", ACCOUNT)
    code, err = _run(capsys, "run", LLAMA, "prompt=hi", "--base-url", server.base_url)
    assert code == 1 and "the API token from CLOUDFLARE_API_TOKEN was refused" in err[-1] and "SECRET" not in err[-1]


def _parsers(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:  # argparse keeps its subcommands here only
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_option_has_help_and_the_help_names_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    found = dict(_parsers(_parser(), "workers-ai"))
    found["workers-ai serve"] = build_parser("workers-ai serve")  # serve's own options: the emulator's
    assert {"workers-ai run", "workers-ai embed", "workers-ai batch", "workers-ai models", "workers-ai listen",
            "workers-ai speak"} <= set(found)  # fmt: skip
    missing = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, parser in found.items()
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not (a.help or "").strip()
    ]
    assert missing == []
    for name in ("workers-ai", "workers-ai run", "workers-ai embed", "workers-ai batch", "workers-ai listen"):
        text = found[name].format_help()
        for variable in ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_BASE_URL"):
            assert variable in text, (name, variable)
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and "CLOUDFLARE_API_TOKEN" in capsys.readouterr().out
