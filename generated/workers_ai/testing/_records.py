"""What the emulator remembers: one request (:class:`RecordedRequest`, kept in ``Emulator.requests``) and one
failure it contained (:class:`ServerError`, kept in ``Emulator.errors``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs

import msgspec

__all__ = ["RecordedRequest", "ServerError", "Stage", "error_text"]

_SECRET_HEADERS = frozenset({"authorization", "cf-aig-authorization"})


def _mask(value: str) -> str:
    """``Bearer ***``: the scheme stays visible, the credential does not."""
    scheme, sep, _ = value.partition(" ")
    return f"{scheme} ***" if sep else "***"


@dataclass
class RecordedRequest:
    """One request the emulator received (kept in :attr:`Emulator.requests`).

    ``headers`` are kept whole (lower-case names), but the repr masks the ``authorization`` value, so
    a failing test's output never shows the token.
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    model: str | None = None
    fault: str | None = None
    status: int | None = None
    at: float = field(default_factory=time.time)

    def __repr__(self) -> str:
        headers = {k: (_mask(v) if k.lower() in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        return (
            f"RecordedRequest(method={self.method!r}, path={self.path!r}, query={self.query!r}, "
            f"headers={headers!r}, body={self.body!r}, model={self.model!r}, fault={self.fault!r}, "
            f"status={self.status!r}, at={self.at!r})"
        )

    @property
    def target(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")

    @property
    def aig(self) -> dict[str, str]:
        """The AI Gateway options sent (``cf-aig-*`` headers such as ``cf-aig-gateway-id``), secrets masked."""
        return {
            k: (_mask(v) if k in _SECRET_HEADERS else v) for k, v in self.headers.items() if k.startswith("cf-aig-")
        }

    @property
    def params(self) -> dict[str, str]:
        """Query parameters (the first value of each)."""
        return {k: v[0] for k, v in parse_qs(self.query, keep_blank_values=True).items()}

    def json(self) -> Any:
        """The body decoded as JSON."""
        return msgspec.json.decode(self.body)


Stage = Literal["request", "event", "reply", "timer", "loop"]
"""What was running when an error was raised: a request's handler (on a worker thread); on the server's
loop, a connection's socket event, the writing of a queued reply, or a timer (a paused reply, the next
event of a stream, a realtime session's checks); ``loop``: the server loop itself, which then stops."""


@dataclass(frozen=True)
class ServerError:
    """An exception the emulator contained (kept in :attr:`Emulator.errors`, logged on ``workers_ai.testing``).

    The connection it came from was closed (a request whose handler raised was answered 500 first);
    the server kept serving the others. Only ``stage == "loop"`` means the server stopped.
    """

    stage: Stage
    where: str  # the request line, or the connection and what it was doing
    error: BaseException
    traceback: str  # formatted, as logged
    at: float = field(default_factory=time.time)

    def __str__(self) -> str:
        return f"{self.stage} of {self.where}: {error_text(self.error)}"


def error_text(error: BaseException) -> str:
    """``"Type: message"``, even for an exception whose ``str()`` raises."""
    try:
        return f"{type(error).__name__}: {error}"
    except Exception:
        return f"{type(error).__name__} (its message cannot be shown)"
