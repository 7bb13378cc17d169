"""A client's options: :data:`OPTIONS`, the one table of them (name, type, default, what it does), where an
option is added. The forms type checkers need spelled out, the constructor's signature
(``SessionConfig.__init__``), ``ClientOptions`` (``ai.options``) and ``ClientOptionsDict`` (``with_options``),
are held to it by a test; ``help(WorkersAI)`` prints it (:func:`constructor_doc`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from .gateway import Gateway

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "OPTIONS",
    "ClientOptions",
    "constructor_doc",
]

# Kept-alive connections per host: matches 64 threads (or tasks) without "pool is full" warnings.
DEFAULT_MAX_CONNECTIONS = 64
# The largest real replies are embedding batches: 10,000 x 1024 floats as JSON come to about 215 MB.
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

# Every option of a client, in the constructor's order: (name, type as annotated, default, what it does).
# Plain tuples: a NamedTuple class would cost its making at every import.
OPTIONS: tuple[tuple[str, str, Any, str], ...] = (
    ("account_id", "str | None", None, "The account id (32 hex characters); default: CLOUDFLARE_ACCOUNT_ID."),
    ("api_token", "str | None", None, "An API token for Workers AI; default: CLOUDFLARE_API_TOKEN. Never shown."),
    ("base_url", "str | None", None, "The API's root; default: CLOUDFLARE_BASE_URL, else Cloudflare's (https only)."),
    ("gateway", "str | Gateway | None", None, "Calls through AI Gateway: '<id>', '<account>/<id>' or a Gateway."),
    ("timeout", "float", 60.0, "Seconds one attempt may take, from connecting to the last byte of the reply."),
    ("max_retries", "int", 2, "Attempts after the first, for connection failures and 408, 409, 429 and 5xx replies."),
    ("headers", "Mapping[str, str] | None", None, "Extra headers sent with every request."),
    ("transport", "Any", None, "An object that sends the requests instead of the built-in transport."),
    ("max_connections", "int", DEFAULT_MAX_CONNECTIONS, "Kept-alive connections per host."),
    ("max_response_bytes", "int", DEFAULT_MAX_RESPONSE_BYTES, "The largest reply body read (256 MiB)."),
    ("max_event_bytes", "int", DEFAULT_MAX_EVENT_BYTES, "The largest server-sent event or realtime frame (16 MiB)."),
    ("stream_idle_timeout", "float", 60.0, "Seconds a stream may go without an event (a realtime session: an answer)."),
    ("stream_timeout", "float | None", None, "Seconds a whole stream may last; None: no bound."),
    ("compress", "bool", False, "Ask for gzip-compressed replies (decompressed within the same size caps)."),
    ("session_affinity", "str | None", None, "Send x-session-affinity with every call (prompt caching)."),
    ("rate_limit", "RateLimit | RateBudget | str", "published",
     "Requests per minute per model: 'published', a number, {id: rpm}, a shared RateBudget, or None."),
    ("strict_inputs", "bool", False, "Refuse input keys a model's schema does not know, instead of warning."),
    ("proxy", "str | None", None, "A proxy URL every call goes through, whatever the environment says."),
    ("trust_env", "bool", True, "Read HTTPS_PROXY, NO_PROXY, ..., SSL_CERT_FILE and SSL_CERT_DIR."),
    ("verify", "str | PathLike[str] | SSLContext | None", None, "CAs to trust: a file, a folder, an SSLContext."),
    ("telemetry", "bool", True, "OpenTelemetry spans and metrics where opentelemetry-api is installed."),
    ("tracer_provider", "Any", None, "The OpenTelemetry TracerProvider to use instead of the global one."),
    ("meter_provider", "Any", None, "The OpenTelemetry MeterProvider to use instead of the global one."),
    ("log_bodies", "bool", False, "Log bodies (cut at 2,048 characters) at DEBUG; also WORKERS_AI_LOG_BODIES=1."),
)  # fmt: skip


def constructor_doc(summary: str) -> str:
    """``summary`` and one entry per option of :data:`OPTIONS` (what ``help(WorkersAI)`` shows)."""
    lines = [summary, "", "Parameters", "----------"]
    for name, kind, default, doc in OPTIONS:
        lines += [f"{name} : {kind}, default {default!r}", f"    {doc}"]
    return "\n".join(lines)


class ClientOptions(msgspec.Struct, frozen=True, kw_only=True):
    """A client's options as it resolved them (``ai.options``): each field is the constructor's option of
    that name (:data:`OPTIONS`, ``help(WorkersAI)``), with ``base_url`` read from the environment when not
    given, ``gateway`` parsed and the timeouts checked. The account id and token are not part of it (the
    token is never shown); ``rate_limit`` and ``verify`` are what was passed.
    """

    base_url: str
    gateway: Gateway | None = None
    timeout: float = 60.0
    max_retries: int = 2
    headers: Mapping[str, str] | None = None
    transport: Any = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    stream_idle_timeout: float = 60.0
    stream_timeout: float | None = None
    compress: bool = False
    session_affinity: str | None = None
    rate_limit: Any = "published"
    strict_inputs: bool = False
    proxy: str | None = None
    trust_env: bool = True
    verify: Any = None
    telemetry: bool = True
    tracer_provider: Any = None
    meter_provider: Any = None
    log_bodies: bool = False

    def _shown(self) -> Iterator[tuple[str, Any]]:
        """Each field as a person may see it: secret-named header values and a proxy's password masked."""
        from .redact import mask_headers, mask_url  # here: only a repr needs it

        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "headers" and value is not None:
                value = mask_headers(value)
            elif name == "proxy" and isinstance(value, str):
                value = mask_url(value)
            yield name, value

    def __repr__(self) -> str:
        return f"ClientOptions({', '.join(f'{name}={value!r}' for name, value in self._shown())})"

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        return list(self._shown())


if TYPE_CHECKING:
    from os import PathLike
    from ssl import SSLContext
    from typing import TypedDict

    from .ratelimit import RateBudget, RateLimit

    # For ``with_options(**changes: Unpack[ClientOptionsDict])``; a type checker's alone (a TypedDict costs
    # import time: one ForwardRef compiled per field).
    class ClientOptionsDict(TypedDict, total=False):
        """The keyword arguments of ``with_options``: the constructor's (:data:`OPTIONS`), each optional."""

        account_id: str | None
        api_token: str | None
        base_url: str | None
        gateway: str | Gateway | None
        timeout: float
        max_retries: int
        headers: Mapping[str, str] | None
        transport: Any
        max_connections: int
        max_response_bytes: int
        max_event_bytes: int
        stream_idle_timeout: float
        stream_timeout: float | None
        compress: bool
        session_affinity: str | None
        rate_limit: RateLimit | RateBudget | str
        strict_inputs: bool
        proxy: str | None
        trust_env: bool
        verify: str | PathLike[str] | SSLContext | None
        telemetry: bool
        tracer_provider: Any
        meter_provider: Any
        log_bodies: bool
