"""A small, fast stand-in for the Workers AI REST API, run in its own process by the benchmarks.

Every client under test talks to it over keep-alive loopback. Its CPU is spent in this process, so it
never counts in a client's ``process_time``. Replies are built once and cached; each is written with
a single ``sendall`` and Nagle off, so no client waits on a delayed ACK.

Routes (``{acct}`` is any account id):

- ``POST /client/v4/accounts/{acct}/ai/run/{model}``: the model id with literal slashes, or with
  ``%2F`` as the official SDK sends it. A body with ``contexts`` gets a rank reply (one score per
  context); a body with ``text`` gets ``len(text)`` embedding vectors of ``DIMS`` floats.
- ``POST /client/v4/accounts/{acct}/ai/run/{model}`` with ``"stream": true``: a ``text/event-stream``
  reply of ``events`` (default 5,000) small Workers AI chunks, a usage event and ``[DONE]``.
- ``POST /client/v4/accounts/{acct}/ai/v1/embeddings``: the OpenAI-compatible route. ``input`` gets
  an OpenAI-shaped embeddings list; ``dimensions`` (optional) sets the vector length.

Start: ``python bench/_server.py [PORT] [DELAY_MS]`` prints ``PORT <n>`` on stdout once it listens,
then serves until stdin closes or it is killed. ``DELAY_MS`` holds every reply that long (a model's
latency, for the many-threads benchmark).
"""

from __future__ import annotations

import json
import random
import socket
import sys
import threading
import time
from urllib.parse import unquote, urlsplit

DIMS = 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found"}


def vectors(count: int, dims: int, seed: int = 7) -> list[list[float]]:
    """Deterministic vectors with the digit count of real float32 embeddings printed as JSON."""
    rng = random.Random(seed * 1_000_003 + count * 31 + dims)
    return [[round(rng.uniform(-0.12, 0.12), 9) for _ in range(dims)] for _ in range(count)]


def sse_reply(n: int) -> bytes:
    words = ["the", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
    parts = [
        b"data: " + json.dumps({"response": words[i % len(words)], "p": "abcdefgh"[: i % 8]}).encode() + b"\n\n"
        for i in range(n)
    ]
    usage = {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n}
    parts.append(b"data: " + json.dumps({"response": "", "usage": usage}).encode() + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def envelope(result: object) -> bytes:
    body = {"result": result, "success": True, "errors": [], "messages": []}
    return json.dumps(body, separators=(",", ":")).encode()


def rank_reply(n: int) -> bytes:
    return envelope({"response": [{"id": i, "score": round(0.9 - i * 0.1, 4)} for i in range(n)]})


def embed_reply(n: int, dims: int = DIMS) -> bytes:
    return envelope({"shape": [n, dims], "data": vectors(n, dims), "pooling": "cls"})


def openai_reply(n: int, dims: int, model: str) -> bytes:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors(n, dims))]
    usage = {"prompt_tokens": 8 * n, "total_tokens": 8 * n}
    return json.dumps({"object": "list", "data": data, "model": model, "usage": usage}, separators=(",", ":")).encode()


class Replies:
    """Reply bodies by request shape, built on first use."""

    def __init__(self) -> None:
        self._cache: dict[tuple[object, ...], bytes] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], build: object) -> bytes:
        body = self._cache.get(key)
        if body is None:
            with self._lock:
                body = self._cache.get(key)
                if body is None:
                    body = self._cache[key] = build()  # type: ignore[operator]
        return body

    def answer(self, path: str, body: bytes) -> tuple[int, bytes]:
        parts = unquote(urlsplit(path).path).split("/")
        # ['', 'client', 'v4', 'accounts', acct, 'ai', 'run'|'v1', ...]
        if len(parts) < 8 or parts[1:4] != ["client", "v4", "accounts"] or parts[5] != "ai":
            return 404, envelope_error(7000, "No route for that URI")
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return 400, envelope_error(5006, "request body is not JSON")
        if parts[6] == "run":
            if payload.get("stream") is True:
                n = int(payload.get("events", 5000))
                return 200, self.get(("sse", n), lambda: sse_reply(n))
            if "contexts" in payload:
                n = len(payload["contexts"])
                return 200, self.get(("rank", n), lambda: rank_reply(n))
            text = payload.get("text")
            if text is not None:
                n = 1 if isinstance(text, str) else len(text)
                return 200, self.get(("embed", n), lambda: embed_reply(n))
            return 400, envelope_error(5006, "required properties at '/' are 'text' or 'contexts'")
        if parts[6:8] == ["v1", "embeddings"]:
            inputs = payload.get("input")
            n = 1 if isinstance(inputs, str) else len(inputs or [])
            dims = int(payload.get("dimensions") or DIMS)
            model = str(payload.get("model", ""))
            return 200, self.get(("openai", n, dims, model), lambda: openai_reply(n, dims, model))
        return 404, envelope_error(7000, "No route for that URI")


def envelope_error(code: int, message: str) -> bytes:
    body = {"result": None, "success": False, "errors": [{"code": code, "message": message}], "messages": []}
    return json.dumps(body).encode()


def _serve_conn(conn: socket.socket, replies: Replies, delay: float = 0.0) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = conn.makefile("rb", buffering=65536)
    try:
        while True:
            request_line = reader.readline(65537)
            if not request_line:
                return
            if request_line in (b"\r\n", b"\n"):
                continue
            _method, target, _version = request_line.decode("latin-1").split(" ", 2)
            length = 0
            close = False
            while True:
                line = reader.readline(65537)
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value.strip())
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
            body = reader.read(length) if length else b""
            status, reply = replies.answer(target, body)
            if delay:
                time.sleep(delay)
            kind = "text/event-stream" if reply.startswith(b"data: ") else "application/json"
            head = (
                f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                f"Content-Type: {kind}\r\n"
                f"Content-Length: {len(reply)}\r\n"
                "cf-ray: 0000000000000000-BNC\r\n"
                "\r\n"
            ).encode("latin-1")
            conn.sendall(head + reply)
            if close:
                return
    except (OSError, ValueError):
        return
    finally:
        try:
            reader.close()
            conn.close()
        except OSError:
            pass


def serve(port: int = 0, delay_ms: float = 0.0) -> None:
    replies = Replies()
    # Warm the caches the benchmarks use, so the first timed call is not the one that builds a reply.
    replies.get(("rank", 3), lambda: rank_reply(3))
    replies.get(("embed", 100), lambda: embed_reply(100))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(256)
    print(f"PORT {sock.getsockname()[1]}", flush=True)

    def accept_loop() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=_serve_conn, args=(conn, replies, delay_ms / 1000.0), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    # Serve until the parent closes our stdin (or kills us).
    sys.stdin.read()
    sock.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0, float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
