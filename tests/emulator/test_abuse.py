"""Abuse: 2,000 connections at once, a 1 GB upload (declared, and streamed chunk by chunk), garbage
framing. The emulator runs as ``python -m workers_ai.testing`` in its own process with its address space
capped at 1 GiB, so buffering a gigabyte, or a thread per connection, kills it and fails the test; after
each abuse the next good request must be answered."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai.testing import DEFAULT_ACCOUNT_ID, DEFAULT_API_TOKEN

from tests.emulator._raw import BGE, connect, head, read_reply

CAP = 1024**3
_SERVE = (
    "import resource, runpy, sys; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP})); "
    "sys.argv = ['workers_ai.testing', '--port', '0', '--quiet']; "
    "runpy.run_module('workers_ai.testing', run_name='__main__', alter_sys=True)"
)
RUN = f"/client/v4/accounts/{DEFAULT_ACCOUNT_ID}/ai/run/{BGE}"


def _head(length: str | None = None, extra: str = "") -> bytes:
    return head(None, path=RUN, token=DEFAULT_API_TOKEN, length=length, extra=extra)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[subprocess.Popen[str], int]]:
    # glibc's per-thread malloc arenas reserve address space; two keep the cap about memory actually used
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")} | {"MALLOC_ARENA_MAX": "2"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    port = 0
    for line in proc.stdout:
        if line.startswith("Workers AI emulator listening on "):
            port = int(line.rsplit(":", 1)[1])
        if line.startswith("Press Ctrl-C"):
            break
    try:
        assert port, proc.stderr.read()
        yield proc, port
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=20)
            proc.stdout.close()
            proc.stderr.close()
    assert proc.returncode == 0


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


def _good_request_is_answered(port: int) -> None:
    body = json.dumps({"text": ["still here"]}).encode()
    with connect(port) as sock:
        sock.sendall(_head(str(len(body))) + body)
        reply = read_reply(sock)
    assert reply.status == 200 and reply.envelope()["result"]["shape"] == [1, 1024]


def test_two_thousand_connections_at_once(server: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = server
    socks: list[socket.socket] = []
    try:
        for i in range(2000):
            sock = connect(port, timeout=30)
            if i % 2:  # half idle, half with a request head left unfinished
                sock.sendall(_head("64")[:-2])
            socks.append(sock)
        _good_request_is_answered(port)
        threads = int(
            next(
                ln for ln in Path(f"/proc/{proc.pid}/status").read_text().splitlines() if ln.startswith("Threads")
            ).split()[1]
        )
        assert threads < 40 and _rss_mb(proc.pid) < 400  # no thread, no buffer per connection
    finally:
        for sock in socks:
            sock.close()
    _good_request_is_answered(port)
    assert proc.poll() is None


def test_a_declared_gigabyte_is_refused_before_it_is_sent(server: tuple[subprocess.Popen[str], int]) -> None:
    _, port = server
    with connect(port) as sock:
        sock.sendall(_head(str(1024**3)))
        reply = read_reply(sock)
        assert reply.status == 413 and reply.error()[0] == 3006
    _good_request_is_answered(port)


def test_a_gigabyte_streamed_in_chunks_is_refused_early(server: tuple[subprocess.Popen[str], int]) -> None:
    """The 413 is on the wire (readable) soon after the 10 MB limit, however much more the client sends."""
    proc, port = server
    chunk = b"%x\r\n" % (1024**2) + b"a" * 1024**2 + b"\r\n"
    sent = 0
    refused_at = None
    with connect(port, timeout=30) as sock:
        sock.sendall(_head(extra="Transfer-Encoding: chunked\r\n"))
        try:
            while sent < 1024**3:
                sock.sendall(chunk)
                sent += 1024**2
                if refused_at is None and select.select([sock], [], [], 0)[0]:
                    refused_at = sent
                    break
        except (BrokenPipeError, ConnectionResetError):
            refused_at = sent
        reply = read_reply(sock)
    assert reply.status == 413 and reply.error()[0] == 3006
    assert refused_at is not None and refused_at <= 64 * 1024**2, f"413 only after {sent / 1024**2:.0f} MiB"
    assert proc.poll() is None and _rss_mb(proc.pid) < 400
    _good_request_is_answered(port)


GARBAGE = [
    b"\x00\xff\x13\x37" * 4096,
    b"GET / HTTP/9.9\r\n\r\n",
    b"POST " + b"/" * 100_000 + b" HTTP/1.1\r\n\r\n",
    b"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    b"POST /x HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    b"POST /x HTTP/1.1\r\n" + b"X-Long: " + b"a" * 200_000 + b"\r\n\r\n",
    b"\r\n\r\n\r\n" * 1000,
    bytes(random.Random(7).getrandbits(8) for _ in range(50_000)),
]


@pytest.mark.parametrize("data", GARBAGE, ids=[f"garbage{i}" for i in range(len(GARBAGE))])
def test_garbage_framing_is_refused_and_the_next_request_served(
    server: tuple[subprocess.Popen[str], int], data: bytes
) -> None:
    proc, port = server
    with connect(port, timeout=30) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        deadline = time.monotonic() + 20
        received = b""
        try:
            while time.monotonic() < deadline:
                more = sock.recv(65536)
                if not more:
                    break
                received += more
        except ConnectionResetError:
            pass
    if received:
        status = int(received.split(b" ", 2)[1])
        assert 400 <= status < 500 or status == 505, received[:200]  # 505: "HTTP/9.9"
    assert proc.poll() is None
    _good_request_is_answered(port)
