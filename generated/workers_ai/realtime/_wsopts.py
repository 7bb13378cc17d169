"""What both drivers hand to ``websockets`` and take back from it: connect options, a logger that never
shows the token, failed handshakes as our REST errors, and how a closed connection ended.

``websockets`` is imported by name at run time only (:func:`websockets_module`), never by an import
statement: a type checker follows imports even inside functions and under ``TYPE_CHECKING``, so it would
read websockets' 31 modules for every user of the package (or report it missing in a copy without the
``realtime`` extra). The sessions type the connections they hold with a protocol of the few members they use.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import ssl
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, Protocol

from .._core.error_replies import error_from
from .._core.proxies import proxy_failure, tls_failure
from .._core.redact import scrub
from ..errors import APIConnectionError, APITimeoutError, ConfigurationError, WorkersAIError
from ._core import SessionCore

__all__ = ["close_of", "connect_options", "handshake_error", "websockets_module"]

_log = logging.getLogger("workers_ai.realtime")


def websockets_module(module: str) -> Any:
    """``websockets.<module>`` (``sync.client``, ``asyncio.client``, ``exceptions``), loaded by name."""
    return importlib.import_module(f"websockets.{module}")


class _Headers(Protocol):
    def raw_items(self) -> Iterator[tuple[str, str]]: ...


class _Response(Protocol):
    """The HTTP answer of a refused handshake or proxy (``websockets.http11.Response``)."""

    status_code: int
    reason_phrase: str
    headers: _Headers
    body: bytes | None


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
    network: dict[str, Any] = {"proxy": None}  # never websockets' own reading of the environment
    proxy = core.proxy
    if proxy is not None:
        if proxy.is_socks and importlib.util.find_spec("python_socks") is None:
            raise ConfigurationError(
                f"a realtime session through the SOCKS proxy {proxy.shown} needs python-socks: "
                "pip install 'python-socks[asyncio]'"
            )
        network["proxy"] = proxy.canonical  # websockets sends its user:password as Proxy-Authorization
        if proxy.scheme == "https" and core.ssl_context is not None:
            network["proxy_ssl"] = core.ssl_context
    if core.ssl_context is not None and core.url.startswith("wss:"):
        network["ssl"] = core.ssl_context
    return {
        **network,
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
    errors = websockets_module("exceptions")
    host = core.url.split("/")[2]
    proxy = core.proxy
    # What the failure says, as every branch shows it: a proxy's password and any credential masked.
    said = scrub(str(exc) if proxy is None else proxy.scrub(str(exc)))
    if isinstance(exc, ConfigurationError):
        return exc
    if isinstance(exc, (errors.ProxyError, errors.InvalidProxy)):
        if isinstance(exc, errors.InvalidProxyStatus):
            answer = _response_of(exc)
            reason = f"Tunnel connection failed: {answer.status_code} {answer.reason_phrase}"
            return proxy_failure(proxy, reason, answer.status_code)
        return proxy_failure(proxy, f"{type(exc).__name__}: {said}")
    if isinstance(exc, ssl.SSLError):
        return tls_failure(core.url, f"{type(exc).__name__}: {said}", proxy)
    if isinstance(exc, OSError) and not isinstance(exc, TimeoutError) and proxy is not None:
        # the only socket opened is the one to the proxy: its failure is the proxy's
        return proxy_failure(proxy, f"{type(exc).__name__}: {said}")
    if isinstance(exc, errors.InvalidStatus):
        response = _response_of(exc)
        headers: Mapping[str, str] = {k.lower(): v for k, v in response.headers.raw_items()}
        return error_from(response.status_code, headers, bytes(response.body or b""), model_id=core.model_id)
    if isinstance(exc, TimeoutError):
        return APITimeoutError(
            f"{core.model_id}: no WebSocket handshake with {host}"
            f"{'' if proxy is None else ' through the proxy ' + proxy.shown} within {core.open_timeout:g}s",
            request_sent=False,
        )
    if isinstance(exc, OSError):
        return APIConnectionError(f"{core.model_id}: cannot connect to {host}: {said}", request_sent=False)
    return APIConnectionError(f"{core.model_id}: the WebSocket handshake with {host} failed: {said}", retryable=False)


def _response_of(exc: BaseException) -> _Response:
    """``exc.response`` of an ``InvalidStatus`` or ``InvalidProxyStatus`` (their classes are loaded by name)."""
    failed: Any = exc
    response: _Response = failed.response
    return response


def close_of(exc: BaseException) -> tuple[int | None, str]:
    """The close code and reason of a ``ConnectionClosed`` (the server's, else the one we sent on a
    failure); for any other exception, no code and what it says."""
    if not isinstance(exc, websockets_module("exceptions").ConnectionClosed):
        return None, f"{type(exc).__name__}: {exc}"
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is not None:
        return int(rcvd.code), str(rcvd.reason)
    sent = getattr(exc, "sent", None)
    if sent is not None and int(sent.code) not in (1000, 1001):
        return int(sent.code), str(sent.reason)
    return None, ""
