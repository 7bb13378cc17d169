"""``workers-ai`` must not lose or hide data (issue 28): a failed write exits non-zero and leaves no
file, ``embed`` keeps one vector per input line, and Ctrl-C during a stream is one line and status 130.
Each case is a subprocess against the emulator."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from workers_ai.testing import Emulator

from tests.runtime.test_surface_cli import CLI, cli, env_for

BGE = "@cf/baai/bge-m3"
SMALL = "@cf/baai/bge-small-en-v1.5"
LLAMA = "@cf/meta/llama-3-8b-instruct"


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0)) as e:
        yield e


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".workers-ai-"))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_device_behind_a_link_is_not_replaced_and_the_command_fails(emu: Emulator, tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to("/dev/full")
    done = cli(emu, "run", BGE, "text=hello", "-o", str(link))
    assert done.returncode != 0, done.stderr
    assert "the output was not written" in done.stderr.decode()
    assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode)  # still the device, not a file
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("stream", [False, True])
def test_dev_full_exits_non_zero_and_says_so(emu: Emulator, stream: bool) -> None:
    args = ["run", LLAMA, "prompt=hi", "--stream"] if stream else ["run", BGE, "text=hello"]
    done = cli(emu, *args, "-o", "/dev/full")
    assert done.returncode == 1, done.stderr
    assert "/dev/full" in done.stderr.decode() and "the output was not written" in done.stderr.decode()
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    with open("/dev/full", "wb") as full:
        redirected = subprocess.run(
            [*CLI, *args], stdout=full, stderr=subprocess.PIPE, env=env_for(emu), timeout=120, check=False
        )
    assert redirected.returncode == 1 and b"the output was not written" in redirected.stderr
    assert b"Traceback" not in redirected.stderr


def test_a_file_write_that_fails_leaves_no_partial_file(emu: Emulator, tmp_path: Path) -> None:
    # A file size limit stands in for a full disk: the write fails after the (billed) call.
    target = tmp_path / "big.json"
    code = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
        " resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000));"
        " from workers_ai._cli.main import main; sys.exit(main())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "run", BGE, "text=hello", "-o", str(target)],
        capture_output=True,
        env=env_for(emu),
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "the output was not written" in done.stderr.decode()
    assert not target.exists() and _leftovers(tmp_path) == []


def test_embed_keeps_one_output_per_line_and_names_a_blank_line(emu: Emulator, tmp_path: Path) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("alpha\nbeta\n\ngamma\n")
    before = len(emu.requests)
    done = cli(emu, "embed", SMALL, "--texts", str(texts), "--poll-interval", "0")
    assert done.returncode == 2 and done.stdout == b""
    assert "line 3 is blank" in done.stderr.decode()
    assert len(emu.requests) == before  # refused before anything is sent (or billed)
    texts.write_text("alpha\nbeta\n  spaced  \ngamma\n")
    done = cli(emu, "embed", SMALL, "--texts", str(texts), "--poll-interval", "0")
    assert done.returncode == 0, done.stderr
    assert len([msgspec.json.decode(line) for line in done.stdout.splitlines()]) == 4


def test_ctrl_c_during_a_stream_is_one_line_and_status_130(tmp_path: Path) -> None:
    with Emulator(stream_interval=0.2) as slow:
        proc = subprocess.Popen(
            [*CLI, "run", LLAMA, "prompt=tell me a long story", "max_tokens=200", "--stream"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env_for(slow),
        )
        assert proc.stdout is not None
        first = proc.stdout.read(1)  # the stream has started
        assert first
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("workers-ai: interrupted"), err.decode()
    assert "usage:" in lines[0]
