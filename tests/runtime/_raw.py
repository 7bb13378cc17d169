"""Hostile HTTP servers on raw sockets, and a way to run a client against them in a fenced process.

``RawServer(handler)`` accepts connections on 127.0.0.1 and, per request, records it and calls
``handler(conn, request)``, which writes whatever it likes (dripping bytes, endless bodies, broken
framing). A handler returning True keeps the connection open for the next request.

``run_client(code)`` runs client code in a fresh ``python`` process whose address space is capped
(``RLIMIT_AS``) and which is killed after a deadline, so a regression (an unbounded read, a call that
never ends) fails the test instead of taking the machine down. The code sets ``result``; the child
prints it as JSON together with its peak RSS.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1 << 30  # 1 GiB of address space for the client process
ACCOUNT = "acc1"
TOKEN = "tok-secret"


@dataclass
class RawRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[[socket.socket, RawRequest], bool | None]


class RawServer:
    """A threaded raw-socket HTTP/1.1 server; each connection runs ``handler`` for every request."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.requests: list[RawRequest] = []
        self.stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(256)
        self.port: int = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/client/v4"

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stop.set()
        self._sock.close()
        with self._lock:
            for conn in self._conns:
                try:
                    conn.close()
                except OSError:
                    pass

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                return
        reader = conn.makefile("rb")
        try:
            while not self.stop.is_set():
                line = reader.readline(65537)
                if not line:
                    return
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    h = reader.readline(65537)
                    if h in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = h.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = reader.read(length) if length else b""
                request = RawRequest(method, target, headers, body)
                with self._lock:
                    self.requests.append(request)
                if not self.handler(conn, request):
                    return
        except (OSError, ValueError):
            return
        finally:
            try:
                reader.close()
                conn.close()
            except OSError:
                pass


def head(status: int = 200, content_type: str = "application/json", **extra: str | int) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def reply(conn: socket.socket, body: bytes, status: int = 200, content_type: str = "application/json") -> bool:
    conn.sendall(head(status, content_type, Content_Length=len(body)) + body)
    return True


def envelope(result: Any) -> bytes:
    return json.dumps({"result": result, "success": True, "errors": [], "messages": []}).encode()


_PRELUDE = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from workers_ai import WorkersAI, errors

def outcome(fn):
    try:
        value = fn()
    except BaseException as exc:
        return {{"ok": False, "type": type(exc).__name__,
                "bases": [c.__name__ for c in type(exc).__mro__],
                "message": str(exc)[:3000],
                "status": getattr(exc, "status", None), "code": getattr(exc, "code", None)}}
    return {{"ok": True, "type": type(value).__name__, "value": repr(value)[:3000]}}

BASE = {base!r}
ACCOUNT = {account!r}
TOKEN = {token!r}
result = None
"""

_EPILOGUE = """
result = dict(result) if isinstance(result, dict) else {"value": result}
# This process's own peak (VmHWM): getrusage's ru_maxrss keeps the peak of the process that forked it
# (a big pytest process), so it would measure the test runner instead of the client.
result["rss_kib"] = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("RESULT " + json.dumps(result))
"""


def self_signed(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate for 127.0.0.1 made with the ``openssl`` command, and a server context using it."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return cert, context


def run_client(
    code: str, server: RawServer | None = None, *, deadline: float = 60.0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``code`` (which sets ``result``) in a fenced child process and return ``result``."""
    base = server.base_url if server is not None else "http://127.0.0.1:9/client/v4"
    script = (
        _PRELUDE.format(limit=MEMORY_LIMIT, base=base, account=ACCOUNT, token=TOKEN) + textwrap.dedent(code) + _EPILOGUE
    )
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}, **(env or {})}
    # glibc reserves 64 MiB of address space per thread arena: many threads would trip RLIMIT_AS.
    env["MALLOC_ARENA_MAX"] = "2"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=deadline, env=env, cwd=ROOT
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"client process failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    found: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return found
