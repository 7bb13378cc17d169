"""What one call asks of its socket, counted rather than timed (the 64-thread row of ``make bench`` is
bound by it: each system call on a socket drops the GIL).

On a kept-alive connection, plain or TLS, a call sets no socket timeout (urllib3 would set two, each an
``ioctl``) and writes its request once; the call's deadline still cuts a reply that is too slow, and the
next call goes on over a new connection. The client runs in a child process whose ``socket`` methods
count their calls before ``workers_ai`` is imported. Where ``strace`` runs, the system calls of plain
HTTP calls are counted too: four per call (urllib3's check that the kept connection is still open, the
request's one write, the wait for the reply and its read), where urllib3 with a timeout makes nine.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from workers_ai import WorkersAI
from workers_ai.errors import APIConnectionError

from tests._server import RawRequest, ScriptedServer, Server, envelope, ok, reply
from tests.runtime._client import EMBED
from tests.runtime._raw import ACCOUNT, ROOT, TOKEN, self_signed

CALLS = 20

_CHILD = """
import json, os, socket, ssl

counts = {"settimeout": 0, "writes": 0}


def counting(owner, name, what):
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        counts[what] += 1
        return real(*args, **kwargs)

    setattr(owner, name, counted)


counting(socket.socket, "settimeout", "settimeout")
for owner, name in ((socket.socket, "sendall"), (ssl.SSLSocket, "sendall"), (os, "write")):
    counting(owner, name, "writes")

from workers_ai import WorkersAI, errors

if NO_FD_WRITE:  # as on Windows, where a socket is no descriptor for os.write: one sendall instead
    import workers_ai._sync.connections

    workers_ai._sync.connections._FD_WRITE_TYPE = None
ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, timeout=1, max_retries=0, rate_limit=None)
ai.run("@cf/acme/echo", {"prompt": "warm"})  # connects (and sets the connect timeout)
before = dict(counts)
answers = [ai.run("@cf/acme/echo", {"prompt": str(i)})["response"] for i in range(CALLS)]
steady = {key: counts[key] - before[key] for key in counts}
try:
    ai.run("@cf/acme/echo", {"prompt": "slow"})
    slow = "answered"
except errors.APITimeoutError:
    slow = "APITimeoutError"
after = ai.run("@cf/acme/echo", {"prompt": "after"})["response"]
print("RESULT " + json.dumps({"answers": answers, "steady": steady, "slow": slow, "after": after}))
"""


def _echo(conn: socket.socket, req: RawRequest) -> bool:
    prompt = json.loads(req.body)["prompt"]
    if prompt == "slow":
        time.sleep(2.0)  # past the call's 1 s deadline
    return reply(conn, envelope({"response": prompt}))


@pytest.mark.parametrize(
    ("tls", "fd_write"), [(False, True), (False, False), (True, False)], ids=["plain", "plain-sendall", "tls"]
)
def test_a_call_on_a_kept_alive_connection_sets_no_timeout_and_writes_once(
    tls: bool, fd_write: bool, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}
    context = None
    if tls:
        cert, context = self_signed(tmp_path)
        env["SSL_CERT_FILE"] = str(cert)
    with Server(_echo, tls=context) as server:
        values = f"ACCOUNT = {ACCOUNT!r}\nTOKEN = {TOKEN!r}\nBASE = {server.base_url!r}\nCALLS = {CALLS}\n"
        values += f"NO_FD_WRITE = {not fd_write}\n"
        proc = subprocess.run(
            [sys.executable, "-c", values + textwrap.dedent(_CHILD)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=ROOT,
        )
        connections = server.connections
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["answers"] == [str(i) for i in range(CALLS)]
    # urllib3 alone sets the timeout twice a call; ours is set when the connection's first reply is read.
    assert result["steady"] == {"settimeout": 0, "writes": CALLS}, result
    assert result["slow"] == "APITimeoutError" and result["after"] == "after", result
    assert connections == 2  # the one the slow reply was cut on, and the one after it


_TRACED = """
import os
from workers_ai import WorkersAI

ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, rate_limit=None)
ai.run("@cf/acme/echo", {"prompt": "warm"})
os.write(2, b"CALLS-START\\n")
for i in range(CALLS):
    ai.run("@cf/acme/echo", {"prompt": str(i)})
os.write(2, b"CALLS-END\\n")
"""
_WATCHED = "poll,ppoll,select,pselect6,ioctl,fcntl,sendto,sendmsg,write,writev,recvfrom,recvmsg,read,readv"


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_plain_call_is_four_socket_system_calls(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    with Server(_echo) as server:
        values = f"ACCOUNT = {ACCOUNT!r}\nTOKEN = {TOKEN!r}\nBASE = {server.base_url!r}\nCALLS = {CALLS}\n"
        proc = subprocess.run(
            ["strace", "-f", "-o", str(trace), "-e", f"trace={_WATCHED}", sys.executable, "-c", values + _TRACED],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    if proc.returncode != 0 and "ptrace" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = trace.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "CALLS-START" in line)
    end = next(i for i, line in enumerate(lines) if "CALLS-END" in line)
    calls = collections.Counter(
        match.group(1)
        for line in lines[start + 1 : end]
        if (match := re.match(r"\d+\s+(\w+)\((?:\[\{fd=)?(\d+)", line)) and match.group(2) not in ("1", "2")
    )
    assert calls == {"poll": 2 * CALLS, "write": CALLS, "recvfrom": CALLS}, calls


def test_close_drops_the_connections_and_many_hosts_still_work(server: ScriptedServer) -> None:
    # The transport remembers each URL's pool: close() forgets them with the pool manager (the next call
    # connects afresh), and a pool the manager let go for an eleventh host still serves its URLs.
    server.script(ok(EMBED))
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, rate_limit=None)
    bge = ai.model("@cf/baai/bge-m3")
    assert bge.embed(text="a").data == [[0.1, 0.2]]
    ai.close()
    assert bge.embed(text="b").data == [[0.1, 0.2]]
    assert server.connections == 2
    for i in range(12):  # 127.0.0.2 ... 127.0.0.13 are other hosts to urllib3 (and refuse: nothing listens)
        other = ai.with_options(base_url=server.base_url.replace("127.0.0.1", f"127.0.0.{i + 2}"), max_retries=0)
        with pytest.raises(APIConnectionError):
            other.model("@cf/baai/bge-m3").embed(text="x")
    assert bge.embed(text="c").data == [[0.1, 0.2]]
    assert len(server.requests) == 3
