"""A bulk batch run killed with SIGKILL, then run again with the same journal: counted at the emulator.

- Killed while polling (every batch queued): the re-run sends nothing, and every request gets its result.
- Killed while a submission was in flight (the emulator had taken the batch, the reply had not come):
  that one batch is sent again, and nothing else.

The run is a child process (sync, async or the CLI), with an address-space limit and a deadline; the
emulator serves it from this process and counts every batch item it receives.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
N = 50
SIZE = 10  # requests per batch: 5 batches

CHILD = f"""
import asyncio, json, sys
from workers_ai import AsyncWorkersAI, WorkersAI
mode, journal, out = sys.argv[1:4]
reqs = [{{"prompt": f"question {{i}}"}} for i in range({N})]
opts = dict(journal=journal, batch_size={SIZE}, poll_interval=0.05, timeout=120)
if mode == "sync":
    items = WorkersAI().model("{LLAMA}").batch_many(reqs, **opts)
else:
    async def main():
        async with AsyncWorkersAI() as ai:
            return await ai.model("{LLAMA}").batch_many(reqs, **opts)
    items = asyncio.run(main())
with open(out, "w") as fh:
    json.dump([[i.id, i.external_reference, i.output.response] for i in items], fh)
"""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(models=[LLAMA], batch_polls=(10**6, 0)) as e:
        yield e


def _start(emu: Emulator, mode: str, tmp: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **emu.env()}
    if mode == "cli":
        requests = tmp / "requests.jsonl"
        if not requests.exists():
            requests.write_text("".join(json.dumps({"prompt": f"question {i}"}) + "\n" for i in range(N)))
        argv = [
            sys.executable, "-m", "workers_ai._cli", "batch", LLAMA, "--input", str(requests), "-o",
            str(tmp / "out.jsonl"), "--journal", str(tmp / "journal"), "--batch-size", str(SIZE),
            "--poll-interval", "0.05", "--timeout", "120",
        ]  # fmt: skip
    else:
        argv = [sys.executable, "-c", CHILD, mode, str(tmp / "journal"), str(tmp / "out.json")]
    return subprocess.Popen(argv, env=env, preexec_fn=_limits, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(what: Callable[[], bool], proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not what():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.communicate()[1].decode()[-2000:]}")
        if time.monotonic() > end:
            proc.kill()
            proc.communicate()
            raise AssertionError("the run did not get there in time")
        time.sleep(0.02)


def _records(tmp: Path) -> list[dict[str, object]]:
    path = tmp / "journal"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes its pipes
    assert proc.returncode == -signal.SIGKILL


def _finish(emu: Emulator, mode: str, tmp: Path) -> None:
    emu.batch_polls = (0, 0)
    proc = _start(emu, mode, tmp)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]


def _results(mode: str, tmp: Path) -> list[tuple[int, str, str]]:
    if mode == "cli":
        lines = [json.loads(x) for x in (tmp / "out.jsonl").read_text().splitlines()]
        return [(x["id"], x["external_reference"], x["result"]["response"]) for x in lines]
    return [tuple(x) for x in json.loads((tmp / "out.json").read_text())]  # type: ignore[misc]


def _check_all_results(mode: str, tmp: Path) -> None:
    results = _results(mode, tmp)
    assert [r[0] for r in results] == list(range(N))
    assert [r[1] for r in results] == [str(i) for i in range(N)]
    assert all(f"question {i}" in r[2] for i, r in enumerate(results))


@pytest.mark.parametrize("mode", ["sync", "async", "cli"])
def test_killed_while_polling_the_rerun_sends_nothing_and_loses_nothing(
    emu: Emulator, tmp_path: Path, mode: str
) -> None:
    proc = _start(emu, mode, tmp_path)
    _wait_for(lambda: sum(r["t"] == "submitted" for r in _records(tmp_path)) == N // SIZE, proc)
    time.sleep(0.2)  # a few polls
    _kill(proc)
    assert len(emu.batch_items_received) == N
    _finish(emu, mode, tmp_path)
    received = emu.batch_items_received
    assert sorted(received, key=int) == [str(i) for i in range(N)]
    assert set(received.values()) == {1}  # nothing sent twice
    _check_all_results(mode, tmp_path)


@pytest.mark.parametrize("mode", ["sync", "async", "cli"])
def test_killed_mid_submission_only_the_in_flight_batch_is_sent_again(emu: Emulator, tmp_path: Path, mode: str) -> None:
    # The third batch (requests 20..29) is taken by the emulator, whose reply then waits 60 s.
    emu.inject("slow", delay=60, match=lambda r: b'"external_reference":"20"' in r.body)
    proc = _start(emu, mode, tmp_path)
    _wait_for(lambda: "20" in emu.batch_items_received, proc)
    time.sleep(0.1)
    records = _records(tmp_path)
    assert [r["b"] for r in records if r["t"] == "intent"] == [0, 1, 2]
    assert [r["b"] for r in records if r["t"] == "submitted"] == [0, 1]  # the journal shows 2 in flight
    _kill(proc)
    _finish(emu, mode, tmp_path)
    received = emu.batch_items_received
    assert sorted(received, key=int) == [str(i) for i in range(N)]
    twice = sorted((k for k, v in received.items() if v == 2), key=int)
    assert twice == [str(i) for i in range(20, 30)]  # at most the batch in flight, once more
    assert max(received.values()) == 2
    _check_all_results(mode, tmp_path)


def test_cli_rerun_after_completion_sends_nothing_and_leaves_the_output(emu: Emulator, tmp_path: Path) -> None:
    emu.batch_polls = (0, 0)
    _finish(emu, "cli", tmp_path)
    out = tmp_path / "out.jsonl"
    before = (out.read_bytes(), out.stat().st_mtime_ns)
    count = len(emu.requests)
    _finish(emu, "cli", tmp_path)
    assert len(emu.requests) == count  # not even a poll
    assert (out.read_bytes(), out.stat().st_mtime_ns) == before
