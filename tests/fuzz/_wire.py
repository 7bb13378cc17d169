"""The server the differential tests talk to: it records every request's exact bytes and answers each with
the next queued reply (an envelope by default), on 127.0.0.1; and the reading of a recorded request back
into the JSON instance it carries, whatever body the REST API takes (JSON, multipart form, raw bytes with
the options as query parameters)."""

from __future__ import annotations

import base64
import socket
import threading
from collections import deque
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from workers_ai.testing._multipart import parse_form

from tests._server import Request, Server, reply
from tests.fuzz._cases import same_json

__all__ = ["NULL_REPLY", "Recorder", "envelope", "sent_instance"]


def envelope(result: Any) -> bytes:
    """The API's JSON envelope around ``result``."""
    return msgspec.json.encode({"result": result, "success": True, "errors": [], "messages": []})


NULL_REPLY = envelope(None)


class Recorder(Server):
    """Records requests; answers with the queued ``(body, content type)`` replies, then ``NULL_REPLY``."""

    def __init__(self) -> None:
        self.replies: deque[bytes] = deque()
        self._taken = 0
        self._guard = threading.Lock()
        super().__init__()

    def handle(self, conn: socket.socket, request: Request) -> bool:
        with self._guard:
            body = self.replies.popleft() if self.replies else NULL_REPLY
        return reply(conn, body)

    def take(self) -> list[Request]:
        """The requests received since the last ``take()``."""
        with self._guard:
            new = self.requests[self._taken :]
            self._taken = len(self.requests)
        return new


def sent_instance(request: Request, like: Any) -> Any:
    """The JSON instance ``request`` carries, in ``like``'s terms where the body is not JSON: a form's file
    parts and a raw body as the base64 text ``like`` holds them in, text parts and query parameters as
    the JSON text of ``like``'s values (a part or parameter no key of ``like`` explains is kept as text)."""
    content_type = request.headers.get("content-type", "")
    if not isinstance(like, dict):
        return base64.b64encode(request.body).decode("ascii")
    if content_type.startswith("application/json"):
        return msgspec.json.decode(request.body)
    if content_type.startswith("multipart/form-data"):
        fields = {p.name: (p.data, p.filename is not None) for p in parse_form(content_type, request.body)}
        return {name: _as_like(data, is_file, like.get(name, _NONE)) for name, (data, is_file) in fields.items()}
    # A raw body: the one binary field is the body, the others are query parameters.
    out: dict[str, Any] = {
        k: _as_like(v.encode(), False, like.get(k, _NONE)) for k, v in parse_qsl(request.query, keep_blank_values=True)
    }
    raw = [k for k, v in like.items() if k not in out and isinstance(v, str)]
    out[raw[0] if raw else ""] = base64.b64encode(request.body).decode("ascii")
    return out


_NONE = object()  # no such key in the instance


def _as_like(data: bytes, is_file: bool, given: Any) -> Any:
    if is_file:
        return base64.b64encode(data).decode("ascii")
    text = data.decode("utf-8", errors="replace")
    if given is _NONE or isinstance(given, str):
        return text
    try:  # a number, boolean, null, list or object: the JSON text of the same value
        return given if same_json(msgspec.json.decode(text), given) else text
    except msgspec.DecodeError:
        return text
