"""A way to run a client against a hostile server (``tests._server.Server``) in a fenced process.

``run_client(code)`` runs client code in a fresh ``python`` process whose address space is capped
(``RLIMIT_AS``) and which is killed after a deadline, so a regression (an unbounded read, a call that
never ends) fails the test instead of taking the machine down. The code sets ``result``; the child
prints it as JSON together with its own peak RSS.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests._server import RawRequest, Server, envelope, head, reply

RawServer = Server  # the older name, for imports from here
__all__ = ["RawRequest", "RawServer", "Server", "envelope", "head", "reply", "run_client", "self_signed"]

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1 << 30  # 1 GiB of address space for the client process
ACCOUNT = "0123456789abcdef0123456789abcdef"
TOKEN = "tok-secret"


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
# This process's own peak RSS: VmHWM belongs to the process image, whereas ru_maxrss keeps the
# parent's peak across fork and exec (a pytest process grown by earlier tests would show through).
with open("/proc/self/status") as status:
    hwm = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
result["rss_kib"] = hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
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
    code: str, server: Server | None = None, *, deadline: float = 60.0, env: dict[str, str] | None = None
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
