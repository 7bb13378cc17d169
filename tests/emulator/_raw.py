"""Raw-socket HTTP for emulator tests: exact bytes out (bad framing included), one reply parsed back."""

from __future__ import annotations

import json
import socket
import weakref
from dataclasses import dataclass
from typing import Any

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


_LEFT: weakref.WeakKeyDictionary[socket.socket, bytes] = weakref.WeakKeyDictionary()  # read past a reply


def _recv(sock: socket.socket) -> bytes:
    left = _LEFT.pop(sock, b"")
    return left if left else sock.recv(65536)


def read_reply(sock: socket.socket) -> RawReply:
    """One whole reply (Content-Length or chunked body); AssertionError if the connection ends first.

    Bytes read past it (pipelined replies) are kept for the next call on the same socket.
    """
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = _recv(sock)
        assert data, f"connection closed before a reply head: {buf!r}"
        buf += data
    raw_head, _, rest = buf.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if status == 100:
        _LEFT[sock] = rest
        return read_reply(sock)
    if headers.get("transfer-encoding") == "chunked":
        while (end := rest.find(b"\r\n0\r\n\r\n")) < 0 and not rest.startswith(b"0\r\n\r\n"):
            data = _recv(sock)
            assert data, "connection closed inside a chunked body"
            rest += data
        cut = 5 if end < 0 else end + 7
        body, extra = rest[:cut], rest[cut:]
    else:
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            data = _recv(sock)
            assert data, "connection closed inside a body"
            rest += data
        body, extra = rest[:length], rest[length:]
    if extra:
        _LEFT[sock] = extra
    if headers.get("transfer-encoding") == "chunked":
        return RawReply(status, headers, _unchunk(body))
    return RawReply(status, headers, body)


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
