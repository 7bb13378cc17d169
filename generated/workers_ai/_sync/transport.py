"""The seam between the client and the network: ``Transport.send`` returns our own :class:`Response`.

Everything above this module sees only :class:`Response` (status, headers, a bounded body reader) and
the errors of :mod:`.errors`; urllib3 stays in here. An asyncio transport (a later client) plugs in at
the same place with the same shape (``send`` and the reader methods awaitable); the retry, deadline and
decoding rules above it are plain functions that do no I/O themselves.

Deadlines: ``send`` takes a monotonic ``deadline`` for connecting, sending and reading the headers;
every later read takes its own deadline. Each socket read waits at most until that deadline (the
socket timeout is set to the time left before every read, by the connections of :mod:`.connections`),
so a server dripping one byte at a time cannot stretch a call. Sizes: ``read_all(limit)`` refuses a
declared length over the limit before reading and stops reading one byte past it; the connection is then
closed, never pooled.
"""

from __future__ import annotations

import math
import os
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import urllib3
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.util.retry import Retry
from urllib3.util.url import parse_url

from .._core.network import Network
from .._core.options import DEFAULT_MAX_CONNECTIONS
from .._error_base import APIConnectionError, APITimeoutError, ConfigurationError
from .connections import CURRENT_DEADLINE, POOLS, Deadline, socks_pools

__all__ = ["DEFAULT_MAX_CONNECTIONS", "Urllib3Response", "Urllib3Transport"]  # Response, Transport: typing only

_READ_STEP = 1 << 20  # an unknown-length body is read this much at a time (never one huge allocation)
_CHUNK = 64 * 1024
# No retries, no redirects: what urllib3 makes of ``retries=False, redirect=False``, made once rather than
# per request (it is only read; a failure raises at once).
_NO_RETRIES = Retry.from_int(False, redirect=False)
_TARGETS_MAX = 256  # URLs whose pool and request target are remembered (cleared when full)


# Under TYPE_CHECKING (as in ``_core.telemetry``): the seam a ``transport=`` object fills is checked by type
# checkers only; making Protocol classes would cost every import.
if TYPE_CHECKING:
    from typing import Protocol

    from .._core.proxies import ProxyURL
    from ..errors import ResponseTooLargeError

    class Response(Protocol):
        """A reply whose body has not been read yet.

        ``headers`` must look keys up case-insensitively. Every reader raises ``APITimeoutError`` when its
        deadline passes, ``APIConnectionError`` when the connection breaks and ``ResponseTooLargeError``
        over the limit; after any of them the connection is closed.
        """

        status: int
        headers: Mapping[str, str]

        def read_all(self, limit: int) -> bytes:
            """The whole body, at most ``limit`` bytes (more raises), by the deadline given to ``send``."""
            ...

        def read_chunk(self, deadline: float) -> bytes:
            """The next bytes of the body as they arrive (``b""`` at its end); waits until ``deadline`` at most."""
            ...

        def release(self) -> None:
            """Done with a body read to its end: the connection goes back to the pool."""
            ...

        def close(self) -> None:
            """Drop the connection (the rest of the body is never read)."""
            ...

    class Transport(Protocol):
        def send(
            self,
            method: str,
            url: str,
            headers: Mapping[str, str],
            body: bytes | None,
            *,
            deadline: float,
        ) -> Response:
            """Send one request and read the status line and headers by ``deadline`` (``time.monotonic()``).

            Raises ``APIConnectionError`` (``request_sent=False`` when the request surely did not reach the
            server), ``APITimeoutError`` and ``ConfigurationError`` (a request that is not valid HTTP).
            """
            ...

        def close(self) -> None: ...


# ---------------------------------------------------------------------- the urllib3 transport


class Urllib3Response:
    """:class:`Response` over a urllib3 response opened with ``preload_content=False``."""

    __slots__ = ("_deadline", "_decode", "_resp", "_via", "headers", "status")

    def __init__(
        self, resp: urllib3.BaseHTTPResponse, deadline: Deadline, decode: bool, via: ProxyURL | None = None
    ) -> None:
        self._resp = resp
        self._deadline = deadline
        self._decode = decode
        self._via = via  # the proxy the reply comes through: a broken-off reply names it
        self.status = resp.status
        self.headers: Mapping[str, str] = resp.headers

    def read_all(self, limit: int) -> bytes:
        resp = self._resp
        length = None if self._decode else resp.length_remaining
        if length is not None and length > limit:
            self.close()
            raise _too_large(self.status, self.headers, f"declares {length:,} bytes")
        try:
            if length is not None:
                data = resp.read(length, decode_content=False) if length else b""
                if len(data) < length:  # urllib3 raises on a short body; this is only a second guard
                    self.close()
                    raise APIConnectionError(
                        f"connection failed: closed after {len(data):,} of {length:,} bytes (IncompleteRead)"
                    )
                resp.release_conn()  # the body is read to its end: the connection can serve the next call
                return data
            parts: list[bytes] = []
            total = 0
            while True:
                chunk = resp.read(min(_READ_STEP, limit + 1 - total), decode_content=self._decode)
                if not chunk:
                    resp.release_conn()
                    return b"".join(parts)
                parts.append(chunk)
                total += len(chunk)
                if total > limit:
                    self.close()
                    raise _too_large(self.status, self.headers, "is longer")
        except (ReadTimeoutError, TimeoutError) as exc:
            self.close()
            raise APITimeoutError(f"the reply body did not arrive in time ({_reason(exc)})") from None
        except (ProtocolError, HTTPError, OSError) as exc:
            self.close()
            raise APIConnectionError(
                f"connection failed while reading the reply{_through(self._via)}: {_reason(exc, self._via)}"
            ) from None

    def read_chunk(self, deadline: float) -> bytes:
        self._deadline.at = deadline
        try:
            return self._resp.read1(_CHUNK, decode_content=self._decode)
        except (ReadTimeoutError, TimeoutError):
            self.close()
            raise APITimeoutError("nothing arrived in time") from None
        except (ProtocolError, HTTPError, OSError) as exc:
            self.close()
            raise APIConnectionError(f"the reply broke off{_through(self._via)} ({_reason(exc, self._via)})") from None

    def release(self) -> None:
        self._resp.release_conn()

    def close(self) -> None:
        resp = self._resp
        try:
            resp.close()
        finally:
            resp.release_conn()  # the pool gets the closed connection back and reconnects when next used


