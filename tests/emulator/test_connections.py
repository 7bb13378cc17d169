"""Connections: hundreds of idle keep-alive clients cost no threads and little memory, many concurrent
ones are all served, slow replies do not hold up others, and close() ends every thread."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from workers_ai.testing import Emulator

from tests.emulator._raw import BGE, connect, head, post, read_reply

IDLE = 500
CONCURRENT = 200


def _status_of(pid: int) -> tuple[int, int]:
    """``(threads, VmRSS in kB)`` of process ``pid``, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0])


# ``python -m workers_ai.testing`` with its address space capped at 2 GiB, so a regression (a thread and
# its stack per connection) fails the test instead of exhausting the machine.
_SERVE = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3)); "
    "sys.argv = ['workers_ai.testing', '--port', '0', '--quiet']; "
    "runpy.run_module('workers_ai.testing', run_name='__main__', alter_sys=True)"
)


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``python -m workers_ai.testing`` in its own process (2 GiB address space): (process, URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    url = ""
    for line in proc.stdout:
        if line.startswith("Workers AI emulator listening on "):
            url = line.split()[-1]
        if line.startswith("Press Ctrl-C"):
            break
    try:
        assert url, proc.stderr.read()
        yield proc, url
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


def test_idle_keep_alive_connections_cost_no_threads_and_little_memory(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = served
    port = int(url.rsplit(":", 1)[1])
    account, token = "0123456789abcdef0123456789abcdef", "emulator-token"  # the command line's defaults
    run = f"{url}/client/v4/accounts/{account}/ai/run/{BGE}"
    auth = {"Authorization": f"Bearer {token}"}
    http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=10, read=60), maxsize=16)

    def calls(n: int) -> list[int]:
        return [
            http.request("POST", run, body=json.dumps({"text": f"call {i}"}).encode(), headers=auth).status
            for i in range(n)
        ]

    def concurrent_calls(n: int) -> list[int]:  # wakes every worker thread the server has
        out: list[int] = []
        lock = threading.Lock()

        def one(i: int) -> None:
            status = http.request("POST", run, body=json.dumps({"text": f"c {i}"}).encode(), headers=auth).status
            with lock:
                out.append(status)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        return out

    assert calls(20) == [200] * 20 and concurrent_calls(16) == [200] * 16
    threads_before, rss_before = _status_of(proc.pid)
    socks: list[socket.socket] = []
    try:
        for i in range(IDLE):
            sock = connect(port)
            socks.append(sock)
            if i % 2:  # half of them stop in the middle of a request head
                sock.sendall(b"POST /client/v4/accounts/" + account.encode() + b"/ai/run/x HTTP/1.1\r\nHost: a\r\n")
        # Requests on every 50th whole-idle connection (the last one too): the server has accepted them all.
        probe = head(None, method="GET", path=f"/client/v4/accounts/{account}/ai/models/search?per_page=1", token=token)
        for sock in [*socks[0::50], socks[-2]]:
            sock.sendall(probe)
            reply = read_reply(sock)
            assert reply.status == 200 and reply.envelope()["result_info"]["count"] == 1
        assert calls(20) == [200] * 20 and concurrent_calls(16) == [200] * 16
        threads_after, rss_after = _status_of(proc.pid)
        print(
            f"\nemulator with {IDLE} idle connections: threads {threads_before} -> {threads_after}, "
            f"VmRSS {rss_before / 1024:.1f} MB -> {rss_after / 1024:.1f} MB"
        )
        assert threads_after < 20
        assert rss_after - rss_before < 50 * 1024
        # The idle connections are still open and usable.
        for sock in socks[0::100]:
            sock.sendall(probe)
            assert read_reply(sock).status == 200
    finally:
        for sock in socks:
            sock.close()
        http.clear()


def test_concurrent_keep_alive_connections_are_all_served(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    socks = [connect(emu.port) for _ in range(CONCURRENT)]
    try:
        for round_ in range(2):  # the same connections twice: kept alive
            for i, sock in enumerate(socks):  # every request is in flight before any reply is read
                sock.sendall(post(emu, json.dumps({"text": f"client {i} round {round_}"}).encode()))
            replies = [read_reply(sock) for sock in socks]
            assert [r.status for r in replies] == [200] * CONCURRENT
            assert all("connection" not in r.headers for r in replies)
    finally:
        for sock in socks:
            sock.close()
    texts = sorted(r.json()["text"] for r in emu.requests)
    assert texts == sorted(f"client {i} round {r}" for i in range(CONCURRENT) for r in range(2))


def test_a_slow_reply_does_not_hold_up_other_connections(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    with connect(emu.port) as slow, connect(emu.port) as fast:
        slow.sendall(post(emu, b'{"text": "slow"}', extra="x-emulator-fault: slow; delay=30\r\n"))
        for _ in range(3000):  # until the slow one has been handled (its reply is now waiting on a timer)
            if emu.requests and emu.requests[0].status is not None:
                break
            threading.Event().wait(0.01)
        fast.sendall(post(emu, b'{"text": "fast"}'))
        assert read_reply(fast).status == 200
        slow.setblocking(False)
        with pytest.raises(BlockingIOError):
            slow.recv(1)  # still waiting for its reply
    assert [r.fault for r in emu.requests] == ["slow", None]


def test_stream_events_are_written_as_they_come(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    emu.stream_interval = 0.02
    http = urllib3.PoolManager(retries=False)
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/@cf/meta/llama-3-8b-instruct"
    body = json.dumps({"prompt": "stream slowly", "stream": True}).encode()
    resp = http.request(
        "POST", url, body=body, headers={"Authorization": f"Bearer {emu.api_token}"}, preload_content=False
    )
    reads = list(resp.read_chunked())
    assert len(reads) > 3 and reads[-1].endswith(b"data: [DONE]\n\n")
    assert all(r.startswith(b"data: ") for r in reads)
    http.clear()


def test_close_is_prompt_and_ends_every_thread() -> None:
    def emulator_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("workers-ai-emulator")]

    assert emulator_threads() == []
    emu = Emulator()
    port = emu.port
    idle = [connect(port) for _ in range(50)]
    pending = connect(port)
    pending.sendall(post(emu, b'{"text": "never answered"}', extra="x-emulator-fault: slow; delay=60\r\n"))
    client = emu.client(max_retries=0)
    for i in range(20):
        assert client.model(BGE).embed(text=f"warm {i}").shape == [1, 1024]
    client.close()
    assert emulator_threads()
    closer = threading.Thread(target=emu.close, daemon=True)
    closer.start()
    closer.join(30)
    try:
        assert not closer.is_alive(), "Emulator.close() hung"
        assert emulator_threads() == []
        pending.settimeout(10)
        assert pending.recv(1) == b""  # dropped, not left hanging
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), 1).close()  # nobody listens any more
    finally:
        for sock in [*idle, pending]:
            sock.close()


def test_closing_from_inside_a_request_does_not_deadlock() -> None:
    emu = Emulator()
    port = emu.port
    emu.inject("capacity", match=lambda r: emu.close() is None)  # the caller's predicate closes the emulator
    with connect(port) as sock:
        sock.sendall(post(emu, b'{"text": "bye"}'))
        sock.settimeout(30)
        assert sock.recv(1) == b""  # the connection is dropped by the close, not answered or left hanging
    for _ in range(3000):
        if not [t for t in threading.enumerate() if t.name.startswith("workers-ai-emulator")]:
            break
        threading.Event().wait(0.01)
    assert [t.name for t in threading.enumerate() if t.name.startswith("workers-ai-emulator")] == []
