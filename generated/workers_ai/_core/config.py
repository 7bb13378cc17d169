"""A client's configuration, whichever I/O drives it (no I/O here): its options resolved and checked, the
headers every request sends, ``last_response``, the usage meter and the rate budget (:class:`SessionConfig`),
and the URLs of its calls. ``Session`` and ``AsyncSession`` add a transport and a driver (:mod:`.flow`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from types import FunctionType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

if TYPE_CHECKING:
    from os import PathLike
    from ssl import SSLContext

    from typing_extensions import Self, Unpack

    from .options import ClientOptionsDict

import msgspec

from .._error_base import APIConnectionError, APITimeoutError, ConfigurationError
from .accounting import UsageMeter
from .gateway import Gateway
from .network import Network
from .options import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    ClientOptions,
    constructor_doc,
)
from .ratelimit import RateBudget, RateLimit
from .retry import call_bound, check_seconds
from .telemetry import env_log_bodies
from .urls import check_account_id, check_base_url, model_path, segment

__all__ = ["DEFAULT_BASE_URL", "ResponseInfo", "SessionConfig", "api_url", "handshake_headers", "remember", "run_url"]

DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4"
_USER_AGENT = "workers-ai-python/0.1"
_log = logging.getLogger("workers_ai")  # the tree: workers_ai.http, .batch, .realtime (see .telemetry)
# The options a client's connections are made with: a ``with_options`` copy changing none shares them.
_CONNECTION_OPTIONS = frozenset({"transport", "max_connections", "compress", "proxy", "trust_env", "verify"})


class ResponseInfo(msgspec.Struct, frozen=True):
    """What the last reply said besides its result: status, ``messages`` and the ``cf-ray`` id."""

    status: int
    messages: list[Any]
    cf_ray: str | None
    headers: dict[str, str]


class _MadeWith:
    """The constructor call that made a client (what pickles and ``with_options`` copies call again); the
    repr hides the arguments, the token among them."""

    __slots__ = ("args", "kwargs")

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        return f"<constructor arguments: {', '.join(self.kwargs) or 'positional only'}>"


def _credentials(account_id: str | None, api_token: str | None) -> tuple[str, str, tuple[str, str]]:
    """The account id and token: as given, else from the environment; both required and well formed. And
    where each came from, for errors that name the cause (a 7003 or a 401): never the token's value."""
    sources = (
        "the account_id argument" if account_id else "CLOUDFLARE_ACCOUNT_ID",
        "the api_token argument" if api_token else "CLOUDFLARE_API_TOKEN",
    )
    account_id = account_id or os.environ.get("CLOUDFLARE_ACCOUNT_ID")
    api_token = api_token or os.environ.get("CLOUDFLARE_API_TOKEN")
    if not account_id:
        raise ConfigurationError("no account id: pass account_id= or set CLOUDFLARE_ACCOUNT_ID")
    if not api_token:
        raise ConfigurationError("no API token: pass api_token= or set CLOUDFLARE_API_TOKEN")
    if api_token != api_token.strip() or any(c in api_token for c in "\r\n\0"):
        # Never echo it: a token pasted from a file often carries a newline.
        raise ConfigurationError("the API token has surrounding whitespace or a line break; strip it first")
    return check_account_id(account_id, sources[0]), api_token, sources


def _check_counts(max_retries: int, max_connections: int, max_response_bytes: int, max_event_bytes: int) -> None:
    """Retries an int >= 0; connection and byte limits ints >= 1 (a bool is no count)."""
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError("max_retries must be an int >= 0")
    for name, value in (
        ("max_connections", max_connections),
        ("max_response_bytes", max_response_bytes),
        ("max_event_bytes", max_event_bytes),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"{name} must be an int >= 1")


def _base_url(base_url: str | None) -> str:
    """The API root: as given, else ``CLOUDFLARE_BASE_URL``, else Cloudflare's; checked before any token goes to it."""
    if base_url is None and os.environ.get("CLOUDFLARE_BASE_URL"):
        return check_base_url(os.environ["CLOUDFLARE_BASE_URL"], "CLOUDFLARE_BASE_URL")
    return check_base_url(base_url or DEFAULT_BASE_URL)


def _gateway(gateway: str | Gateway | None, account_id: str) -> Gateway | None:
    """``gateway=`` parsed; a header-routed gateway must be the client's account's, its id one line."""
    if gateway is None:
        return None
    parsed = Gateway.parse(gateway)
    if not parsed.url_form:
        if parsed.account_id not in (None, account_id):
            raise ConfigurationError("a gateway of another account needs Gateway(..., url_form=True)")
        if any(c in parsed.id for c in "\r\n\0"):
            raise ConfigurationError(f"gateway id {parsed.id!r} has a line break")
    return parsed


