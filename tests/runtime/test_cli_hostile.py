"""``workers-ai`` with closed pipes, bad input and output files: each case a real process (a shell pipe
where a pipe is the point) against the emulator or a raw server."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from workers_ai.testing import Emulator

from tests._server import RawRequest, Server, chunk, head

LLAMA = "@cf/meta/llama-3-8b-instruct"
CLI = [sys.executable, "-c", "import sys; from workers_ai._cli.main import main; sys.exit(main())"]
SHELL_CLI = " ".join(shlex.quote(a) for a in CLI)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def env_for(emu: Emulator, base_url: str | None = None) -> dict[str, str]:
    return dict(
        os.environ,
        CLOUDFLARE_ACCOUNT_ID=emu.account_id,
        CLOUDFLARE_API_TOKEN=emu.api_token,
        CLOUDFLARE_BASE_URL=base_url or emu.base_url,
    )


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], capture_output=True, env=env, timeout=120, check=False)


def piped(env: dict[str, str], args: str, reader: str = "head -1") -> subprocess.CompletedProcess[bytes]:
    """``workers-ai ARGS | READER`` through a shell; ``PIPESTATUS`` of the CLI printed on stderr's last line."""
    script = f'{SHELL_CLI} {args} | {reader}; echo "status=${{PIPESTATUS[0]}}" >&2'
    return subprocess.run(["bash", "-c", script], capture_output=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize(
    "args",
    [
        "models",
        "models --wide",
        f'run {LLAMA} --stream --json \'{{"prompt": "tell me a long story", "max_tokens": 2000}}\'',
        'run @cf/baai/bge-m3 --json \'{"text": ["a"]}\'',
    ],
)
def test_a_closed_pipe_ends_quietly(emu: Emulator, args: str) -> None:
    done = piped(env_for(emu), args)
    err = done.stderr.decode()
    assert done.stdout and b"\n" in done.stdout
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    assert err.splitlines()[-1] in ("status=0", "status=141"), err


def test_the_models_table_fits_100_columns_and_wide_shows_all(emu: Emulator) -> None:
    narrow = cli(env_for(emu), "models").stdout.decode().splitlines()
    wide = cli(env_for(emu), "models", "--wide").stdout.decode().splitlines()
    assert len(narrow) == len(wide) > 50
    assert max(map(len, narrow)) <= 100 < max(map(len, wide))
    assert "METHODS" in wide[0] and "METHODS" not in narrow[0]


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b'{"prompt": "caf\xff"}', "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    ],
)
def test_unreadable_json_is_a_clear_error_and_sends_nothing(
    emu: Emulator, tmp_path: Path, payload: bytes, says: str
) -> None:
    before = len(emu.requests)
    source = tmp_path / "in.json"
    source.write_bytes(payload)
    for how in (["--json", f"@{source}"], ["--json", "-"]):
        done = subprocess.run(
            [*CLI, "run", LLAMA, *how], input=payload, capture_output=True, env=env_for(emu), timeout=60, check=False
        )
        err = done.stderr.decode()
        assert done.returncode == 2 and says in err and "Traceback" not in err, err
    if b"\xff" in payload:  # bytes that are not UTF-8 given on the command line itself
        done = subprocess.run([*CLI, "run", LLAMA, "--json", payload], capture_output=True, env=env_for(emu))
        assert done.returncode == 2 and b"not valid JSON" in done.stderr, done.stderr
    assert len(emu.requests) == before


def test_an_output_path_that_cannot_be_written_is_refused_before_the_call(emu: Emulator, tmp_path: Path) -> None:
    before = len(emu.requests)
    for target, says in [
        (tmp_path / "missing" / "out.json", "does not exist"),
        (tmp_path, "is a folder"),
    ]:
        done = cli(env_for(emu), "run", LLAMA, "prompt=hi", "-o", str(target))
        err = done.stderr.decode()
        assert done.returncode == 2 and says in err and "Traceback" not in err, err
    assert len(emu.requests) == before  # nothing sent, nothing billed
    assert list(tmp_path.iterdir()) == []


def test_a_broken_stream_leaves_no_file(emu: Emulator, tmp_path: Path) -> None:
    def broken(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(200, "text/event-stream", Transfer_Encoding="chunked"))
        conn.sendall(chunk(b'data: {"response": "half a "}\n\n') + chunk(b'data: {"response": "sto'))
        return False  # closed mid-event, without the terminating chunk

    target = tmp_path / "story.txt"
    target.write_text("the previous story")
    with Server(broken) as server:
        done = cli(env_for(emu, server.base_url), "run", LLAMA, "prompt=hi", "--stream", "-o", str(target))
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err, err
    assert target.read_text() == "the previous story"  # untouched: the partial reply went nowhere
    assert [p.name for p in tmp_path.iterdir()] == ["story.txt"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("model", "payload", "suffix", "magic"),
    [
        ("@cf/black-forest-labs/flux-1-schnell", '{"prompt": "a cat"}', "jpg", (b"\x89PNG", b"\xff\xd8")),
        ("@cf/myshell-ai/melotts", '{"prompt": "hello"}', "mp3", (b"ID3", b"\xff\xfb", b"\xff\xf3", b"RIFF")),
    ],
)
def test_base64_media_is_decoded_into_the_output_file(
    emu: Emulator, tmp_path: Path, model: str, payload: str, suffix: str, magic: tuple[bytes, ...]
) -> None:
    target = tmp_path / f"out.{suffix}"
    done = cli(env_for(emu), "run", model, "--json", payload, "-o", str(target))
    assert done.returncode == 0, done.stderr
    data = target.read_bytes()
    assert data.startswith(magic) and not data.startswith(b"{"), data[:40]
    as_json = tmp_path / "out.json"  # a .json file keeps the reply as it came
    assert cli(env_for(emu), "run", model, "--json", payload, "-o", str(as_json)).returncode == 0
    assert isinstance(msgspec.json.decode(as_json.read_bytes()), dict)


def test_embed_prints_one_json_array_per_text_and_a_cost_that_is_not_zero(emu: Emulator, tmp_path: Path) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("first text\nsecond text\nthird\n")
    done = cli(env_for(emu), "embed", "@cf/baai/bge-small-en-v1.5", "--texts", str(texts), "--poll-interval", "0")
    assert done.returncode == 0, done.stderr
    rows = [msgspec.json.decode(line) for line in done.stdout.splitlines()]
    assert len(rows) == 3 and all(isinstance(r, list) and len(r) == 384 for r in rows)
    usage = done.stderr.decode().splitlines()[-1]
    assert "$0.000000" not in usage and "<$0.000001" in usage, usage


def test_unknown_json_keys_warn_on_one_line_or_fail_with_strict(emu: Emulator) -> None:
    before = len(emu.requests)
    warned = cli(env_for(emu), "run", LLAMA, "--json", '{"prompt": "hi", "max_token": 5}')
    err = warned.stderr.decode()
    assert warned.returncode == 0 and "workers-ai: warning:" in err and "$.max_token" in err, err
    assert "Traceback" not in err and "warnings.warn" not in err
    refused = cli(env_for(emu), "run", LLAMA, "--strict", "--json", '{"prompt": "hi", "max_token": 5}')
    err = refused.stderr.decode()
    assert refused.returncode == 2 and err.startswith("workers-ai run: ") and "$.max_token" in err, err
    assert len(err.splitlines()) == 1 and "did you mean 'max_tokens'" in err
    assert len(emu.requests) == before + 1  # the strict run sent nothing
