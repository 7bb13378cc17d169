"""The emulator's WebSocket side: ``GET /ai/run/{model}`` with ``Upgrade: websocket`` for the models
whose schema has an ``x-realtime`` section, on the same port and event loop as REST.

The handshake is checked like a REST call (route, token, model, options) and refused with the REST
error envelope; accepted, the socket moves from its HTTP :class:`~._connection.Connection` to a
:class:`WsConnection`, framed by ``websockets``' Sans-I/O ``ServerProtocol`` (no framing written
here). What the model says is a deterministic script per kind (:mod:`._ws_scripts`): the same audio
or text always gives the same frames.

Faults, per session, with the header ``x-emulator-fault``:
``ws_close_1011; after=N`` (close 1011 after N client frames), ``ws_idle; seconds=S`` (close 1011
NET-0001 after S s without audio or KeepAlive; default 10), ``ws_slow_reader; delay=S`` (read the
client slowly: backpressure), ``ws_refuse; status=429; code=3040`` (refuse the handshake).
"""

from __future__ import annotations

import math
import selectors
import socket
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from .._core.jsonview import as_object
from ._catalog import Catalog
from ._connection import Connection, Loop
from ._http import Request
from ._records import RecordedRequest
from ._reply import Reply, error_reply
from ._routes import Route, route
from ._settings import Settings
from ._state import State
from ._ws_scripts import ListenScript, Out, Script, SpeakScript, TurnScript

__all__ = ["UpgradeReply", "is_upgrade", "upgrade"]

_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE
_OUT_LIMIT = 4 * 1024 * 1024  # bytes queued for a client that does not read: stop producing beyond this
_MAX_FRAME = 16 * 1024 * 1024


class UpgradeReply(Reply):
    """A handshake accepted: the connection becomes a WebSocket connection running ``script``.

    ``proto`` (a ``websockets`` ``ServerProtocol``) has read the handshake and ``response`` is its answer.
    """

    def __init__(
        self, request: Request, script: Script, faults: dict[str, dict[str, float]], proto: Any, response: Any
    ) -> None:
        super().__init__(101)
        self.request = request
        self.script = script
        self.faults = faults
        self.proto = proto
        self.response = response

    def take_over(self, conn: Connection, loop: Loop) -> None:
        """Hand ``conn``'s socket to a new :class:`WsConnection` (on the loop thread)."""
        sock = conn.sock
        conn.state = "closed"
        loop.forget(conn)
        ws = WsConnection(sock, loop, self)
        loop.adopt(ws)
        try:
            ws.start()
        except BaseException:
            ws.close()  # the socket is no longer conn's: it must not stay open with nobody serving it
            raise


def is_upgrade(request: Request) -> bool:
    return request.headers.get("upgrade", "").lower() == "websocket"


def upgrade(request: Request, catalog: Catalog, state: State, settings: Settings) -> Reply:
    """Check a WebSocket handshake like a REST call; an error reply refuses it, else an UpgradeReply."""
    path, _, query = request.target.partition("?")
    rec = RecordedRequest(request.method, path, query, dict(request.headers), b"")
    state.requests.add(rec)
    reply = _check(rec, request, catalog, settings)
    rec.status = reply.status
    reply.headers += [("server", "workers-ai-emulator"), ("cf-ray", "0000000000000000-EMU")]
    return reply


def _check(rec: RecordedRequest, request: Request, catalog: Catalog, settings: Settings) -> Reply:
    params = parse_qsl(rec.query, keep_blank_values=True)
    parts = rec.path.strip("/").split("/")
    if len(parts) == 4 and parts[0] == "v1" and parts[3] == "workers-ai":  # AI Gateway: ?model=...
        where = Route("run", parts[1], next((v for k, v in params if k == "model"), None), True)
        params = [(k, v) for k, v in params if k != "model"]
    else:
        try:
            where = route(rec.path)
        except Exception:
            return error_reply(400, 7000, "No route for that URI")
    model_id = where.model_id
    if where.kind != "run":
        return error_reply(400, 7000, "No route for that URI")
    rec.model = model_id
    if request.headers.get("authorization") != f"Bearer {settings.api_token}":
        return error_reply(401, 10000, "Authentication error")
    if where.account != settings.account_id:
        return error_reply(
            404, 7003, "Could not route to /client/v4/accounts/..., perhaps your object identifier is invalid?"
        )
    spec = catalog.get(model_id or "")
    if spec is None:
        return error_reply(400, 5007, f"No such model {model_id} or task")
    section = as_object(spec.doc.get("x-realtime"))
    if section is None:
        return error_reply(400, 5006, f"{model_id} is not served over WebSocket")
    try:
        faults = _faults(request.headers.get("x-emulator-fault", ""))
    except ValueError:
        return error_reply(400, 5006, "Invalid input: a ws_ fault option in x-emulator-fault is not a finite number")
    refuse = faults.get("ws_refuse")
    if refuse is not None:
        rec.fault = "ws_refuse"
        return error_reply(
            int(refuse.get("status", 429)),
            int(refuse.get("code", 3040)),
            "Capacity temporarily exceeded, please try again.",
        )
    try:
        options = _options(section, params)
    except ValueError as exc:
        return error_reply(400, 5006, f"Invalid input: {exc}")
    kind = section.get("kind")
    script: Script = (
        SpeakScript(options)
        if kind == "speak"
        else TurnScript(options)
        if "TurnInfo" in (as_object(section.get("events")) or {})
        else ListenScript(options)
    )
    return _handshake(request, script, faults)


