"""``ClientOptions``: every option of a client in one frozen value, and the keyword names it takes.

``WorkersAI(...)`` and ``AsyncWorkersAI(...)`` take these options as keyword arguments (one
signature, ``SessionConfig.__init__``, with every default), keep them as ``client.options`` and make a
configured copy with ``client.with_options(**changes)`` (see :mod:`.pickling`).
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
    "ClientOptions",
]

# Kept-alive connections per host: matches 64 threads (or tasks) without "pool is full" warnings.
DEFAULT_MAX_CONNECTIONS = 64
# The largest real replies are embedding batches: 10,000 x 1024 floats as JSON come to about 215 MB.
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024


class ClientOptions(msgspec.Struct, frozen=True, kw_only=True):
    """A client's options as it resolved them (``base_url`` from the environment, ``gateway`` parsed).

    The account id and token are not part of it (the token is never shown); ``rate_limit`` is what was
    passed (``"published"``, a number, a mapping or a ``RateBudget``).
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
    # Networks (docs/networks.md): an explicit proxy URL, whether the environment's proxy and CA
    # variables are read, and the CA bundle (file, folder or ssl.SSLContext) to trust.
    proxy: str | None = None
    trust_env: bool = True
    verify: Any = None
    # Observability (docs/observability.md): OpenTelemetry on/off and explicit providers; request and
    # response bodies in DEBUG log lines only when asked for (truncated).
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

    # For ``with_options(**changes: Unpack[ClientOptionsDict])``; a type checker's alone (a TypedDict costs
    # import time: one ForwardRef compiled per field).
    class ClientOptionsDict(TypedDict, total=False):
        """The keyword arguments of ``with_options``: the constructor's, each optional."""

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
        rate_limit: Any
        strict_inputs: bool
        proxy: str | None
        trust_env: bool
        verify: str | PathLike[str] | SSLContext | None
        telemetry: bool
        tracer_provider: Any
        meter_provider: Any
        log_bodies: bool
