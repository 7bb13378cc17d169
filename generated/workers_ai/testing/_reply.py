"""What the emulator answers: :class:`Reply` (status, headers, body and how to send it), the Cloudflare
envelope, and :class:`APIError`, the exception every handler raises for an enveloped error reply."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ._records import error_text

__all__ = ["JSON", "SSE", "APIError", "Reply", "envelope", "error_reply", "failure_reply", "json_reply"]

JSON = "application/json"
SSE = "text/event-stream"


@dataclass
class Reply:
    """What to send back, and how (whole, chunked, slowly, cut short)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=lambda: [])
    body: bytes = b""
    chunks: list[bytes] | None = None  # sent with Transfer-Encoding: chunked, one write each
    chunk_interval: float = 0.0
    delay: float = 0.0
    cut: int | None = None  # body bytes (or chunks) to send before breaking the connection
    cut_mode: Literal["close", "reset"] | None = None
    close: bool = False


class APIError(Exception):
    """An error the API answers with an envelope: HTTP ``status``, Workers AI ``code`` and ``message``."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def envelope(result: Any, *, success: bool = True, errors: Iterable[Mapping[str, Any]] = ()) -> bytes:
    return msgspec.json.encode({"result": result, "success": success, "errors": list(errors), "messages": []})


def error_reply(status: int, code: int, message: str, extra: Iterable[tuple[str, str]] = ()) -> Reply:
    body = envelope(None, success=False, errors=[{"code": code, "message": message}])
    return Reply(status, [("content-type", JSON), *extra], body)


def json_reply(result: Any, status: int = 200, extra: Iterable[tuple[str, str]] = ()) -> Reply:
    return Reply(status, [("content-type", JSON), *extra], envelope(result))


def failure_reply(error: BaseException) -> Reply:
    """The answer to a request whose handler raised ``error`` (an emulator bug, or a ``match`` predicate's):
    500/3043 naming it, then the connection is closed."""
    reply = error_reply(500, 3043, f"emulator error: {error_text(error)} (see Emulator.errors)")
    reply.close = True
    return reply