def _handshake(request: Request, script: Script, faults: dict[str, dict[str, float]]) -> Reply:
    """The handshake as ``websockets`` reads it (its ``ServerProtocol`` frames the session): an
    UpgradeReply, or an error reply where it cannot accept what our HTTP reader did."""
    from websockets.http11 import Request as WsRequest
    from websockets.server import ServerProtocol

    proto = ServerProtocol(max_size=_MAX_FRAME)
    head = f"{request.method} {request.target} HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in request.headers.items()
    )
    proto.receive_data((head + "\r\n").encode("latin-1"))
    events = proto.events_received()
    if not events or not isinstance(events[0], WsRequest):
        return error_reply(400, 6003, "Invalid request: not a WebSocket handshake websockets can read")
    response = proto.accept(events[0])
    if response.status_code != 101:
        reason = bytes(response.body or b"").decode("utf-8", "replace").strip()
        return error_reply(response.status_code, 6003, f"Invalid request: {reason}")
    return UpgradeReply(request, script, faults, proto, response)


def _faults(header: str) -> dict[str, dict[str, float]]:
    """The ``ws_`` faults of an ``x-emulator-fault`` header; ValueError for an option that is not a finite number."""
    out: dict[str, dict[str, float]] = {}
    for part in header.split(","):
        name, *opts = [p.strip() for p in part.split(";")]
        if name.startswith("ws_"):
            out[name] = {k.strip(): float(v) for k, _, v in (o.partition("=") for o in opts if "=" in o)}
            if not all(math.isfinite(v) for v in out[name].values()):
                raise ValueError(f"{name}: options must be finite numbers")
    return out


def _options(section: Mapping[str, Any], params: list[tuple[str, str]]) -> dict[str, Any]:
    """Query parameters read by the section's option schema (types, enums, bounds, required)."""
    schema = as_object(section.get("options")) or {}
    props = as_object(schema.get("properties")) or {}
    out: dict[str, Any] = {}
    for name, text in params:
        prop = as_object(props.get(name))
        if prop is None:
            raise ValueError(f"unknown parameter {name!r}")
        value = _typed(prop, text, name)
        out[name] = [*out[name], value] if name in out and isinstance(out[name], list) else value
    required: list[Any] = list(schema.get("required") or [])
    for name in required:
        if name not in out:
            raise ValueError(f"missing required parameter {name!r}")
    return out


def _typed(prop: Mapping[str, Any], text: str, name: str) -> Any:
    members: list[Any] = list(prop.get("anyOf") or [])
    kinds = [prop.get("type")] + [(as_object(p) or {}).get("type") for p in members]
    value: Any = text
    if "integer" in kinds and text.lstrip("-").isdigit():
        value = int(text)
    elif "number" in kinds:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} is not a number") from None
    elif "boolean" in kinds and text in ("true", "false"):
        value = text == "true"
    elif "string" not in kinds and "array" not in kinds and None not in kinds[1:]:
        raise ValueError(f"{name}={text!r} is not a {prop.get('type')}")
    enum = prop.get("enum")
    if enum is not None and value not in enum:
        raise ValueError(f"{name}={text!r} is not one of {enum}")
    low, high = prop.get("minimum"), prop.get("maximum")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{name}={text!r} is out of range")
    return value


# ---------------------------------------------------------------------------- the connection


