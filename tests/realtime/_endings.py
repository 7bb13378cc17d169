"""Realtime sessions that end at every step, and the realtime tests' sessions under load, each against an
Emulator in the calling process. ``tests/realtime/test_session_endings.py`` runs these in a fenced child
process (address-space limit and deadline) and asserts on the dict they return.

The raw client is ``websockets``' Sans-I/O ``ClientProtocol`` over a plain socket, so a test decides
exactly which bytes go out in one write: a ``Close`` message and the close frame back to back, audio
and a close frame together, a TCP reset in the middle of a session.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri
from workers_ai import AsyncWorkersAI
from workers_ai.testing import Emulator

AURA = "@cf/deepgram/aura-1"
NOVA = "@cf/deepgram/nova-3"
FLUX = "@cf/deepgram/flux"
SECOND = bytes(32000)  # one second of 16 kHz linear16 silence
_LISTEN = "?encoding=linear16&sample_rate=16000"

# model -> (query, frames the model answers with frames of its own, the message that ends a session)
SESSIONS: dict[str, tuple[str, list[str | bytes], str]] = {
    AURA: ("", ['{"type":"Speak","text":"hello there"}', '{"type":"Flush"}'], '{"type":"Close"}'),
    NOVA: (_LISTEN + "&interim_results=true&vad_events=true", [SECOND[:8000], SECOND], '{"type":"CloseStream"}'),
    FLUX: (_LISTEN, [SECOND, SECOND[:8000]], '{"type":"CloseStream"}'),
}


class RawClient:
    """One WebSocket session to ``model`` on the emulator, byte by byte."""

    def __init__(self, emu: Emulator, model: str, headers: dict[str, str] | None = None) -> None:
        query = SESSIONS[model][0]
        path = f"/client/v4/accounts/{emu.account_id}/ai/run/{model}{query}"
        self.proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{emu.port}{path}"))
        request = self.proto.connect()
        request.headers["Authorization"] = f"Bearer {emu.api_token}"
        for name, value in (headers or {}).items():
            request.headers[name] = value
        self.proto.send_request(request)
        self.handshake = b"".join(self.proto.data_to_send())
        self.sock = socket.create_connection(("127.0.0.1", emu.port), timeout=5)

    def open(self) -> None:
        self.sock.sendall(self.handshake)
        while self.proto.state.name == "CONNECTING":
            data = self.sock.recv(65536)
            assert data, "the emulator closed during the handshake"
            self.proto.receive_data(data)
        response = self.proto.events_received()[0]
        assert isinstance(response, Response) and response.status_code == 101, response

    def send(self, *frames: str | bytes, close: bool = False) -> None:
        """``frames`` (and a close frame) in one write: back to back, as a busy client's arrive."""
        for frame in frames:
            if isinstance(frame, str):
                self.proto.send_text(frame.encode())
            else:
                self.proto.send_binary(frame)
        if close:
            self.proto.send_close(1000)
        self.sock.sendall(b"".join(d for d in self.proto.data_to_send() if d))

    def read_to_end(self, answer: bool = True) -> int | None:
        """Read until the emulator ends the TCP stream; the close code it sent (None: no close frame)."""
        while True:
            data = self.sock.recv(65536)
            if not data:
                self.proto.receive_eof()
                break
            self.proto.receive_data(data)
            out = b"".join(d for d in self.proto.data_to_send() if d)  # pongs, the close echo
            if answer and out:
                self.sock.sendall(out)
        for event in self.proto.events_received():
            if isinstance(event, Frame) and event.opcode is Opcode.CLOSE:
                return struct.unpack("!H", event.data[:2])[0] if len(event.data) >= 2 else 1005
        return None

    def reset(self) -> None:
        """Close with a TCP reset instead of a FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def _clean(client: RawClient) -> str:
    code = client.read_to_end()
    client.sock.close()
    return f"closed {code}"


def _ending(name: str, client: RawClient, model: str) -> str:
    """End ``client``'s session the way ``name`` says; what the client saw."""
    _, talk, bye = SESSIONS[model]
    if name == "after connect":
        client.sock.close()
    elif name == "reset after connect":
        client.reset()
    elif name == "mid-handshake":
        client.sock.sendall(client.handshake[: len(client.handshake) // 2])
        client.sock.close()
    elif name in ("bad handshake", "infinite fault option"):
        # a header our reader takes and websockets' does not; a fault option no session can follow
        extra = b"X-Odd: a\x01b" if name == "bad handshake" else b"x-emulator-fault: ws_close_1011; after=inf"
        client.sock.sendall(client.handshake.replace(b"\r\n\r\n", b"\r\n" + extra + b"\r\n\r\n", 1))
        answer = client.sock.recv(65536)
        client.sock.close()
        return answer.split(b"\r\n", 1)[0].decode()
    else:
        client.open()
        if name == "after config":
            client.sock.close()
        elif name == "reset after config":
            client.reset()
        elif name == "close frame without Close":
            client.send(close=True)
            return _clean(client)
        elif name == "mid-audio":
            client.send(*talk, close=True)
            return _clean(client)
        elif name == "reset mid-audio":
            client.send(*talk)
            client.reset()
        elif name == "right after Close":
            client.send(*talk, bye, close=True)
            return _clean(client)
        elif name == "FIN right after Close":
            client.send(*talk, bye)
            client.sock.shutdown(socket.SHUT_WR)
            client.read_to_end(answer=False)
            client.sock.close()
        elif name == "reset right after Close":
            client.send(*talk, bye)
            client.reset()
        else:
            raise ValueError(name)
    return "gone"


ENDINGS = (
    "after connect",
    "reset after connect",
    "mid-handshake",
    "bad handshake",
    "infinite fault option",
    "after config",
    "reset after config",
    "close frame without Close",
    "mid-audio",
    "reset mid-audio",
    "right after Close",
    "FIN right after Close",
    "reset right after Close",
)


def _rest_served(emu: Emulator) -> bool:
    try:
        return emu.client(max_retries=0, timeout=10).model("@cf/baai/bge-m3").embed(text="x").shape == [1, 1024]
    except Exception:
        return False


def run_endings(rounds: int) -> dict[str, Any]:
    """Every ending for every model, ``rounds`` times; then whole sessions through the SDK."""
    seen: dict[str, set[str]] = {}
    failures: list[str] = []
    with Emulator() as emu:
        for _ in range(rounds):
            for model in SESSIONS:
                for name in ENDINGS:
                    try:
                        seen.setdefault(f"{model} {name}", set()).add(_ending(name, RawClient(emu, model), model))
                    except Exception as exc:
                        failures.append(f"{model} {name}: {type(exc).__name__}: {exc}")
            if not _rest_served(emu):
                failures.append("a REST request after the round was not served")
                break
        audio, text = 0, ""
        try:
            ai = emu.client(max_retries=0)
            with ai.model(AURA).speak_live() as speak:
                audio = sum(len(chunk) for chunk in speak.speak("hi"))
            with ai.model(NOVA).listen(encoding="linear16", sample_rate=16000) as listen:
                text = listen.transcribe(SECOND).text
        except Exception as exc:
            failures.append(f"whole sessions afterwards: {type(exc).__name__}: {exc}")
        time.sleep(0.2)  # a session's last bytes are handled
        errors = [str(e) for e in emu.errors]
    return {
        "seen": {k: sorted(v) for k, v in seen.items()},
        "failures": failures,
        "errors": errors,
        "audio": audio,
        "text": text,
    }


# ---------------------------------------------------------------------------- the tests' sessions under load


class Quit(Exception):
    """The user's code leaving a session early."""


def _early_exits(emu: Emulator) -> None:
    """Sessions left in the middle, the way user code leaves them: an exception in the ``with`` block
    (the close frame follows what was sent at once, while the server has frames to send)."""
    ai = emu.client(max_retries=0)
    try:
        with ai.model(AURA).speak_live() as s:
            s.send_text("hello there, general kenobi")
            s.flush()
            raise Quit
    except Quit:
        pass
    try:
        with ai.model(FLUX).listen(encoding="linear16", sample_rate=16000) as f:
            f.send(SECOND)
            raise Quit
    except Quit:
        pass

    async def leave_async() -> None:
        async with AsyncWorkersAI(
            account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_retries=0
        ) as client:
            async with client.model(AURA).speak_live() as a:
                async for _chunk in a.speak("leaving after the first chunk"):
                    break

    asyncio.run(leave_async())
    for model, name in ((AURA, "right after Close"), (FLUX, "mid-audio")):  # the same, byte by byte
        assert _ending(name, RawClient(emu, model), model) == "closed 1000"


def run_load(seconds: float) -> dict[str, Any]:
    """The realtime tests' sessions, one after another in a loop, beside sessions left early, REST
    clients and a CPU burner, for ``seconds`` (every loop at least twice)."""
    from tests.realtime import test_emulator_sessions as tests

    failures: list[str] = []
    rounds: Counter[str] = Counter()
    stop = threading.Event()
    with Emulator() as emu:
        here = Path(".")
        sessions: list[Callable[[], None]] = [
            lambda: tests.test_nova_sync_events_in_order_and_close_drains(emu),
            lambda: tests.test_flux_sync_turns(emu),
            lambda: tests.test_aura_sync_audio_and_control_events(emu, here),
            lambda: tests.test_async_sessions_for_each_model(emu),
            lambda: tests.test_close_1011_mid_stream_names_what_was_not_answered(emu),
            lambda: tests.test_refused_handshakes_raise_the_rest_errors(emu),
            lambda: tests.test_gateway_url_form_on_the_emulator(emu),
        ]

        def loop(name: str, step: Callable[[], object]) -> None:
            while not stop.is_set() or rounds[name] < 2:
                try:
                    step()
                except Exception as exc:
                    failures.append(f"{name}: {type(exc).__name__}: {exc}"[:500])
                    if len(failures) > 20:
                        return
                rounds[name] += 1

        def the_tests() -> None:
            for session in sessions:
                session()

        def burn() -> None:
            while not stop.is_set():
                sum(i * i for i in range(20_000))

        workers = [
            threading.Thread(target=loop, args=("the realtime tests' sessions", the_tests)),
            threading.Thread(target=loop, args=("sessions left early", lambda: _early_exits(emu))),
            threading.Thread(target=loop, args=("rest", lambda: _rest_served(emu) or 1 / 0)),
            threading.Thread(target=loop, args=("rest 2", lambda: _rest_served(emu) or 1 / 0)),
            threading.Thread(target=burn),
        ]
        for t in workers:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in workers:
            t.join(30)
        served = _rest_served(emu)
        errors = [str(e) for e in emu.errors]
    return {"rounds": dict(rounds), "failures": failures, "served": served, "errors": errors}