def _base_headers(token: str, gateway: Gateway | None, given: Mapping[str, Any]) -> dict[str, str]:
    """The headers every request sends, built once (a call only copies them): auth, agent, encoding, the
    gateway's, the user's (``headers=``) and the affinity key (``session_affinity=``)."""
    base = {
        "Authorization": f"Bearer {token}",
        "User-Agent": _USER_AGENT,
        "Accept": "*/*",
        "Accept-Encoding": "gzip" if given["compress"] else "identity",
    }
    if gateway is not None:
        base.update(gateway.headers())
    base.update(given["headers"] or {})
    if given["session_affinity"] is not None:
        from .affinity import affinity_header  # here: only clients that ask for it load it

        base.update(affinity_header(given["session_affinity"]))
    return base


class SessionConfig:
    """Configuration shared by every call, whichever transport sends it (sync :class:`Session` or
    ``AsyncSession``): options, URLs, headers, ``last_response``, the rate budget and the retry helpers.

    Picklable (:mod:`.pickling`): a copy is made with the same arguments, the token included, and opens
    its own connections and rate budget (a ``with_options`` copy shares them instead). ``rate_limit``
    paces each model's requests (:mod:`.ratelimit`).

    Deadlines: ``timeout`` bounds each attempt as a whole (connecting, sending, the headers and the
    entire body). Retries add at most ``max_retries`` attempts and waits of at most 60 s each, so one
    call lasts no longer than :attr:`call_bound` seconds. Streams use ``timeout`` until the headers,
    then ``stream_idle_timeout`` between events and ``stream_timeout`` (if set) for the whole stream.
    """

    __made_with: _MadeWith
    _sources: tuple[str, str]  # where the account id and the token came from (see _credentials)

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # Kept for pickles and ``with_options`` copies, which call the class again with it (:mod:`.pickling`,
        # loaded by the first of them).
        self = super().__new__(cls)
        self.__made_with = _MadeWith(args, dict(kwargs))
        return self

    # The signature is the table's (.options.OPTIONS), written out for type checkers; a test holds them equal.
    def __init__(
        self,
        account_id: str | None = None,
        api_token: str | None = None,
        *,
        base_url: str | None = None,
        gateway: str | Gateway | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Mapping[str, str] | None = None,
        transport: Any = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        stream_idle_timeout: float = 60.0,
        stream_timeout: float | None = None,
        compress: bool = False,
        session_affinity: str | None = None,
        rate_limit: RateLimit | RateBudget | str = "published",
        strict_inputs: bool = False,
        proxy: str | None = None,
        trust_env: bool = True,
        verify: str | PathLike[str] | SSLContext | None = None,
        telemetry: bool = True,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        log_bodies: bool = False,
    ) -> None:
        # Every option as given, by name; then one step per concern, in the order their errors are reported.
        given: dict[str, Any] = {k: v for k, v in locals().items() if k in ClientOptions.__struct_fields__}
        self.account_id, self.__token, self._sources = _credentials(account_id, api_token)
        _check_counts(max_retries, max_connections, max_response_bytes, max_event_bytes)
        if not isinstance(strict_inputs, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("strict_inputs must be True or False")
        self.strict_inputs = strict_inputs
        self.base_url = _base_url(base_url)
        self.gateway = _gateway(gateway, self.account_id)
        self._set_limits(given)
        self._base_headers = _base_headers(self.__token, self.gateway, given)
        self.usage = UsageMeter()
        self.log_bodies = bool(log_bodies) or env_log_bodies()  # DEBUG body lines (truncated), opt-in only
        self._local: Any = threading.local()  # the async session keeps `last` per task instead (its transport hook)
        self._connect(given)
        self.rate_budget = self._budget(rate_limit)
        given.update(base_url=self.base_url, gateway=self.gateway, timeout=self.timeout)  # as resolved
        given.update(stream_idle_timeout=self.stream_idle_timeout, stream_timeout=self.stream_timeout)
        given.update(headers=dict(headers) if headers is not None else None)  # a copy: the caller's stays theirs
        self.options = ClientOptions(**given)

    def _set_limits(self, given: Mapping[str, Any]) -> None:
        """The deadlines (checked: finite seconds above 0) and size caps every call reads."""
        self.timeout = check_seconds(given["timeout"], "timeout")
        self.max_retries: int = given["max_retries"]
        self.max_response_bytes: int = given["max_response_bytes"]
        self.max_event_bytes: int = given["max_event_bytes"]
        self.stream_idle_timeout = check_seconds(given["stream_idle_timeout"], "stream_idle_timeout")
        total = given["stream_timeout"]
        self.stream_timeout = None if total is None else check_seconds(total, "stream_timeout")

    def _connect(self, given: Mapping[str, Any]) -> None:
        """The proxy and CA rules (:class:`.network.Network`) and the transport made with them (none sends yet)."""
        transport, proxy, verify = given["transport"], given["proxy"], given["verify"]
        self.network = Network(proxy, given["trust_env"], verify)
        if transport is not None and (proxy is not None or verify is not None):
            raise ConfigurationError(
                "proxy= and verify= configure the built-in transport; a custom transport= makes its own connections"
            )
        if transport is None:
            self.network.ssl_context()  # a CA bundle that does not load fails here, not on the first call
        self._transport = self._new_transport(transport, given["max_connections"], given["compress"])
        self._owns_transport = True  # False on a ``with_options`` copy sharing another client's
        self._sleep: Callable[[float], None] = time.sleep

    def _budget(self, rate_limit: RateLimit | RateBudget | str) -> RateBudget:
        """This client's rate budget: a ``RateBudget`` passed in is copied with this client's task lookup."""
        if isinstance(rate_limit, RateBudget):
            return RateBudget(rate_limit.limit, scale=rate_limit.scale, task_of=self._task_of)
        return RateBudget(rate_limit, task_of=self._task_of)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A wrong keyword names the class the user called (``WorkersAI.__init__() got an unexpected
        # keyword argument 'retries'``), not this base: each client gets this one signature as its own.
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            init = SessionConfig.__init__
            own = FunctionType(init.__code__, init.__globals__, "__init__", init.__defaults__, init.__closure__)
            own.__kwdefaults__ = init.__kwdefaults__
            own.__annotations__ = init.__annotations__
            own.__doc__ = init.__doc__
            own.__qualname__ = f"{cls.__qualname__}.__init__"
            own.__module__ = cls.__module__
            cls.__init__ = own  # type: ignore[method-assign]

    def with_options(self, **changes: Unpack[ClientOptionsDict]) -> Self:
        """A client made like this one with some options changed (``ai.with_options(timeout=5)``), as
        openai-python's ``with_options`` is: it shares this client's connections, rate budget and
        ``usage``, so a copy per call is cheap and cannot escape the budget. Changing an option those
        depend on gives the copy its own (a connection option: its own connections; ``rate_limit`` or
        another account: its own budget). Closing a copy leaves the shared connections open; they
        belong to this client. An unknown option is a ``TypeError``."""
        from .pickling import with_options

        copy = with_options(self, **changes)
        copy._sources = (  # the copy is made with this client's values as arguments: keep where they came from
            copy._sources[0] if "account_id" in changes else self._sources[0],
            copy._sources[1] if "api_token" in changes else self._sources[1],
        )
        if _CONNECTION_OPTIONS.isdisjoint(changes):
            copy._adopt_transport(self._transport, self.network)
        if copy.account_id == self.account_id:
            copy.usage = self.usage
            if "rate_limit" not in changes:
                copy.rate_budget = self.rate_budget
        return copy

    def _adopt_transport(self, transport: Any, network: Network) -> None:
        # The copy's own transport was only just made (no sockets yet): dropped for the shared one, with the
        # proxy and CA rules it was made with, so the copy's realtime sessions and pickles follow them too.
        self._transport = transport
        self.network = network
        self._owns_transport = False

    def _task_of(self, model_id: str) -> str | None:
        """The task of ``model_id`` (for the rate budget's defaults); None when unknown."""
        return None

    def _pickle_overrides(self) -> dict[str, Any]:
        # What the constructor resolved from the environment travels too (the worker may not have it).
        return {"account_id": self.account_id, "api_token": self.__token, "base_url": self.base_url}

    def __reduce__(self) -> tuple[Any, ...]:
        if self.network.verify_is_context:
            # An ssl.SSLContext cannot be pickled, and the CA files it loaded cannot be read back from it.
            raise TypeError(
                f"a {type(self).__name__} made with verify=ssl.SSLContext cannot be pickled (a context does not "
                "pickle and its CA files cannot be recovered): pass verify='/path/to/ca.pem', which travels as a path"
            )
        from .pickling import reduce_client

        # The copy is made with the resolved values as arguments; where they came from travels as its state.
        return (*reduce_client(self), {"_sources": self._sources})

    def _constructor_kwargs(self) -> dict[str, Any]:
        """The constructor's arguments by name, with the values resolved at construction pinned."""
        from .pickling import constructor_kwargs

        return constructor_kwargs(self, self.__made_with.args, self.__made_with.kwargs)

    @property
    def call_bound(self) -> float:
        """The most seconds one call can take, retries and their waits included."""
        return call_bound(self.timeout, self.max_retries)

    # ------------------------------------------------------------------ last reply

    @property
    def last_response(self) -> ResponseInfo | None:
        """Status, ``messages`` and ``cf-ray`` of the last reply this thread received."""
        last: ResponseInfo | tuple[int, list[Any], Mapping[str, str]] | None = getattr(self._local, "last", None)
        if last is None or isinstance(last, ResponseInfo):
            return last
        status, messages, headers = last
        info = ResponseInfo(
            status=status,
            messages=messages,
            cf_ray=headers.get("cf-ray"),
            headers={k.lower(): v for k, v in headers.items()},
        )
        self._local.last = info
        return info

    def _headers(self, content_type: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = self._base_headers.copy()
        if content_type:
            headers["Content-Type"] = content_type
        if extra:
            headers.update(extra)
        return headers

    def _new_transport(self, transport: Any, max_connections: int, compress: bool) -> Any:
        raise NotImplementedError

    def _failure(self, exc: APIConnectionError, method: str, url: str, queued: bool) -> APIConnectionError:
        note = "; the batch may have been queued, so it was not re-sent" if queued and exc.request_sent else ""
        host = url.split("/")[2] if "://" in url else url
        from .redact import scrub  # here: only failures need it

        why = scrub(str(exc))  # a proxy's user:password@ in the transport's message is masked
        if isinstance(exc, APITimeoutError) and exc.request_sent:
            return APITimeoutError(f"{method} {host}: no complete reply within {self.timeout:g}s ({why}){note}")
        return type(exc)(f"{method} {host}: {why}{note}", request_sent=exc.request_sent, retryable=exc.retryable)

    def _log_retry(self, attempt: int, delay: float, method: str, url: str, why: str) -> None:
        from .redact import mask_url, scrub  # here: only retries need it

        # Logs name the URL and the reason only: never headers, so never the token.
        _log.info(
            "%s %s failed (%s); retry %d of %d in %.2fs",
            method,
            mask_url(url),
            scrub(why),
            attempt + 1,
            self.max_retries,
            delay,
        )


SessionConfig.__init__.__doc__ = constructor_doc(
    "Make a client. Every argument is optional: the account id and token (positional or by name) come from\n"
    "the environment when not given; the rest are keywords. The options are kept in ``ai.options``, and\n"
    "``ai.with_options(...)`` makes a copy with some of them changed."
)


def remember(session: SessionConfig, status: int, headers: Mapping[str, str], messages: list[Any]) -> None:
    """Keep what a reply said for ``session.last_response`` (this thread's, or this task's)."""
    # Kept raw: ``last_response`` builds the ResponseInfo only when someone asks (this is on every call's path).
    session._local.last = (status, messages, headers)  # pyright: ignore[reportPrivateUsage]


def run_url(session: SessionConfig, model_id: str) -> str:
    """The run URL of ``model_id``, the id checked and its segments encoded (slashes kept literal)."""
    gateway = session.gateway
    if gateway is not None and gateway.url_form:
        return gateway.url(session.account_id, model_id)
    return f"{session.base_url}/accounts/{segment(session.account_id)}/ai/run/{model_path(model_id)}"


def api_url(session: SessionConfig, path: str, query: Mapping[str, Any] | None = None) -> str:
    """The URL of an account API ``path`` (each segment encoded), with ``query`` (None values left out)."""
    parts = [segment(p) for p in path.strip("/").split("/")]
    url = f"{session.base_url}/accounts/{segment(session.account_id)}/{'/'.join(parts)}"
    if query:
        url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
    return url


def handshake_headers(session: SessionConfig) -> dict[str, str]:
    """The headers a WebSocket handshake sends (Authorization, gateway, user agent): never logged."""
    base = session._base_headers  # pyright: ignore[reportPrivateUsage]
    return {k: v for k, v in base.items() if k not in ("Accept", "Accept-Encoding")}
