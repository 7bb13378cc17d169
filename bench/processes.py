"""The processes a measurement starts: helpers and servers in the background, measured children, and the
environment they all get (no bytecode switch-off, no path tweaks, no credentials)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def child_env() -> dict[str, str]:
    """The environment for measured processes: no bytecode switch-off (users have .pyc files), no
    path tweaks, no Cloudflare credentials."""
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME"):
        env.pop(name, None)
    for name in list(env):
        if name.startswith(("CLOUDFLARE_", "OPENAI_")):
            env.pop(name)
    return env


def run(cmd: list[str], *, timeout: float = 600, cwd: Path | None = None, check: bool = True) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=child_env(), check=False)
    if check and proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).strip().splitlines() if not line.startswith("WARNING:")]
        tail = " / ".join(line.strip() for line in lines[-4:])
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {proc.returncode}: {tail}")
    return proc.stdout


def run_json(cmd: list[str], **kw: Any) -> Any:
    """Run ``cmd`` and decode the last line it printed (the helpers print one JSON object)."""
    out = run(cmd, **kw)
    return json.loads(out.strip().splitlines()[-1])


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@contextmanager
def background(cmd: list[str], ready_prefix: str, timeout: float = 30.0) -> Iterator[str]:
    """Start a helper process and yield the rest of its first stdout line that starts with
    ``ready_prefix``; it is stopped (stdin closed, then terminated) when the block ends."""
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith(ready_prefix):
                break
        if not line.startswith(ready_prefix):
            err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
            raise RuntimeError(f"{cmd[1]} did not start: {err.strip()[-500:]}")
        yield line[len(ready_prefix) :].strip()
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Child:
    """What one measured child process did: wall and CPU seconds, peak RSS (KiB), exit code, output."""

    def __init__(self, wall: float, cpu: float, peak_kib: int, code: int, output: str) -> None:
        self.wall = wall
        self.cpu = cpu
        self.peak_kib = peak_kib
        self.code = code
        self.output = output


def measure_child(cmd: list[str], cwd: Path) -> Child:
    """Run ``cmd`` and read the resource use of exactly that child with ``wait4``."""
    with tempfile.TemporaryFile(mode="w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=child_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return Child(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode, out.read())
