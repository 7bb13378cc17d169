"""What both drivers hand to ``websockets`` and take back from it: connect options, a logger that never
shows the token, failed handshakes as our REST errors, and how a closed connection ended.

Imports ``websockets`` only inside functions, through :func:`websockets_module`: this module is loaded
when a session starts, and a copy without the ``realtime`` extra still type-checks (mypy follows every
``import`` it sees, and would report ``websockets`` as not found).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from .._core.error_replies import error_from
from ..errors import APIConnectionError, APITimeoutError, WorkersAIError
from ._core import SessionCore

__all__ = ["close_of", "connect_options", "handshake_error", "websockets_module"]

_log = logging.getLogger("workers_ai.realtime")


def websockets_module(name: str) -> Any:
    """``websockets.<name>`` (``sync.client``, ``asyncio.client``, ``exceptions``), imported by name."""
    return importlib.import_module(f"websockets.{name}")


class _Redacting(logging.LoggerAdapter):  # type: ignore[type-arg]
    """``websockets`` logs every handshake header at DEBUG: the token's value is replaced."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str):
            args = (args[0], SessionCore.redact(args[0], args[1]))
        super().log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return msg, kwargs


def connect_options(core: SessionCore) -> dict[str, Any]:
    """Keyword arguments of ``websockets`` ``connect`` (sync and asyncio take the same ones)."""
    limits = core.limits
    return {
        "additional_headers": core.headers,
        "user_agent_header": None,  # ours is in the headers
        "compression": None,  # audio does not deflate; and it keeps frames within max_frame_bytes
        "open_timeout": core.open_timeout,
        "ping_interval": limits.ping_interval,
        "ping_timeout": limits.ping_timeout,
        "close_timeout": limits.close_timeout,
        "max_size": core.max_frame_bytes,
        "max_queue": limits.max_queue,
        "logger": _Redacting(_log, {}),
    }


def handshake_error(core: SessionCore, exc: BaseException) -> WorkersAIError:
    """A failed opening handshake as the error a REST call would raise for the same answer."""
    InvalidStatus = websockets_module("exceptions").InvalidStatus

    host = core.url.split("/")[2]
    if isinstance(exc, InvalidStatus):
        response: Any = getattr(exc, "response")  # noqa: B009  (websockets is untyped here: see websockets_module)
        items: Any = response.headers.raw_items()
        headers: Mapping[str, str] = {str(k).lower(): str(v) for k, v in items}
        status: int = response.status_code
        return error_from(status, headers, bytes(response.body or b""), model_id=core.model_id)
    if isinstance(exc, TimeoutError):
        return APITimeoutError(
            f"{core.model_id}: no WebSocket handshake with {host} within {core.open_timeout:g}s", request_sent=False
        )
    if isinstance(exc, OSError):
        return APIConnectionError(f"{core.model_id}: cannot connect to {host}: {exc}", request_sent=False)
    return APIConnectionError(f"{core.model_id}: the WebSocket handshake with {host} failed: {exc}", retryable=False)


def close_of(exc: BaseException) -> tuple[int | None, str]:
    """The close code and reason of a ``ConnectionClosed`` (the server's, else the one we sent on a
    failure); for any other exception, no code and what it says."""
    ConnectionClosed = websockets_module("exceptions").ConnectionClosed

    if not isinstance(exc, ConnectionClosed):
        return None, f"{type(exc).__name__}: {exc}"
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is not None:
        return int(rcvd.code), str(rcvd.reason)
    sent = getattr(exc, "sent", None)
    if sent is not None and int(sent.code) not in (1000, 1001):
        return int(sent.code), str(sent.reason)
    return None, ""
