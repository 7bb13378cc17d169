"""Raw-socket HTTP for emulator tests: exact bytes out (bad framing included), one reply parsed back."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any, Protocol

from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"


@dataclass
class RawReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def envelope(self) -> dict[str, Any]:
        env: dict[str, Any] = json.loads(self.body)
        return env

    def error(self) -> tuple[int, str]:
        """``(code, message)`` of a one-error failure envelope (asserting that it is one)."""
        env = self.envelope()
        assert env["success"] is False and env["result"] is None and env["messages"] == [], env
        (err,) = env["errors"]
        return int(err["code"]), str(err["message"])


def connect(port: int, timeout: float = 30.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(
    emu: Emulator | None,
    *,
    model: str = BGE,
    length: str | None = None,
    extra: str = "",
    method: str = "POST",
    path: str | None = None,
    token: str | None = None,
) -> bytes:
    """A request head for a run (``emu`` gives the account and token); ``length`` is the Content-Length text."""
    account = emu.account_id if emu is not None else "acc"
    token = token if token is not None else (emu.api_token if emu is not None else "tok")
    target = path if path is not None else f"/client/v4/accounts/{account}/ai/run/{model}"
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {token}"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    text = "\r\n".join(lines) + "\r\n" + extra + "\r\n"
    return text.encode("latin-1")


def post(emu: Emulator, body: bytes, *, model: str = BGE, extra: str = "") -> bytes:
    return head(emu, model=model, length=str(len(body)), extra=extra) + body


class Receiver(Protocol):
    def recv(self, bufsize: int, /) -> bytes: ...


def read_reply(sock: Receiver) -> RawReply:
    """One whole reply (Content-Length or chunked body); AssertionError if the connection ends first."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        assert data, f"connection closed before a reply head: {buf!r}"
        buf += data
    raw_head, _, rest = buf.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if status == 100:
        return read_reply_after(sock, rest)
    if headers.get("transfer-encoding") == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            data = sock.recv(65536)
            assert data, "connection closed inside a chunked body"
            rest += data
        return RawReply(status, headers, _unchunk(rest))
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        data = sock.recv(65536)
        assert data, "connection closed inside a body"
        rest += data
    assert len(rest) == length, "more bytes than the reply's Content-Length"
    return RawReply(status, headers, rest)


def read_reply_after(sock: Receiver, already: bytes) -> RawReply:
    """Like :func:`read_reply` when ``already`` holds bytes read past an interim (1xx) reply."""
    return read_reply(_Prefixed(sock, already))


class _Prefixed:
    def __init__(self, sock: Receiver, prefix: bytes) -> None:
        self._sock = sock
        self._prefix = prefix

    def recv(self, n: int) -> bytes:
        if self._prefix:
            out, self._prefix = self._prefix[:n], self._prefix[n:]
            return out
        return self._sock.recv(n)


def _unchunk(data: bytes) -> bytes:
    out = b""
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out
        out += data[:size]
        data = data[size + 2 :]


def exchange(port: int, data: bytes) -> RawReply:
    """Send ``data`` on a new connection and read one reply."""
    with connect(port) as sock:
        sock.sendall(data)
        return read_reply(sock)
