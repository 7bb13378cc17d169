"""What a call leaves behind: log lines always, OpenTelemetry spans and metrics when the API is there.

The shared flows call this module (never the drivers), so ``WorkersAI`` and ``AsyncWorkersAI`` write
the same log lines and the same spans (docs/observability.md):

- **Logs** go to the ``workers_ai`` logger tree: ``workers_ai.http`` has one DEBUG line per HTTP attempt
  (from :func:`attempt_done`, called by the retry loop :func:`.exchange.exchange`); retries, rate-budget
  waits, batch states and realtime sessions are INFO; deprecations and ignored keys WARNING.
  ``WORKERS_AI_LOG=debug|info`` adds a stderr handler without code. Bodies are logged only with
  ``log_bodies=True`` (or ``WORKERS_AI_LOG_BODIES=1``), truncated.
- **Spans and metrics** (:mod:`.otel`, loaded with the ``opentelemetry`` API on a client's first call,
  never at ``import workers_ai``): :func:`telemetry_of` gives a client's :class:`~.otel.Telemetry`, or
  None when telemetry is off, the API is missing or no provider is configured; every caller then skips
  it. This module stays small: it is on every client's import path.

Never recorded: the token, header values, proxy passwords; message content only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from contextvars import ContextVar
    from typing import Protocol

    from .flow import Flow

T = TypeVar("T")

__all__ = [
    "active",
    "attempt_done",
    "batch_log",
    "env_log_bodies",
    "http_log",
    "log",
    "realtime_log",
    "telemetry_of",
]


# What the package uses of :mod:`.otel`'s ``Call`` and ``Telemetry`` (which check themselves against these
# two protocols). :mod:`.otel` is loaded by name (:func:`telemetry_of`) and never named in an import: a type
# checker follows imports even under ``TYPE_CHECKING``, so every user's check would parse it (and, before it
# loaded the API by name too, the opentelemetry API's 19 modules).
# Under TYPE_CHECKING: making a Protocol class costs every import, and nothing checks against them at runtime.
if TYPE_CHECKING:

    class Call(Protocol):
        """One operation's span and metrics (:class:`.otel.Call`)."""

        span: Any
        recording: bool

        def enter(self) -> Any: ...

        def leave(self, token: Any) -> None: ...

        def attempt(
            self,
            method: str,
            status: int | None,
            failure: BaseException | None,
            ms: float,
            number: int,
            ray: str | None,
        ) -> None: ...

        def first_chunk(self) -> None: ...

        def end(
            self,
            result: Any = None,
            *,
            error: BaseException | None = None,
            usage: Any = None,
            text: str | None = None,
            reasons: Sequence[str] = (),
            extra: Mapping[str, Any] | None = None,
        ) -> None: ...

    class Telemetry(Protocol):
        """A client's tracer, meter and instruments (:class:`.otel.Telemetry`)."""

        content_on_span: bool

        def unconfigured(self) -> bool: ...

        def operation_of(self, task: str, request: Any) -> str: ...

        def traced(
            self, call: Call, flow: Flow[T], facts: Callable[[T], Mapping[str, Any]] | None = None
        ) -> Flow[T]: ...

        def start(
            self,
            operation: str,
            model: str,
            url: str,
            *,
            request: Any = None,
            extra: Mapping[str, Any] | None = None,
            internal: bool = False,
            name: str | None = None,
        ) -> Call: ...


log = logging.getLogger("workers_ai")
http_log = logging.getLogger("workers_ai.http")
batch_log = logging.getLogger("workers_ai.batch")
realtime_log = logging.getLogger("workers_ai.realtime")
# A library's logger stays silent until the application configures logging (or WORKERS_AI_LOG asks): without
# a handler, Python's last-resort handler would print every WARNING, repeating what warnings.warn already says.
log.addHandler(logging.NullHandler())

BODY_LIMIT = 2048  # characters of a body in a DEBUG line (log_bodies=True)

# The call whose HTTP attempts the retry loop is running: a ContextVar made by :mod:`.otel` when it loads
# (None until then: no call can be current before a client has telemetry).
CURRENT: ContextVar[Call | None] | None = None