class WsConnection(Connection):
    """A WebSocket connection on the emulator's loop: bytes in -> ServerProtocol -> script -> frames out."""

    def __init__(self, sock: socket.socket, loop: Loop, reply: UpgradeReply) -> None:
        super().__init__(sock, loop, 0)
        self.state = "busy"  # never "reading": the HTTP sweep leaves it alone
        self.proto = reply.proto
        self.script = reply.script
        self.faults = reply.faults
        self._response = reply.response
        self._target = reply.request.target
        self._buf = bytearray()
        self._received = 0
        self._paused = False
        self._last_input = time.monotonic()
        self._closing = False
        self._shut = False  # our side of the TCP stream is closed (the close handshake is under way)

    def start(self) -> None:
        """Answer the handshake and start the script (the first reading of the socket waits for the loop)."""
        self.proto.send_response(self._response)
        self._emit(self.script.opened())
        idle = self.faults.get("ws_idle", {}).get("seconds", 10.0)
        if self.script.idle_close:
            self._loop.later(min(idle, 1.0), lambda: self._idle_check(idle), self)

    @property
    def idle(self) -> bool:
        return False

    def _what(self) -> str:
        return f"WebSocket session GET {self._target[:300]}"

    def on_event(self, mask: int) -> None:
        if mask & _WRITE:
            self._pump_out()
        if mask & _READ and not self._paused and self.state != "closed":
            self._read()

    def _read(self) -> None:
        try:
            data = self.sock.recv(64 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        if not data:
            self.proto.receive_eof()
            self.close()
            return
        self.proto.receive_data(data)
        self._handle(self.proto.events_received())
        self._pump_out()
        self._pause_if_slow()

    def _handle(self, frames: list[Any]) -> None:
        from websockets.frames import Opcode

        for frame in frames:
            if self.state == "closed" or self._closing:
                return
            if frame.opcode == Opcode.BINARY:
                self._last_input = time.monotonic()
                self._count()
                self._emit(self.script.audio(bytes(frame.data)))
            elif frame.opcode == Opcode.TEXT:
                self._count()
                try:
                    msg: Any = msgspec.json.decode(frame.data)
                except msgspec.DecodeError:
                    msg = None
                message = as_object(msg)
                if message is None:
                    self._emit([("close", (1011, "DATA-0000: a text frame that is not a JSON object"))])
                    continue
                if message.get("type") == "KeepAlive":
                    self._last_input = time.monotonic()
                self._emit(self.script.message(message))

    def _pause_if_slow(self) -> None:
        """``ws_slow_reader``: after each read, stop reading the socket for ``delay`` seconds."""
        slow = self.faults.get("ws_slow_reader")
        if slow is not None and self.state != "closed":
            self._paused = True
            self._watch(_WRITE if self._buf else 0)
            self._loop.later(slow.get("delay", 0.1), self._resume, self)

    def _resume(self) -> None:
        self._paused = False
        if self.state != "closed":
            self._watch(_READ | (_WRITE if self._buf else 0))
            self._read()

    def _count(self) -> None:
        self._received += 1
        cut = self.faults.get("ws_close_1011")
        if cut is not None and self._received >= int(cut.get("after", 3)):
            self._emit([("close", (1011, "NET-0000: the upstream service failed"))])

    def _emit(self, out: list[Out]) -> None:
        for kind, payload in out:
            if self._closing or self.proto.state.name != "OPEN":
                # The client's close frame came first (the protocol answered it): RFC 6455 sends nothing
                # after a close, so the rest is dropped, the session's normal end.
                break
            if kind == "text":
                self.proto.send_text(msgspec.json.encode(payload))
            elif kind == "binary":
                self.proto.send_binary(payload)
            else:
                code, reason = payload
                self._closing = True
                self.proto.send_close(code, reason)
        self._pump_out()

    def _idle_check(self, idle: float) -> None:
        if self.state == "closed" or self._closing:
            return
        if time.monotonic() - self._last_input >= idle:
            self._emit([("close", (1011, "NET-0001: no audio or KeepAlive received for too long"))])
            return
        self._loop.later(min(idle, 1.0), lambda: self._idle_check(idle), self)

    def _pump_out(self) -> None:
        for chunk in self.proto.data_to_send():
            if chunk == b"":  # the protocol asks for the end of the TCP stream
                self._buf += b""
                self._closing = True
            else:
                self._buf += chunk
        while self._buf and self.state != "closed":
            try:
                sent = self.sock.send(self._buf[: 1024 * 1024])
            except (BlockingIOError, InterruptedError):
                self._watch((_READ if not self._paused and len(self._buf) < _OUT_LIMIT else 0) | _WRITE)
                return
            except OSError:
                self.close()
                return
            del self._buf[:sent]
        if self.state == "closed":
            return
        if self.proto.close_expected() or (self._closing and self.proto.state.name == "CLOSED"):
            self._finish_close()
            return
        self._watch(0 if self._paused else _READ)

    def _finish_close(self) -> None:
        if not self._shut:
            self._shut = True
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._loop.later(2.0, self.close, self)  # the client closes first; this is the backstop
        self._watch(_READ)
