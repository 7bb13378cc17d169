"""The one test HTTP server: raw bytes in, raw bytes out, and a log of every request, on 127.0.0.1.

``Server(handler)`` accepts connections (optionally over TLS) and, for every request on a connection,
records it (``requests``, each with its exact ``raw`` bytes) and calls ``handler(conn, request)``, which
writes whatever it likes: well-formed replies, dripped bytes, endless bodies, broken framing. A handler
returning True keeps the connection open for the next request; anything else closes it.

``ScriptedServer()`` is a ``Server`` whose handler plays a script, one item per request (the last one
repeats): a ``Reply`` (status, headers, body; chunked, paused, delayed, truncated, dripped or endless),
raw ``bytes`` sent verbatim, ``"reset"`` (an abrupt close), ``"close"`` (a close without a reply), or a
callable taking the ``Request`` and returning one of those.

The module imports only the standard library and msgspec, so a fenced child process can import it too.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

MAX_LINE = 65537


@dataclass
class Request:
    """One request as it arrived: ``raw`` is the exact bytes read (request line, headers, body)."""

    raw: bytes
    method: str
    target: str
    headers: dict[str, str]  # names lower-cased; a repeated header keeps its last value
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


RawRequest = Request  # the name the hostile-server tests use
RawHandler = Callable[[socket.socket, Request], "bool | None"]


class Server:
    """A threaded raw-socket HTTP/1.1 server; each connection runs ``handler`` for every request."""

    def __init__(self, handler: RawHandler | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.handler: RawHandler = handler or self.handle
        self.tls = tls
        self.requests: list[Request] = []
        self.connections = 0
        self.stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(256)
        self.port: int = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def handle(self, conn: socket.socket, request: Request) -> bool | None:
        raise NotImplementedError("pass a handler or override handle()")

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/client/v4"

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stop.set()
        try:
            self._sock.close()
        except OSError:
            pass
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
                self.connections += 1
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
                request = read_request(reader)
                if request is None:
                    return
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


def read_request(reader: Any) -> Request | None:
    """Read one request from a binary file object; None at a clean end of the connection."""
    line: bytes = reader.readline(MAX_LINE)
    if not line:
        return None
    raw = [line]
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        h: bytes = reader.readline(MAX_LINE)
        raw.append(h)
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body: bytes = reader.read(length) if length else b""
    if len(body) < length:
        return None
    return Request(b"".join(raw) + body, method, target, headers, body)


# ----------------------------------------------------------------------------- raw writing helpers


def head(status: int = 200, content_type: str | None = "application/json", **extra: str | int) -> bytes:
    """A status line and headers; ``extra`` names use ``_`` for ``-`` (``Content_Length=3``)."""
    lines = [f"HTTP/1.1 {status} X"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def reply(conn: socket.socket, body: bytes, status: int = 200, content_type: str = "application/json") -> bool:
    """Send one complete reply with a Content-Length; keeps the connection."""
    conn.sendall(head(status, content_type, Content_Length=len(body)) + body)
    return True


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (an empty ``data`` is the terminating chunk)."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def drip(conn: socket.socket, data: bytes, stop: threading.Event, every: float = 0.2) -> None:
    """Send ``data`` one byte at a time, ``every`` seconds apart, until done or ``stop`` is set."""
    for i in range(len(data)):
        if stop.is_set():
            return
        conn.sendall(data[i : i + 1])
        time.sleep(every)


def forever(conn: socket.socket, piece: bytes, stop: threading.Event, every: float = 0.0) -> None:
    """Send ``piece`` again and again until the peer goes away or ``stop`` is set."""
    while not stop.is_set():
        conn.sendall(piece)
        if every:
            time.sleep(every)


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released), so connecting is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


# ----------------------------------------------------------------------------- envelope and JSON replies


def envelope(
    result: Any, *, success: bool = True, errors: Iterable[dict[str, Any]] = (), messages: Iterable[Any] = ()
) -> bytes:
    return msgspec.json.encode(
        {"result": result, "success": success, "errors": list(errors), "messages": list(messages)}
    )


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
    drip: float = 0.0  # when set, send the body one byte at a time this many seconds apart
    endless: bytes | None = None  # after the head, send these chunks forever (chunked) until the peer leaves

    def head_bytes(self) -> bytes:
        hdrs = {k.lower(): v for k, v in self.headers.items()}
        if self.content_type and "content-type" not in hdrs:
            hdrs["content-type"] = self.content_type
        if self.chunks is not None or self.endless is not None:
            hdrs["transfer-encoding"] = "chunked"
        else:
            hdrs["content-length"] = str(len(self.body))
        lines = [f"HTTP/1.1 {self.status} X"] + [f"{k}: {v}" for k, v in hdrs.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def send(self, conn: socket.socket, stop: threading.Event) -> bool:
        """Write this reply; returns whether the connection can carry another request."""
        if self.delay:
            time.sleep(self.delay)
        conn.sendall(self.head_bytes())
        if self.endless is not None:
            forever(conn, chunk(self.endless), stop)
            return False
        if self.chunks is not None:
            for piece in self.chunks:
                if piece:
                    conn.sendall(chunk(piece))
                if self.pause:
                    time.sleep(self.pause)
            conn.sendall(chunk(b"") + b"\r\n")
            return True
        body = self.body if self.truncate_to is None else self.body[: self.truncate_to]
        if self.drip:
            drip(conn, body, stop, self.drip)
        else:
            conn.sendall(body)
        return self.truncate_to is None


def ok(result: Any, **headers: str) -> Reply:
    return Reply(200, envelope(result), dict(headers))


def fail(status: int, code: int, message: str, **headers: str) -> Reply:
    body = envelope(None, success=False, errors=[{"code": code, "message": message}])
    return Reply(status, body, {k.replace("_", "-"): v for k, v in headers.items()})


def json_reply(value: Any, status: int = 200, **headers: str) -> Reply:
    """A bare JSON body (no envelope)."""
    return Reply(status, msgspec.json.encode(value), dict(headers))


Action = Reply | bytes | str
Handler = Callable[[Request], Action]  # a script item computed from the request
ScriptItem = Action | Handler


class ScriptedServer(Server):
    """Serves the queued script items in order (the last one repeats) and records every request."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._script: list[ScriptItem] = []
        super().__init__(tls=tls)

    def script(self, *items: ScriptItem) -> None:
        self._script = list(items)

    def _next(self, request: Request) -> Action:
        with self._lock:
            if not self._script:
                return Reply(500, b"no reply scripted")
            item = self._script.pop(0) if len(self._script) > 1 else self._script[0]
        return item(request) if callable(item) else item

    def handle(self, conn: socket.socket, request: Request) -> bool:
        action = self._next(request)
        if action == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return False
        if action == "close":
            return False
        if isinstance(action, bytes):
            conn.sendall(action)
            return True
        assert isinstance(action, Reply), action
        return action.send(conn, self.stop)
