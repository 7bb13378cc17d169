"""The asyncio side of the transport seam: :class:`AsyncTransport` over aiohttp.

The same shape as :mod:`._transport` with awaitable ``send`` and readers, the same errors and the same
deadline and size rules, so the retry loop, envelope and decoding above it are shared with the sync
client. aiohttp was measured against httpx on this workload (docs/async.md, "Why aiohttp") and
chosen; it is imported only when the first request is sent, never by ``import workers_ai``.

Deadlines are monotonic times (``time.monotonic()``, which is also the event loop's clock): every
``send`` and every read is awaited under ``asyncio.timeout_at`` (3.11+) or ``asyncio.wait_for``.
A task cancelled mid-request closes its connection (it is never pooled half-read).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .._core.network import Network
from .._core.options import DEFAULT_MAX_CONNECTIONS
from .._core.proxies import ProxyURL, proxy_failure, tls_failure
from ..errors import APIConnectionError, APITimeoutError, ConfigurationError, ResponseTooLargeError

# aiohttp (and yarl) are imported by name at run time only: a type checker following our imports never
# loads them (or pydantic, which yarl's stubs reach) for a user who does not use the async client.
__all__ = ["AiohttpResponse", "AiohttpTransport", "bounded"]  # AsyncResponse, AsyncTransport: typing only

_CHUNK = 64 * 1024
_READ_STEP = 1 << 20
T = TypeVar("T")


# Under TYPE_CHECKING, as the sync seam's (see ``_sync.transport``).
if TYPE_CHECKING:
    import asyncio
    from typing import Protocol

    class AsyncResponse(Protocol):
        """:class:`~._transport.Response` with awaitable readers (same meaning, same errors)."""

        status: int
        headers: Mapping[str, str]

        async def read_all(self, limit: int) -> bytes: ...

        async def read_chunk(self, deadline: float) -> bytes: ...

        def release(self) -> None: ...

        def close(self) -> None: ...

    class AsyncTransport(Protocol):
        async def send(
            self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, *, deadline: float
        ) -> AsyncResponse: ...

        async def aclose(self) -> None: ...


# asyncio is imported on first use, never by ``import workers_ai`` (it costs tens of milliseconds).
if sys.version_info >= (3, 11):

    async def bounded(awaitable: Awaitable[T], deadline: float) -> T:
        """Await ``awaitable`` until ``deadline`` at most (``TimeoutError`` after it)."""
        import asyncio

        async with asyncio.timeout_at(deadline):
            return await awaitable

else:  # pragma: no cover - 3.10

    async def bounded(awaitable: Awaitable[T], deadline: float) -> T:
        import asyncio

        return await asyncio.wait_for(awaitable, max(0.0, deadline - time.monotonic()))


def _running_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    return asyncio.get_running_loop()


def _aiohttp() -> Any:
    try:
        return importlib.import_module("aiohttp")
    except ImportError:
        raise ConfigurationError("AsyncWorkersAI needs aiohttp: pip install 'workers-ai[async]'") from None


def _reason(exc: BaseException, via: ProxyURL | None = None) -> str:
    text = " ".join(str(exc).split())
    if via is not None:
        text = via.scrub(text)
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _through(via: ProxyURL | None) -> str:
    return "" if via is None else f" through the proxy {via.shown}"


class AiohttpResponse:
    """:class:`AsyncResponse` over an aiohttp response whose body has not been read."""

    __slots__ = ("_deadline", "_resp", "_via", "headers", "status")

    def __init__(self, resp: Any, deadline: float, via: ProxyURL | None = None) -> None:
        self._resp = resp
        self._deadline = deadline
        self._via = via  # the proxy the reply comes through: a broken-off reply names it
        self.status = resp.status
        self.headers: Mapping[str, str] = resp.headers

    async def read_all(self, limit: int) -> bytes:
        resp = self._resp
        length = resp.content_length if "content-encoding" not in resp.headers else None
        if length is not None and length > limit:
            self.close()
            raise _too_large(self.status, self.headers, f"declares {length:,} bytes")
        try:
            if length is not None:
                if resp.content.is_eof():  # the whole body is in already (the usual small reply): no timer
                    whole: bytes = await resp.read()
                    return whole
                body: bytes = await bounded(resp.read(), self._deadline)
                return body  # reads to the end, then pools the connection
            parts: list[bytes] = []
            total = 0
            content = resp.content
            while True:
                chunk = await bounded(content.read(min(_READ_STEP, limit + 1 - total)), self._deadline)
                if not chunk:
                    resp.release()
                    return b"".join(parts)
                parts.append(chunk)
                total += len(chunk)
                if total > limit:
                    self.close()
                    raise _too_large(self.status, self.headers, "is longer")
        except TimeoutError:
            self.close()
            raise APITimeoutError("the reply body did not arrive in time") from None
        except (OSError, _aiohttp().ClientError) as exc:
            self.close()
            raise APIConnectionError(
                f"connection failed while reading the reply{_through(self._via)}: {_reason(exc, self._via)}"
            ) from None
        except BaseException:  # cancelled: the connection is half-read, never pool it
            self.close()
            raise

    async def read_chunk(self, deadline: float) -> bytes:
        try:
            return await bounded(self._resp.content.readany(), deadline)
        except TimeoutError:
            self.close()
            raise APITimeoutError("nothing arrived in time") from None
        except (OSError, _aiohttp().ClientError) as exc:
            self.close()
            raise APIConnectionError(f"the reply broke off{_through(self._via)} ({_reason(exc, self._via)})") from None
        except BaseException:
            self.close()
            raise

    def release(self) -> None:
        self._resp.release()

    def close(self) -> None:
        self._resp.close()


_INHERITED: list[Any] = []  # sessions a forked child inherited: never finalized in the child


class AiohttpTransport:
    """Keep-alive connections over one ``aiohttp.ClientSession`` (made on first use, in the running loop).

    At most ``max_connections`` connections per client; further calls wait for a free one (they still
    count against their deadline). Redirects are off, replies are not decompressed unless
    ``decompress`` is set. A client used from a new event loop or a forked child starts a new session.
    """

    def __init__(
        self,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connect_timeout: float = 10.0,
        decompress: bool = False,
        network: Network | None = None,
    ) -> None:
        if network is not None:
            for proxy in network.proxies:
                if proxy.is_socks:
                    raise ConfigurationError(
                        f"AsyncWorkersAI cannot use the SOCKS proxy {proxy.shown}: aiohttp has no SOCKS support; "
                        "use an http:// proxy, or WorkersAI with pip install 'urllib3[socks]'"
                    )
        # aiohttp's own reading of the environment stays off (trust_env=False): the proxy of each
        # request is ours (one rule with the sync client: the loopback rule, NO_PROXY's CIDR ranges).
        self._route: Callable[[str], ProxyURL | None] | None = (
            network.proxy_for if network is not None and network.proxied else None
        )
        self._network = network
        self._proxy_args: dict[str, dict[str, Any]] = {}  # proxy URL -> aiohttp's proxy keyword arguments
        self.max_connections = max_connections
        self.decompress = decompress
        self._connect_timeout = connect_timeout
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = os.getpid()
        self._urls: dict[str, Any] = {}  # URL string -> its parsed yarl.URL (parsing costs as much as sending)
        self._aiohttp: Any = None
        self._url_type: Any = None

    def _session_for(self, loop: asyncio.AbstractEventLoop) -> Any:
        session = self._session
        if session is not None and self._loop is loop and self._pid == os.getpid() and not session.closed:
            return session
        self._park_inherited()
        aiohttp = _aiohttp()  # a clear error when the extra is not installed
        self._aiohttp, self._url_type = aiohttp, importlib.import_module("yarl").URL
        # aiohttp's default context was made when aiohttp was imported: ours follows the environment
        # as it was when the client was made (SSL_CERT_FILE, or none of it with trust_env=False).
        context = self._network.env_context() if self._network is not None else None
        extra: dict[str, Any] = {} if context is None else {"ssl": context}
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0, ttl_dns_cache=300, **extra)
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout),
            auto_decompress=self.decompress,
            skip_auto_headers=("Content-Type",),
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
        )
        self._session, self._loop, self._pid = session, loop, os.getpid()
        return session

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, *, deadline: float
    ) -> AiohttpResponse:
        if deadline - time.monotonic() <= 0:
            raise APITimeoutError("the deadline passed before sending", request_sent=False)
        session = self._session
        if session is None or self._pid != os.getpid() or self._loop is not _running_loop():
            started = time.monotonic()
            session = self._session_for(_running_loop())
            # Importing aiohttp and making the session is the client's set-up, not a wait on the server:
            # it does not count against this call's deadline (a cold aiohttp import can take a second).
            deadline += time.monotonic() - started
        aiohttp = self._aiohttp
        target = self._urls.get(url)
        if target is None:
            try:
                target = self._url_type(url, encoded=True)  # sent exactly as built (segments are already encoded)
            except (ValueError, TypeError):
                raise ConfigurationError("the request URL is not valid") from None
            if len(self._urls) > 1024:
                self._urls.clear()
            self._urls[url] = target
        via = None
        route = self._route
        if route is not None:
            via = route(url)
        try:
            if via is None:
                request = session.request(method, target, data=body, headers=headers, allow_redirects=False)
            else:
                request = session.request(
                    method, target, data=body, headers=headers, allow_redirects=False, **self._proxy_kwargs(via)
                )
            resp = await bounded(request, deadline)
        except TimeoutError:
            raise APITimeoutError(f"no reply in time{_through(via)}") from None
        except aiohttp.ClientHttpProxyError as exc:  # the proxy answered the CONNECT with an error status
            reason = via.scrub(f"Tunnel connection failed: {exc.status} {exc.message}") if via else str(exc)
            raise proxy_failure(via, reason, exc.status) from None
        except aiohttp.ClientProxyConnectionError as exc:
            raise proxy_failure(via, _reason(exc, via)) from None
        except aiohttp.ClientSSLError as exc:
            raise tls_failure(url, _reason(exc, via), via) from None
        except aiohttp.ClientConnectorError as exc:
            if via is not None:
                raise proxy_failure(via, _reason(exc, via)) from None
            raise APIConnectionError(f"could not connect: {_reason(exc)}", request_sent=False) from None
        except aiohttp.ConnectionTimeoutError as exc:
            raise APITimeoutError(
                f"could not connect{_through(via)}: {_reason(exc, via)}", request_sent=False
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise APIConnectionError(f"connection failed{_through(via)}: {_reason(exc, via)}") from None
        except ValueError:
            raise ConfigurationError("a request header value is not valid HTTP (check extra headers)") from None
        return AiohttpResponse(resp, deadline, via)

    def _proxy_kwargs(self, via: ProxyURL) -> dict[str, Any]:
        args = self._proxy_args.get(via.url)
        if args is None:
            # The credentials go only into Proxy-Authorization (on CONNECT for https targets); the
            # URL aiohttp gets has none, so none of its messages can show them.
            args = {"proxy": self._url_type(via.bare)}
            auth = via.basic_auth()
            if auth is not None:
                args["proxy_headers"] = {"Proxy-Authorization": auth}
            self._proxy_args[via.url] = args
        return args

    def _park_inherited(self) -> None:
        """A forked child keeps its parent's session referenced forever instead of dropping it: its
        finalizers would close the inherited connections through the parent's event loop, whose epoll
        instance parent and child share, and so unregister the parent's sockets (its next call waits
        for a reply it never sees)."""
        if self._session is not None and self._pid != os.getpid():
            _INHERITED.append(self._session)
            self._session = None

    async def aclose(self) -> None:
        self._park_inherited()
        session, self._session = self._session, None
        if session is not None and not session.closed and self._pid == os.getpid():
            await session.close()


def _too_large(status: int, headers: Mapping[str, str], what: str) -> ResponseTooLargeError:
    return ResponseTooLargeError(
        f"the reply {what} than the client's max_response_bytes; it was not read",
        status=status,
        cf_ray=headers.get("cf-ray"),
    )
