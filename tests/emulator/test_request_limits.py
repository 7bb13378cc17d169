"""The emulator refuses malformed and oversized requests the way a careful server does: an envelope
with a status and code (never silence, a hang or a traceback), and then it keeps serving."""

from __future__ import annotations

import socket

import pytest
from workers_ai.testing import Emulator

from tests.emulator._raw import BGE, connect, exchange, head, post, read_reply

WHISPER = "@cf/openai/whisper"
LIMIT = 10_000_000  # the documented batch payload limit, used for every request


def _still_serves(emu: Emulator) -> None:
    reply = exchange(emu.port, post(emu, b'{"text": "still here"}'))
    assert reply.status == 200 and reply.envelope()["success"] is True


@pytest.mark.parametrize(
    ("length", "shown"),
    [
        ("abc", "'abc'"),
        ("-1", "'-1'"),
        ("+5", "'+5'"),
        ("1e3", "'1e3'"),
        ("99999999999999999999999999", "out of range"),
        (str(2**63), "out of range"),
    ],
    ids=["letters", "negative", "signed", "float", "huge", "2^63"],
)
def test_a_bad_content_length_is_400_with_an_envelope(workers_ai_emulator: Emulator, length: str, shown: str) -> None:
    emu = workers_ai_emulator
    reply = exchange(emu.port, head(emu, length=length) + b'{"text": "a"}')
    assert reply.status == 400 and reply.headers["connection"] == "close"
    code, message = reply.error()
    assert code == 6003 and "Content-Length" in message and shown in message
    assert emu.requests == []  # refused before the API saw it
    _still_serves(emu)