_TRANSPORTS: weakref.WeakSet[Urllib3Transport] = weakref.WeakSet()


def _after_fork() -> None:
    for transport in list(_TRANSPORTS):
        transport._forget_pool()  # pyright: ignore[reportPrivateUsage]


os.register_at_fork(after_in_child=_after_fork)


class Urllib3Transport:
    """Keep-alive connection pools over urllib3; redirects and urllib3's own retries are off.

    ``max_connections`` kept-alive connections per host (more threads than that still work, each extra
    connection is closed after use). A forked child never uses its parent's connections: it starts a
    pool of its own. Replies are not decompressed unless ``decompress`` is set (the client then asks
    for gzip and the decoded size is capped like any other).
    """

    def __init__(
        self,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connect_timeout: float = 10.0,
        decompress: bool = False,
        network: Network | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.decompress = decompress
        self._connect_timeout = connect_timeout
        # Only a client that can use a proxy looks up a route per call; every other keeps one pool.
        self._route: Callable[[str], ProxyURL | None] | None = (
            network.proxy_for if network is not None and network.proxied else None
        )
        self._context = network.ssl_context() if network is not None else None
        if network is not None:
            for proxy in network.proxies:
                if proxy.is_socks:
                    socks_pools()  # PySocks missing: a ConfigurationError now, not on the first call
        self._pid = os.getpid()
        self._pool = self._new_pool()
        self._proxied: dict[str, urllib3.PoolManager] = {}  # proxy URL -> its manager
        self._targets: dict[str, tuple[HTTPConnectionPool, str]] = {}  # URL -> its direct pool, request target
        self._timeouts: dict[float, urllib3.Timeout] = {}
        _TRANSPORTS.add(self)

    def _new_pool(self) -> urllib3.PoolManager:
        extra: dict[str, Any] = {} if self._context is None else {"ssl_context": self._context}
        pool = urllib3.PoolManager(maxsize=self.max_connections, block=False, retries=False, **extra)
        pool.pool_classes_by_scheme = POOLS.copy()
        return pool

    def _proxy_pool(self, proxy: ProxyURL) -> urllib3.PoolManager:
        pool = self._proxied.get(proxy.url)
        if pool is not None:
            return pool
        extra: dict[str, Any] = {}
        if self._context is not None:
            extra["ssl_context"] = self._context
        if proxy.is_socks:
            from urllib3.contrib.socks import SOCKSProxyManager

            # socks5h and socks4a: the proxy resolves the target's name (the target may not resolve here).
            socks = cast(  # as a PoolManager: its pools are ours (socks_pools), not its own classes
                "urllib3.PoolManager",
                SOCKSProxyManager(
                    proxy.url,
                    username=proxy.username,
                    password=proxy.password,
                    maxsize=self.max_connections,
                    block=False,
                    retries=False,
                    **extra,
                ),
            )
            socks.pool_classes_by_scheme = socks_pools()
            pool = socks
        else:
            auth = proxy.basic_auth()
            if self._context is not None:
                extra["proxy_ssl_context"] = self._context  # an https:// proxy is checked against the same CAs
            # The credentials go only into Proxy-Authorization (on CONNECT for https targets); the URL
            # handed to urllib3 has none, so none of its messages can show them.
            pool = urllib3.ProxyManager(
                proxy.bare,
                proxy_headers={"Proxy-Authorization": auth} if auth else None,
                maxsize=self.max_connections,
                block=False,
                retries=False,
                **extra,
            )
            pool.pool_classes_by_scheme = POOLS.copy()
        self._proxied[proxy.url] = pool
        return pool

    def _forget_pool(self) -> None:
        # The inherited sockets belong to the parent: drop them unclosed (closing an inherited TLS
        # connection could disturb the parent's session) and start afresh.
        self._pid = os.getpid()
        self._pool = self._new_pool()
        self._proxied = {}
        self._targets = {}

    def _target(self, url: str) -> tuple[HTTPConnectionPool, str]:
        """The direct pool and request target of ``url``: what ``PoolManager.urlopen`` works out for every
        request (parsing the URL, building the pool's key), worked out once per URL. ``close()`` empties the
        table with the manager; a pool closed some other way is looked up again."""
        known = self._targets.get(url)
        if known is not None and known[0].pool is not None:
            return known
        parts = parse_url(url)
        known = (self._pool.connection_from_host(parts.host, parts.port, parts.scheme), parts.request_uri)
        if len(self._targets) >= _TARGETS_MAX:
            self._targets.clear()
        self._targets[url] = known
        return known

    def send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        deadline: float,
    ) -> Urllib3Response:
        if self._pid != os.getpid():
            self._forget_pool()
        left = deadline - time.monotonic()
        if left <= 0:
            raise APITimeoutError("the deadline passed before sending", request_sent=False)
        # Timeouts are cached in tenths of a second, rounded down (never past the deadline): urllib3
        # copies and checks a Timeout on every request, and a new one per call would add to that.
        key = math.floor(left * 10.0) / 10.0
        limits = self._timeouts.get(key) if key > 0 else None
        if limits is None:
            if len(self._timeouts) > 1000:
                self._timeouts.clear()
            limits = urllib3.Timeout(connect=min(self._connect_timeout, left), read=left)
            if key > 0:
                limits = self._timeouts[key] = urllib3.Timeout(connect=min(self._connect_timeout, key), read=key)
        limit = Deadline(deadline)
        via = None
        proxied = None
        route = self._route
        if route is not None:
            via = route(url)
            if via is not None:
                proxied = self._proxy_pool(via)
        current = CURRENT_DEADLINE
        outer, current.deadline = current.deadline, limit
        try:
            if proxied is None:
                # The pool itself, as PoolManager.urlopen would pick it (without its per-request lookup):
                # the body is already bytes and the headers a fresh dict.
                pool, target = self._target(url)
                resp = pool.urlopen(
                    method,
                    target,
                    body=body,
                    headers=headers,
                    timeout=limits,
                    preload_content=False,
                    decode_content=self.decompress,
                    redirect=False,
                    retries=_NO_RETRIES,
                    assert_same_host=False,
                )
            else:
                resp = proxied.urlopen(
                    method,
                    url,
                    body=body,
                    headers=headers,
                    timeout=limits,
                    preload_content=False,
                    decode_content=self.decompress,
                    redirect=False,
                    retries=_NO_RETRIES,
                )
        except ProxyError as exc:
            from .._core.proxies import proxy_failure, tunnel_status  # here and below: failures only

            raise proxy_failure(via, _reason(exc, via), tunnel_status(exc)) from None
        except NewConnectionError as exc:
            if via is not None:  # the connection to the proxy failed: name it, not the target
                from .._core.proxies import proxy_failure

                raise proxy_failure(via, _reason(exc, via)) from None
            raise APIConnectionError(f"could not connect: {_reason(exc)}", request_sent=False) from None
        except ConnectTimeoutError as exc:
            raise APITimeoutError(
                f"could not connect{_through(via)}: {_reason(exc, via)}", request_sent=False
            ) from None
        except SSLError as exc:
            from .._core.proxies import tls_failure

            raise tls_failure(url, _reason(exc, via), via) from None
        except (ReadTimeoutError, TimeoutError) as exc:
            raise APITimeoutError(f"no reply in time{_through(via)} ({_reason(exc, via)})") from None
        except (ProtocolError, HTTPError, OSError) as exc:
            from .._core.proxies import proxy_failure, tunnel_status

            reason = _reason(exc, via)
            status = tunnel_status(exc)
            if via is not None and status is not None:  # the proxy refused the CONNECT
                raise proxy_failure(via, reason, status) from None
            raise APIConnectionError(f"connection failed{_through(via)}: {reason}") from None
        except ValueError:
            # http.client rejects header values with control characters and quotes the value: keep it out.
            raise ConfigurationError("a request header value is not valid HTTP (check extra headers)") from None
        finally:
            current.deadline = outer
        return Urllib3Response(resp, limit, self.decompress, via)

    def close(self) -> None:
        self._targets = {}  # the managers drop their pools (closed when collected); so does the table
        self._pool.clear()
        for pool in self._proxied.values():
            pool.clear()


def _too_large(status: int, headers: Mapping[str, str], what: str) -> ResponseTooLargeError:
    from ..errors import ResponseTooLargeError

    return ResponseTooLargeError(
        f"the reply {what} than the client's max_response_bytes; it was not read",
        status=status,
        cf_ray=headers.get("cf-ray"),
    )


def _reason(exc: BaseException, via: ProxyURL | None = None) -> str:
    """urllib3's reason for a failure (it names host and cause, never request headers)."""
    reason = getattr(exc, "reason", None) or exc
    text = " ".join(str(reason).split())
    if via is not None:
        text = via.scrub(text)
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _through(via: ProxyURL | None) -> str:
    return "" if via is None else f" through the proxy {via.shown}"
