"""The sans-I/O core of a realtime session: every rule once, for the sync and the async driver.

It turns what the user does into frames to send (audio, control messages, KeepAlive when the stream
has been quiet), frames that arrive into typed events, and the way the connection ends into either
nothing (a clean end) or a :class:`~..errors.RealtimeError` that says what was sent and never
answered. It also keeps the deadlines: the drivers ask it how long they may wait. It never touches a
socket, a thread or an event loop.
"""

from __future__ import annotations

import importlib.util
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar
from urllib.parse import urlencode

import msgspec

from .._core.config import handshake_headers, run_url
from .._core.redact import is_secret_name
from .._core.telemetry import realtime_log, telemetry_of
from .._core.urls import model_path, segment
from ..errors import ConfigurationError, InputValidationError, RealtimeError, RealtimeTimeoutError
from ._spec import RawEvent, RealtimeSpec, tag_of

if TYPE_CHECKING:
    from .._core.config import SessionConfig
    from .._core.network import Network
    from .._core.telemetry import Call

__all__ = ["END", "Limits", "SessionBase", "SessionCore"]

E = TypeVar("E")
C = TypeVar("C")
END: Any = object()  # what a driver's reading gives once the connection ended

_ENCODE = msgspec.json.Encoder()
# Close codes that end a session cleanly (1000 normal, 1005 "no status" after a normal close).
_CLEAN = frozenset({1000, 1005})
# Sent, but the server answers only when asked (Speak text is spoken on Flush): no deadline of its own.
_UNPROMPTED = frozenset({"Speak"})


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds of one session. ``None`` fields take the client's options (see :meth:`resolved`).

    - ``max_frame_bytes``: the largest frame accepted (bigger: the session fails with 1009);
    - ``max_queue``: frames received and not yet read before the client stops reading the socket
      (backpressure on the server); ``write_limit``: bytes buffered for sending before ``send`` waits;
    - ``open_timeout``: the handshake; ``answer_timeout``: how long the server may stay silent while
      something sent is unanswered; ``close_timeout``: the drain after ``close()``;
    - ``ping_interval``/``ping_timeout``: WebSocket pings (no pong in time: the session fails).
    """

    max_frame_bytes: int | None = None
    max_queue: int = 64
    write_limit: int = 256 * 1024
    open_timeout: float | None = None
    answer_timeout: float | None = None
    close_timeout: float = 10.0
    ping_interval: float | None = 20.0
    ping_timeout: float | None = 20.0


def need_websockets() -> None:
    """Refuse a session where the ``realtime`` extra is missing, saying how to add it (before any
    session exists, so ``listen()`` and ``workers-ai listen`` fail where they are called)."""
    # Looked up, not imported: a session is built without loading websockets (it is imported on open).
    if importlib.util.find_spec("websockets") is None:
        raise ConfigurationError(
            "realtime sessions (listen, speak_live) need websockets: pip install 'workers-ai[realtime]'"
        )


class SessionCore:
    """State of one session; the drivers feed it and do what it says."""

    def __init__(
        self,
        client: SessionConfig,
        spec: RealtimeSpec,
        options: Mapping[str, Any] | msgspec.Struct,
        *,
        model_id: str | None = None,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        need_websockets()
        self.model_id = model_id or spec.model_id
        self.spec = spec
        self.options = spec.check_options(options, self.model_id)
        self.limits = limits or Limits()
        self.max_frame_bytes = self.limits.max_frame_bytes or client.max_event_bytes
        self.open_timeout = self.limits.open_timeout or client.timeout
        self.answer_timeout = self.limits.answer_timeout or client.stream_idle_timeout
        self.url = _ws_url(client, self.model_id, spec.query(self.options))
        self._headers = handshake_headers(client)
        # The same proxy and CA rule as the client's REST calls (websockets' own reading of the
        # environment is not used: it has no loopback rule).
        network: Network | None = getattr(client, "network", None)
        self.proxy = network.proxy_for(self.url) if network is not None else None
        self.ssl_context = network.ssl_context() if network is not None else None
        self._clock = clock
        self._last_sent = clock()
        self._since = self._last_sent
        self._unanswered: dict[str, int] = {}
        self.audio_bytes = 0
        self._flushes = 0  # Flush messages sent whose Flushed the reader has not taken yet
        self.close_sent = False
        self.ended = False
        self._telemetry = telemetry_of(client)
        self._call: Call | None = None
        self._failure: BaseException | None = None
        self._opened = 0.0

    def __repr__(self) -> str:
        return f"<SessionCore {self.model_id} {self.url}>"  # the URL never holds the token

    # ------------------------------------------------------------------ handshake

    @property
    def headers(self) -> dict[str, str]:
        """The handshake headers (the token travels here only)."""
        return dict(self._headers)

    @staticmethod
    def redact(name: str, value: str) -> str:
        return "[redacted]" if is_secret_name(name) else value

    # ------------------------------------------------------------------ what the user sends

    def audio(self, data: bytes | bytearray | memoryview) -> bytes:  # on every chunk's path: kept lean
        """An audio chunk as a binary frame."""
        if self.close_sent or self.ended:
            self._check_open("send audio")
        if not isinstance(data, (bytes, bytearray, memoryview)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InputValidationError(self.model_id, "audio", f"expected bytes, got {type(data).__name__}")
        frame = data if type(data) is bytes else bytes(data)  # the common case is not copied
        if not frame:
            # The protocol reads an empty binary frame as "end of stream": that is close(), not send().
            raise InputValidationError(self.model_id, "audio", "empty chunk (call close() to end the stream)")
        if len(frame) > self.max_frame_bytes:
            raise InputValidationError(self.model_id, "audio", f"chunk of {len(frame)} bytes is over max_frame_bytes")
        self._sent("audio", len(frame))
        self.audio_bytes += len(frame)
        return frame

    def text(self, text: str) -> str:
        """A ``Speak`` message (text to speech)."""
        self._check_open("send text")
        if not isinstance(text, str) or not text:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InputValidationError(self.model_id, "text", "expected a non-empty str")
        return self.control("speak", text=text)

    def control(self, name: str, **fields: Any) -> str:
        """A control message (``finalize``, ``close``, ``flush``, ``clear``, ``speak``) as a text frame."""
        template = self.spec.send.get(name)
        if template is None:
            raise ConfigurationError(f"{self.model_id} has no {name} message over WebSocket")
        if name == "close":
            self.close_sent = True
        else:
            self._check_open(name)
            if name == "flush":
                self._flushes += 1
        message = {**template, **fields}
        self._sent(str(template.get("type", name)), 1)
        return _ENCODE.encode(message).decode()

    def keepalive(self) -> str | bytes | None:
        """The frame to send now to keep a quiet stream open, or None (not due, or none for this model)."""
        every = self.spec.keepalive_seconds
        if every is None or self.close_sent or self.ended or self._clock() - self._last_sent < every:
            return None
        self._last_sent = self._clock()
        template = self.spec.send.get("keepalive")
        if template is not None:
            return _ENCODE.encode(template).decode()
        ms = self.spec.keepalive_silence_ms
        if ms is None:
            return None
        rate = int(getattr(self.options, "sample_rate", 16000) or 16000)
        return bytes(2 * rate * ms // 1000)  # linear16 silence; not counted as audio awaiting an answer

    def keepalive_wait(self) -> float | None:
        """Seconds until :meth:`keepalive` may have something to send (None: never)."""
        if self.spec.keepalive_seconds is None:
            return None
        return max(0.0, self._last_sent + self.spec.keepalive_seconds - self._clock())

    # ------------------------------------------------------------------ what the server sends

    def receive(self, data: bytes | str) -> Any:
        """A frame as an event: typed, ``bytes`` (audio of a speak session) or :class:`RawEvent`."""
        self._since = self._clock()
        if not isinstance(data, str):
            if self.spec.kind == "speak":
                return data  # websockets hands binary frames over as bytes
            return RawEvent("", data, f"binary frame of {len(data)} bytes where JSON text was expected")
        event = self.spec.decode(data)
        if self._unanswered:
            self._answered(event)
        return event

    def took(self, item: Any) -> Any:
        """The reader took ``item`` (by iterating, ``receive`` or ``poll``): a ``Flushed`` answers a Flush."""
        if self._flushes and tag_of(item) == "Flushed":
            self._flushes -= 1
        return item

    @property
    def flushing(self) -> bool:
        """Some Flush sent has no ``Flushed`` the reader took yet: ``until_flushed()`` reads on while so.

        Counted as the reader takes events, not as they arrive, so audio read ahead of the caller (the
        asyncio reader task's queue) is still delivered before the iteration ends."""
        return self._flushes > 0

    def _answered(self, event: Any) -> None:
        pending = self._unanswered  # on every event's path: look only for what is pending
        if self.spec.kind == "listen":
            pending.pop("audio", None)
            if "Finalize" in pending and getattr(event, "from_finalize", None):
                del pending["Finalize"]
            if "CloseStream" in pending and tag_of(event) == "Metadata":
                del pending["CloseStream"]
            return
        tag = tag_of(event)
        if tag == "Flushed":
            pending.pop("Flush", None)
            pending.pop("Speak", None)
        elif tag == "Cleared":
            pending.pop("Clear", None)
            pending.pop("Speak", None)

    # ------------------------------------------------------------------ deadlines and the end

    def answer_deadline(self) -> float | None:
        """Monotonic time by which the server must say something (None: nothing is awaiting an answer)."""
        if not any(name not in _UNPROMPTED for name in self._unanswered):
            return None
        return self._since + self.answer_timeout

    def unanswered(self) -> tuple[str, ...]:
        out: list[str] = []
        for name, count in self._unanswered.items():
            if name == "audio":
                out.append(f"{count} bytes of audio with no result")
            else:
                out.append(name if count == 1 else f"{count} x {name}")
        return tuple(out)

    def timed_out(self, what: str) -> RealtimeTimeoutError:
        pending = self.unanswered()
        told = f"; sent and not answered: {', '.join(pending)}" if pending else ""
        error = RealtimeTimeoutError(f"{self.model_id}: {what}{told}", model_id=self.model_id, unanswered=pending)
        self._failure = self._failure or error
        return error

    # ------------------------------------------------------------------ what a session leaves behind

    def opening(self) -> None:
        """The driver is about to connect: an INFO line, and the session's span (one per session)."""
        self._opened = time.monotonic()
        realtime_log.info("realtime %s: opening", self.model_id)
        tel = self._telemetry
        if tel is not None and self._call is None:
            self._call = tel.start(
                "generate_content", self.model_id, self.url, extra={"workers_ai.realtime.session": True}
            )

    def finished(self, error: BaseException | None = None) -> None:
        """The session is over (closed, dropped or refused): an INFO line and the span's end. Idempotent."""
        if self._opened == 0.0:
            return
        failure = error or self._failure
        seconds = time.monotonic() - self._opened
        self._opened = 0.0
        how = f"failed ({type(failure).__name__})" if failure is not None else "closed"
        realtime_log.info(
            "realtime %s: %s after %.1fs, %d audio bytes sent", self.model_id, how, seconds, self.audio_bytes
        )
        call, self._call = self._call, None
        if call is not None:
            call.end(error=failure, extra={"workers_ai.realtime.audio_bytes_sent": self.audio_bytes})

    def closed(self, code: int | None, reason: str) -> RealtimeError | None:
        """How the connection ended: None when cleanly, else the error to raise."""
        self.ended = True
        if code in _CLEAN and (self.close_sent or not self._unanswered or code == 1000):
            return None
        pending = self.unanswered()
        how = f"closed the session with {code}" if code is not None else "dropped the connection"
        if code == 1009:
            how += f" (a frame over max_frame_bytes={self.max_frame_bytes})"
        told = f"; sent and not answered: {', '.join(pending)}" if pending else "; nothing was awaiting an answer"
        text = f"{self.model_id}: the server {how}" + (f": {reason}" if reason else "") + told
        error = RealtimeError(text, model_id=self.model_id, close_code=code, close_reason=reason, unanswered=pending)
        self._failure = self._failure or error
        return error

    def _check_open(self, what: str) -> None:
        if self.close_sent or self.ended:
            raise RealtimeError(f"{self.model_id}: cannot {what}: the session is closing", model_id=self.model_id)

    def _sent(self, name: str, amount: int) -> None:
        now = self._clock()
        if not any(key not in _UNPROMPTED for key in self._unanswered):
            self._since = now
        self._unanswered[name] = self._unanswered.get(name, 0) + amount
        self._last_sent = now


def _ws_url(client: SessionConfig, model_id: str, query: list[tuple[str, str]]) -> str:
    """``wss://.../ai/run/{model}?options``; through AI Gateway's URL form ``.../workers-ai?model=...``."""
    gateway = client.gateway
    if gateway is not None and gateway.url_form:
        account = segment(gateway.account_id or client.account_id)
        model_path(model_id)  # checks the id
        base = f"{gateway.base_url.rstrip('/')}/{account}/{segment(gateway.id)}/workers-ai"
        query = [("model", model_id), *query]
    else:
        base = run_url(client, model_id)
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    return f"{base}?{urlencode(query, safe='@/')}" if query else base


class SessionBase(Generic[E, C]):
    """What the sync and asyncio sessions hold alike: the core, the connection ``C`` once open, events
    read ahead of the caller and the error that ended the session."""

    _opened_with: ClassVar[str] = "with"

    def __init__(
        self,
        client: SessionConfig,
        spec: RealtimeSpec,
        options: Mapping[str, Any] | msgspec.Struct,
        *,
        model_id: str | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.core = SessionCore(client, spec, options, model_id=model_id, limits=limits)
        self.model_id = self.core.model_id
        self._ws: C | None = None
        self._backlog: deque[Any] = deque()
        self._error: RealtimeError | None = None
        self._setup()

    def _setup(self) -> None:
        """The driver's own state (locks, queues), made when the session is."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.core.url}>"

    def _connected(self) -> C:
        if self._ws is None:
            raise RealtimeError(
                f"{self.model_id}: the session is not open (use it with `{self._opened_with}`)", model_id=self.model_id
            )
        return self._ws

    def _finished(self) -> Any:
        """END, or the error that ended the session (raised once)."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return END