def test_conflicting_content_lengths_are_400(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    reply = exchange(emu.port, head(emu, length="13", extra="Content-Length: 14\r\n") + b'{"text": "a"}')
    assert reply.status == 400 and "conflicting" in reply.error()[1]


def test_a_body_over_the_limit_is_413_3006_before_it_is_sent(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    with connect(emu.port) as sock:
        sock.sendall(head(emu, length=str(LIMIT + 1)))  # the head alone: the reply must not wait for the body
        reply = read_reply(sock)
    assert reply.status == 413 and reply.error() == (3006, "Request is too large")
    _still_serves(emu)


def test_an_oversized_body_sent_whole_still_gets_its_413(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    body = b'{"text": "' + b"a" * (LIMIT + 100) + b'"}'
    with connect(emu.port) as sock:
        sock.sendall(post(emu, body))  # the server drops the rest instead of resetting the connection
        reply = read_reply(sock)
    assert reply.status == 413 and reply.error()[0] == 3006


def test_a_body_at_the_limit_is_read(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    text = b"a" * (LIMIT - len(b'{"text": ""}'))
    reply = exchange(emu.port, post(emu, b'{"text": "' + text + b'"}'))
    assert reply.status == 200 and reply.envelope()["result"]["shape"] == [1, 1024]


def test_a_chunked_body_over_the_limit_is_413(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    with connect(emu.port) as sock:
        sock.sendall(head(emu, extra="Transfer-Encoding: chunked\r\n") + b"800000\r\n" + b"a" * 0x800000 + b"\r\n")
        sock.sendall(b"800000\r\n")  # 16 MiB declared in all
        reply = read_reply(sock)
    assert reply.status == 413 and reply.error()[0] == 3006


def test_a_chunked_body_under_the_limit_is_served(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    body = b'{"text": "chunked body"}'
    chunks = b"".join(f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n" for p in (body[:5], body[5:]))
    reply = exchange(emu.port, head(emu, extra="Transfer-Encoding: chunked\r\n") + chunks + b"0\r\nX-T: 1\r\n\r\n")
    assert reply.status == 200
    assert emu.requests[-1].json() == {"text": "chunked body"}


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"POST /x HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        (b"POST /x HTTP/1.1\r\nBad Header\r\n\r\n", 400),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST /x HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    ],
    ids=["request-line", "version", "header-line", "coding", "both-framings", "chunk-size", "huge-head"],
)
def test_malformed_requests_get_an_envelope(workers_ai_emulator: Emulator, data: bytes, status: int) -> None:
    reply = exchange(workers_ai_emulator.port, data)
    assert reply.status == status and reply.error()[0] == 6003
    _still_serves(workers_ai_emulator)


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        b'{"text": ' * 150 + b'"x"' + b"}" * 150,
    ],
    ids=["arrays-100000", "objects-100000", "objects-150"],
)
@pytest.mark.parametrize("model", [BGE, WHISPER])
def test_deeply_nested_json_is_400_5006(workers_ai_emulator: Emulator, body: bytes, model: str) -> None:
    emu = workers_ai_emulator
    reply = exchange(emu.port, post(emu, body, model=model, extra="Content-Type: application/json\r\n"))
    assert reply.status == 400
    code, message = reply.error()
    assert code == 5006 and message == "AiError: Bad input: /: the JSON is nested deeper than 100 levels"


def test_json_nested_within_the_limit_is_validated_normally(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    reply = exchange(emu.port, post(emu, b'{"text": ' + b"[" * 99 + b"]" * 99 + b"}"))  # 100 levels
    assert reply.status == 400
    code, message = reply.error()
    assert code == 5006 and message.startswith("AiError: Bad input: /text/0: [[") and "nested" not in message


@pytest.mark.parametrize("body", [b'{"text": "caf\xe9"}', b'{"text": "\xff\xfe"}', b'{"text": ["ok", "\xc3\x28"]}'])
def test_invalid_utf8_is_400_5006(workers_ai_emulator: Emulator, body: bytes) -> None:
    emu = workers_ai_emulator
    reply = exchange(emu.port, post(emu, body, extra="Content-Type: application/json\r\n"))
    assert reply.status == 400 and reply.error() == (5006, "AiError: Bad input: /: the body is not valid UTF-8")


def test_invalid_utf8_declared_as_json_is_refused_by_binary_models_too(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    as_json = exchange(
        emu.port, post(emu, b'{"audio": "\xff"}', model=WHISPER, extra="Content-Type: application/json\r\n")
    )
    assert as_json.status == 400 and as_json.error()[0] == 5006
    audio = exchange(emu.port, post(emu, b'"\xff\xfb\x90' + bytes(range(256)), model=WHISPER))  # raw audio: fine
    assert audio.status == 200 and audio.envelope()["result"]["text"]


def test_expect_100_continue_gets_an_interim_reply(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    body = b'{"text": "after continue"}'
    with connect(emu.port) as sock:
        sock.sendall(head(emu, length=str(len(body)), extra="Expect: 100-continue\r\n"))
        interim = sock.recv(25)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        reply = read_reply(sock)
    assert reply.status == 200 and emu.requests[-1].json() == {"text": "after continue"}


def test_pipelined_requests_are_answered_in_order(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    with connect(emu.port) as sock:
        sock.sendall(post(emu, b'{"text": "one"}') + post(emu, b'{"text": ""}') + post(emu, b'{"text": "three"}'))
        statuses = [read_reply(sock).status for _ in range(3)]
    assert statuses == [200, 400, 200]
    assert [r.json()["text"] for r in emu.requests] == ["one", "", "three"]


def test_http_10_closes_after_the_reply_unless_kept_alive(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    body = b'{"text": "old"}'
    request = head(emu, length=str(len(body))).replace(b"HTTP/1.1", b"HTTP/1.0", 1) + body
    with connect(emu.port) as sock:
        sock.sendall(request)
        reply = read_reply(sock)
        assert reply.status == 200 and reply.headers["connection"] == "close"
        assert sock.recv(1) == b""  # closed by the server
    kept = request.replace(b"\r\n\r\n", b"\r\nConnection: keep-alive\r\n\r\n", 1)
    with connect(emu.port) as sock:
        for _ in range(2):
            sock.sendall(kept)
            assert read_reply(sock).status == 200


def test_a_client_that_vanishes_mid_request_is_forgotten(workers_ai_emulator: Emulator) -> None:
    emu = workers_ai_emulator
    for cut in (10, 60):
        sock = connect(emu.port)
        sock.sendall(post(emu, b'{"text": "never finished"}')[:cut])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()  # reset mid-request
    _still_serves(emu)
    assert [r.json() for r in emu.requests] == [{"text": "still here"}]
