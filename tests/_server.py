"""A scripted HTTP/1.1 server on 127.0.0.1 that records the exact bytes of every request.

Each reply is either a ``Reply`` (status, headers, body sent in ``chunks`` with optional pauses) or a
callable taking the parsed request and returning one. ``"reset"`` closes the connection abruptly.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec


@dataclass
class Request:
    raw: bytes
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "application/json"
    chunks: list[bytes] | None = None  # sent with Transfer-Encoding: chunked when given
    pause: float = 0.0  # seconds between chunks
    delay: float = 0.0  # seconds before the status line
    truncate_to: int | None = None  # declare the full Content-Length but send only this many bytes


def envelope(
    result: Any, *, success: bool = True, errors: Iterable[dict[str, Any]] = (), messages: Iterable[Any] = ()
) -> bytes:
    return msgspec.json.encode(
        {"result": result, "success": success, "errors": list(errors), "messages": list(messages)}
    )


def ok(result: Any, **headers: str) -> Reply:
    return Reply(200, envelope(result), dict(headers))


def fail(status: int, code: int, message: str, **headers: str) -> Reply:
    body = envelope(None, success=False, errors=[{"code": code, "message": message}])
    return Reply(status, body, {k.replace("_", "-"): v for k, v in headers.items()})


Handler = Callable[[Request], "Reply | str"]


class ScriptedServer:
    """Serves the queued replies in order (the last one repeats) and records every request."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.connections = 0
        self._script: list[Reply | str | Handler] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return self.url + "/client/v4"

    def script(self, *replies: Reply | str | Handler) -> None:
        self._script = list(replies)

    def close(self) -> None:
        self._stop.set()
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, req: Request) -> Reply | str:
        if not self._script:
            return Reply(500, b"no reply scripted")
        item = self._script.pop(0) if len(self._script) > 1 else self._script[0]
        if callable(item):
            return item(req)
        return item

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, rest = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                while len(rest) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    rest += data
                body, buf = rest[:length], rest[length:]
                req = Request(head + b"\r\n\r\n" + body, method, target, headers, body)
                self.requests.append(req)
                reply = self._next(req)
                if reply == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    conn.close()
                    return
                assert isinstance(reply, Reply)
                if not self._send(conn, reply):
                    return
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _send(self, conn: socket.socket, reply: Reply) -> bool:
        if reply.delay:
            time.sleep(reply.delay)
        head = [f"HTTP/1.1 {reply.status} X"]
        hdrs = {k.lower(): v for k, v in reply.headers.items()}
        if reply.content_type and "content-type" not in hdrs:
            hdrs["content-type"] = reply.content_type
        if reply.chunks is not None:
            hdrs["transfer-encoding"] = "chunked"
        else:
            hdrs["content-length"] = str(len(reply.body))
        head += [f"{k}: {v}" for k, v in hdrs.items()]
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if reply.chunks is not None:
            for chunk in reply.chunks:
                if chunk:
                    conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                if reply.pause:
                    time.sleep(reply.pause)
            conn.sendall(b"0\r\n\r\n")
            return True
        if reply.truncate_to is not None:
            conn.sendall(reply.body[: reply.truncate_to])
            return False
        conn.sendall(reply.body)
        return True