_ENV_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _env_logging() -> None:
    """``WORKERS_AI_LOG=debug|info|warning|error``: a stderr handler on the ``workers_ai`` logger, no code
    needed. Any other value is a ``WorkersAIWarning`` naming the allowed ones (once: this runs at import)."""
    given = os.environ.get("WORKERS_AI_LOG", "")
    level = given.strip().upper()
    if level not in _ENV_LEVELS:
        if level:
            from .._error_base import WorkersAIWarning
            from .warn import warn_user

            allowed = "|".join(v.lower() for v in _ENV_LEVELS)
            warn_user(f"WORKERS_AI_LOG={given!r} is not a log level and is ignored; use {allowed}", WorkersAIWarning)
        return
    if any(getattr(h, "_workers_ai_env", False) for h in log.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._workers_ai_env = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(level)


_env_logging()


def env_log_bodies() -> bool:
    """``WORKERS_AI_LOG_BODIES=1``: the ``log_bodies=True`` opt-in without code."""
    return os.environ.get("WORKERS_AI_LOG_BODIES", "").strip().lower() in ("1", "true", "yes", "on")


def _body_text(body: bytes | None) -> str:
    if not body:
        return "(empty)"
    try:
        text = body[: BODY_LIMIT * 4].decode("utf-8")
    except UnicodeDecodeError:
        return f"({len(body)} bytes, binary)"
    if len(text) > BODY_LIMIT or len(body) > BODY_LIMIT * 4:
        return f"{text[:BODY_LIMIT]}... ({len(body)} bytes, truncated)"
    return text


def _path(url: str) -> str:
    """What a log line shows of a URL: host and path (the model id), any password masked."""
    from .redact import mask_url  # here: only DEBUG lines need it

    return mask_url(url.split("://", 1)[-1])


def attempt_done(
    cfg: Any,
    method: str,
    url: str,
    status: int | None,
    failure: BaseException | None,
    started: float,
    attempt: int,
    headers: Mapping[str, str] | None,
    body: bytes | None,
    data: bytes | None,
) -> None:
    """One HTTP attempt is over (called by the retry loop, so both clients write the same line): a DEBUG
    line on ``workers_ai.http`` and an event on the current call's span. Cheap when neither is on."""
    current = CURRENT
    call = current.get() if current is not None else None
    if call is None and not http_log.isEnabledFor(logging.DEBUG):
        return
    ms = (time.monotonic() - started) * 1000.0
    ray = headers.get("cf-ray") if headers is not None else None
    outcome = str(status) if status is not None else f"failed ({type(failure).__name__})"
    if http_log.isEnabledFor(logging.DEBUG):
        http_log.debug(
            "%s %s -> %s in %.1f ms (attempt %d, cf-ray %s)", method, _path(url), outcome, ms, attempt + 1, ray
        )
        if getattr(cfg, "log_bodies", False):
            http_log.debug("request body: %s", _body_text(body))
            if data is not None:
                http_log.debug("response body: %s", _body_text(data))
    if call is not None:
        call.attempt(method, status, failure, ms, attempt + 1, ray)


# ---------------------------------------------------------------------------------------------- OpenTelemetry


class active:  # lower-case: used as a function, ``with active(call):``
    """``with active(call):`` the call is the current one inside the block (the retry loop reports its
    attempts to it); an error leaving the block (``GeneratorExit`` included: a closed flow) ends the call
    with that error. Ending it after a success is the caller's: with its result, later (a stream's call
    ends with the stream), or with attributes of its own. Every traced flow and the tool loop's
    ``execute_tool`` spans use it, so the enter/leave/end order is written once."""

    __slots__ = ("_call", "_token")

    def __init__(self, call: Call) -> None:
        self._call = call
        self._token: Any = None

    def __enter__(self) -> Call:
        self._token = self._call.enter()
        return self._call

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        self._call.leave(self._token)
        if error is not None:
            self._call.end(error=error)


_api_loaded: bool | None = None  # whether the opentelemetry API (and .otel) could be imported


def _api() -> bool:
    global _api_loaded
    if _api_loaded is None:
        try:
            import importlib

            importlib.import_module("opentelemetry.trace")
        except ImportError:
            _api_loaded = False
        else:
            _api_loaded = True
    return _api_loaded


def telemetry_of(cfg: Any) -> Telemetry | None:
    """The client's :class:`~.otel.Telemetry`, made on first use; None when telemetry is off, the API is
    missing, or neither a provider was passed nor a global one set yet (nothing would be recorded)."""
    got: Any = cfg.__dict__.get("_telemetry", False)
    if got is not False:
        tel: Telemetry | None = got
        return None if tel is None or tel.unconfigured() else tel
    opts = cfg.options
    made: Telemetry | None = None
    if opts.telemetry and _api():
        import importlib

        otel: Any = importlib.import_module(f"{__package__}.otel")
        made = otel.Telemetry(opts.tracer_provider, opts.meter_provider)
    cfg._telemetry = made
    return None if made is None or made.unconfigured() else made
