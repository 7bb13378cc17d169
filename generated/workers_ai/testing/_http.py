"""An incremental HTTP/1.1 request reader: bytes go in as they arrive, whole requests come out.

It never holds more than one request's head (:data:`MAX_HEAD`) and body (:data:`MAX_BODY`) at a time,
and it refuses what a careful server refuses, each as an :class:`HttpError` the server answers with an
envelope before closing the connection:

- a ``Content-Length`` that is not a plain decimal number, is negative, disagrees with another one, or is
  absurd (above :data:`MAX_CONTENT_LENGTH`): 400, code 6003;
- a body (``Content-Length`` or chunked) larger than :data:`MAX_BODY`: 413, code 3006 "Request is too large";
- a malformed request line, header or chunk, or a transfer coding other than ``chunked``: 400, code 6003;
- a head larger than :data:`MAX_HEAD`: 431, code 6003.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_BODY", "MAX_CONTENT_LENGTH", "MAX_HEAD", "HttpError", "Request", "RequestReader"]

MAX_BODY = 10_000_000
"""The largest request body accepted (bytes). The API documents 10 MB for a batch payload and no other
request limit (only its 413/3006 "Request is too large" error), so one limit serves both."""
MAX_HEAD = 64 * 1024
"""The largest request line plus headers accepted (bytes)."""
MAX_CONTENT_LENGTH = 2**53
"""A ``Content-Length`` above this is not a size any client means: 400, not 413."""
_MAX_LINE = 4096  # one chunk-size or trailer line
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(rb"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")


class HttpError(Exception):
    """A request the server refuses: answered with ``status`` and an envelope, then the connection closes."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _bad(message: str) -> HttpError:
    return HttpError(400, 6003, f"Invalid request: {message}")


def _too_large() -> HttpError:
    return HttpError(413, 3006, "Request is too large")


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes
    keep_alive: bool


@dataclass
class _Head:
    method: str
    target: str
    headers: dict[str, str]
    keep_alive: bool
    length: int | None  # None: chunked
    wants_continue: bool


def _content_length(values: list[bytes]) -> int:
    first = values[0].strip()
    if any(v.strip() != first for v in values[1:]):
        raise _bad("conflicting Content-Length headers")
    shown = first[:40].decode("latin-1")
    if not _DIGITS.fullmatch(first):
        raise _bad(f"Content-Length {shown!r} is not a non-negative whole number")
    if len(first.lstrip(b"0")) > 16 or int(first) > MAX_CONTENT_LENGTH:
        raise _bad(f"Content-Length {shown!r} is out of range")
    return int(first)


def _parse_head(raw: bytes, max_body: int) -> _Head:
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1]:
        raise _bad("malformed request line")
    version = parts[2]
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise HttpError(505, 6003, "HTTP version not supported")
    fields: dict[str, list[bytes]] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.fullmatch(name):
            raise _bad("malformed header line")
        fields.setdefault(name.decode("ascii").lower(), []).append(value.strip(b" \t"))
    headers = {k: v[-1].decode("latin-1") for k, v in fields.items()}
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep_alive = "close" not in tokens if version == b"HTTP/1.1" else "keep-alive" in tokens
    length: int | None = 0
    if "transfer-encoding" in fields:
        if "content-length" in fields:
            raise _bad("both Transfer-Encoding and Content-Length")
        if headers["transfer-encoding"].strip().lower() != "chunked":
            raise _bad("only the chunked transfer coding is supported")
        length = None
    elif "content-length" in fields:
        length = _content_length(fields["content-length"])
        if length > max_body:
            raise _too_large()
    wants_continue = headers.get("expect", "").lower() == "100-continue" and length != 0
    return _Head(parts[0].decode("ascii"), parts[1].decode("latin-1"), headers, keep_alive, length, wants_continue)


class RequestReader:
    """Feed it bytes with :meth:`feed`; :meth:`next` returns each complete request, or None for "need more"."""

    def __init__(self, max_body: int = MAX_BODY) -> None:
        self._max_body = max_body
        self._buf = bytearray()
        self._head: _Head | None = None
        self._chunks: list[bytes] = []
        self._chunked_size = 0
        self._chunk_left: int | None = None  # bytes of the current chunk still to come; None: expect a size line
        self._trailer = False
        self.continue_due = False  # the client waits for "100 Continue" before sending the body

    @property
    def pending(self) -> int:
        """Bytes held: received and not yet handed out."""
        return len(self._buf) + self._chunked_size

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next(self) -> Request | None:
        if self._head is None:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEAD:
                    raise HttpError(431, 6003, f"Invalid request headers: the header section is over {MAX_HEAD} bytes")
                return None
            if end > MAX_HEAD:
                raise HttpError(431, 6003, f"Invalid request headers: the header section is over {MAX_HEAD} bytes")
            self._head = _parse_head(bytes(self._buf[:end]), self._max_body)
            del self._buf[: end + 4]
            self.continue_due = self._head.wants_continue
        head = self._head
        body = self._body(head)
        if body is None:
            return None
        self._head = None
        self.continue_due = False
        return Request(head.method, head.target, head.headers, body, head.keep_alive)

    def _body(self, head: _Head) -> bytes | None:
        if head.length is not None:
            if len(self._buf) < head.length:
                return None
            body = bytes(self._buf[: head.length])
            del self._buf[: head.length]
            return body
        while True:
            if self._trailer:
                end = self._line()
                if end is None:
                    return None
                line = bytes(self._buf[:end])
                del self._buf[: end + 2]
                if line:
                    continue  # a trailer field: ignored
                body = b"".join(self._chunks)
                self._chunks, self._chunked_size, self._trailer = [], 0, False
                return body
            if self._chunk_left is None:
                end = self._line()
                if end is None:
                    return None
                size_text = bytes(self._buf[:end]).split(b";", 1)[0].strip()
                del self._buf[: end + 2]
                if not _HEX.fullmatch(size_text) or len(size_text) > 16:
                    raise _bad("malformed chunk size")
                size = int(size_text, 16)
                if size == 0:
                    self._trailer = True
                    continue
                if self._chunked_size + size > self._max_body:
                    raise _too_large()
                self._chunk_left = size
            if len(self._buf) < self._chunk_left + 2:
                return None
            if bytes(self._buf[self._chunk_left : self._chunk_left + 2]) != b"\r\n":
                raise _bad("chunk data not followed by CRLF")
            self._chunks.append(bytes(self._buf[: self._chunk_left]))
            self._chunked_size += self._chunk_left
            del self._buf[: self._chunk_left + 2]
            self._chunk_left = None

    def _line(self) -> int | None:
        end = self._buf.find(b"\r\n")
        if end < 0:
            if len(self._buf) > _MAX_LINE:
                raise _bad("chunk-size or trailer line too long")
            return None
        if end > _MAX_LINE:
            raise _bad("chunk-size or trailer line too long")
        return end
