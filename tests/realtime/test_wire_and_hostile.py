"""The handshake and frames byte for byte against a recording websockets server, and the client against
hostile WebSocket servers in a fenced process (address-space cap and deadline)."""

from __future__ import annotations

import base64
import hashlib
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.server import Server, ServerConnection, serve
from workers_ai import WorkersAI
from workers_ai.models.cf.deepgram.nova_3_live import Results

from tests._server import RawRequest
from tests._server import Server as RawServer
from tests.runtime._raw import run_client

TOKEN = "tok-SECRET-ws-123"


@pytest.fixture
def recorder() -> Iterator[tuple[Server, dict[str, Any]]]:
    seen: dict[str, Any] = {"frames": []}

    def handler(ws: ServerConnection) -> None:
        assert ws.request is not None
        seen["path"] = ws.request.path
        seen["headers"] = dict(ws.request.headers.raw_items())
        ws.send('{"type":"Brand New","n":1}')
        for message in ws:
            seen["frames"].append(message)
            if message == '{"type":"Finalize"}':
                ws.send(
                    '{"type":"Results","start":0,"duration":1,"is_final":true,"speech_final":true,"from_finalize":true,'
                    '"channel":{"alternatives":[{"transcript":"hi","confidence":0.9,"words":[]}]}}'
                )
            if message == '{"type":"CloseStream"}':
                ws.send('{"type":"Metadata","request_id":"r1"}')
                ws.close()

    with serve(handler, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield server, seen
        server.shutdown()


def test_handshake_and_frames_byte_for_byte(recorder: tuple[Server, dict[str, Any]]) -> None:
    server, seen = recorder
    port = server.socket.getsockname()[1]
    ai = WorkersAI(
        account_id="0123456789abcdef0123456789abcdef", api_token=TOKEN, base_url=f"http://127.0.0.1:{port}/client/v4"
    )
    with ai.model("@cf/deepgram/nova-3").listen(
        encoding="linear16", sample_rate=16000, interim_results=True, keyterm=["Cloudflare", "Workers AI"]
    ) as s:
        assert TOKEN not in repr(s) and TOKEN not in s.core.url
        s.send(b"\x01\x02\x03\x04")
        s.finalize()
        events = s.close()
    assert seen["path"] == (
        "/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/run/@cf/deepgram/nova-3"
        "?encoding=linear16&interim_results=true&keyterm=Cloudflare&keyterm=Workers+AI&sample_rate=16000"
    )
    assert seen["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert seen["headers"]["User-Agent"].startswith("workers-ai-python/")
    assert seen["frames"] == [b"\x01\x02\x03\x04", '{"type":"Finalize"}', '{"type":"CloseStream"}']
    assert [type(e).__name__ for e in events] == ["RawEvent", "Results", "Metadata"]
    assert isinstance(events[1], Results) and events[1].transcript == "hi"


def test_gateway_url_form(recorder: tuple[Server, dict[str, Any]]) -> None:
    from workers_ai import Gateway

    server, seen = recorder
    port = server.socket.getsockname()[1]
    gw = Gateway(id="gw1", base_url=f"http://127.0.0.1:{port}/v1", url_form=True, token="gw-secret")
    ai = WorkersAI(account_id="0123456789abcdef0123456789abcdef", api_token=TOKEN, gateway=gw)
    with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16") as s:
        s.close()
    assert (
        seen["path"]
        == "/v1/0123456789abcdef0123456789abcdef/gw1/workers-ai?model=@cf/deepgram/nova-3&encoding=linear16"
    )
    assert seen["headers"]["cf-aig-authorization"] == "Bearer gw-secret"


# ---------------------------------------------------------------------------- hostile servers


def _accept(conn: socket.socket, req: RawRequest) -> None:
    key = req.headers["sec-websocket-key"]
    digest = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    conn.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + digest + b"\r\n\r\n"
    )


def _frame(opcode: int, payload: bytes, declared: int | None = None) -> bytes:
    n = len(payload) if declared is None else declared
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


def _hold(conn: socket.socket, seconds: float = 30.0) -> bool:
    conn.settimeout(0.2)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if not conn.recv(65536):
                break
        except TimeoutError:
            continue
        except OSError:
            break
    return False


CLIENT = """
from workers_ai.models.cf.deepgram.nova_3_live import SPEC
from workers_ai.realtime import Limits, ListenSession
ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
def go():
    limits = Limits(open_timeout=3, answer_timeout=3, close_timeout=2, max_frame_bytes=1 << 20)
    with ListenSession(ai, SPEC, {"encoding": "linear16", "sample_rate": 16000}, limits=limits) as s:
        s.send(b"\\0" * 3200)
        return [type(e).__name__ + ":" + str(getattr(e, "error", "")) for e in s]
result = outcome(go)
"""


def _hostile(behaviour: Any) -> dict[str, Any]:
    def handler(conn: socket.socket, req: RawRequest) -> bool:
        behaviour(conn, req)
        return False

    with RawServer(handler) as server:
        return run_client(CLIENT, server, deadline=40)


def test_a_200_mb_frame_is_refused_within_memory() -> None:
    def send(conn: socket.socket, req: RawRequest) -> None:
        _accept(conn, req)
        try:
            conn.sendall(_frame(2, b"\0" * 65536, declared=200 * 1024 * 1024))
            for _ in range(200):
                conn.sendall(b"\0" * 65536)
        except OSError:
            pass

    found = _hostile(send)
    assert found["type"] == "RealtimeError" and "1009" in found["message"], found
    assert found["rss_kib"] < 300_000


SENDS_ON = """
from workers_ai.models.cf.deepgram.nova_3_live import SPEC
from workers_ai.errors import RealtimeError
from workers_ai.realtime import Limits, ListenSession
ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
def go():
    limits = Limits(open_timeout=3, answer_timeout=15, close_timeout=2, max_frame_bytes=1 << 20)
    with ListenSession(ai, SPEC, {"encoding": "linear16", "sample_rate": 16000}, limits=limits) as s:
        s.send(b"\\0" * 3200)
        try:
            for _ in s:
                pass
        except RealtimeError:
            pass  # the session failed: reading told it once
        s.send(b"\\0" * 3200)  # sending on must tell it again
result = outcome(go)
"""


def test_a_send_after_the_session_failed_names_the_failure_not_only_that_it_is_closing() -> None:
    """Sending on after the session failed over a 1009 frame: the error names 1009, not only "closing"."""

    def send(conn: socket.socket, req: RawRequest) -> None:
        _accept(conn, req)
        try:
            conn.settimeout(10)
            if not conn.recv(65536):  # the first audio frame (deflated, so small) is in: the first send went through
                return
            conn.sendall(_frame(2, b"\0" * 65536, declared=200 * 1024 * 1024))
            _hold(conn, 20)
        except OSError:
            pass

    with RawServer(lambda conn, req: send(conn, req) or False) as server:
        found = run_client(SENDS_ON, server, deadline=40)
    assert found["type"] == "RealtimeError" and "1009" in found["message"], found
    assert found["message"].startswith("@cf/deepgram/nova-3: cannot send audio: the server closed"), found


def test_a_server_that_never_answers_or_closes_hits_the_deadline() -> None:
    def silent(conn: socket.socket, req: RawRequest) -> None:
        _accept(conn, req)
        _hold(conn)

    found = _hostile(silent)
    assert found["type"] == "RealtimeTimeoutError", found
    assert "3200 bytes of audio with no result" in found["message"]


def test_garbage_json_and_binary_frames_become_raw_events() -> None:
    def garbage(conn: socket.socket, req: RawRequest) -> None:
        _accept(conn, req)
        conn.recv(65536)  # the client's audio first
        conn.sendall(_frame(1, b"{not json") + _frame(2, b"\x00\x01") + _frame(1, b"[1,2]") + _frame(8, b"\x03\xe8"))
        _hold(conn, 3)

    found = _hostile(garbage)
    assert found["ok"], found
    value = found["value"]
    assert "RawEvent:not JSON" in value and "RawEvent:binary frame of 2 bytes" in value
    assert "RawEvent:unknown message type" in value


def test_close_during_the_handshake_is_a_connection_error() -> None:
    def hang_up(conn: socket.socket, req: RawRequest) -> None:
        conn.close()

    found = _hostile(hang_up)
    assert found["type"] == "APIConnectionError" and "handshake" in found["message"], found


def test_a_refused_handshake_keeps_cloudflares_error_body() -> None:
    def refuse(conn: socket.socket, req: RawRequest) -> None:
        body = b'{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"result":null}'
        conn.sendall(
            b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncf-ray: abc-SJC\r\n"
            + b"content-length: %d\r\n\r\n" % len(body)
            + body
        )

    found = _hostile(refuse)
    assert found["type"] == "AuthenticationError" and "Authentication error" in found["message"], found


def test_debug_logs_never_show_the_token(
    recorder: tuple[Server, dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = recorder
    port = server.socket.getsockname()[1]
    ai = WorkersAI(
        account_id="0123456789abcdef0123456789abcdef", api_token=TOKEN, base_url=f"http://127.0.0.1:{port}/client/v4"
    )
    with caplog.at_level(logging.DEBUG, logger="workers_ai.realtime"):
        with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16") as s:
            s.close()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "Authorization: [redacted]" in text and TOKEN not in text


def test_import_does_not_load_websockets() -> None:
    code = (
        "import sys, workers_ai\n"
        "ai = workers_ai.WorkersAI(account_id='a' * 32, api_token='t')\n"
        "h = ai.model('@cf/deepgram/nova-3')\n"
        "s = h.listen(encoding='linear16')\n"  # built, not opened
        "print('websockets' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_unanswered_pings_end_the_session_with_a_clear_error() -> None:
    def deaf(conn: socket.socket, req: RawRequest) -> None:
        _accept(conn, req)
        _hold(conn, 20)  # reads everything, answers nothing (no pong)

    code = """
from workers_ai.models.cf.deepgram.nova_3_live import SPEC
from workers_ai.realtime import Limits, ListenSession
ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
def go():
    limits = Limits(ping_interval=0.3, ping_timeout=0.3, answer_timeout=30, close_timeout=1)
    with ListenSession(ai, SPEC, {"encoding": "linear16", "sample_rate": 16000}, limits=limits) as s:
        s.send(b"\\0" * 3200)
        return [type(e).__name__ for e in s]
result = outcome(go)
"""

    def handler(conn: socket.socket, req: RawRequest) -> bool:
        deaf(conn, req)
        return False

    with RawServer(handler) as server:
        found = run_client(code, server, deadline=40)
    assert found["type"] == "RealtimeError" and "1011" in found["message"], found
    assert "ping" in found["message"] and "3200 bytes of audio with no result" in found["message"]
