"""The key behaviour tests, each run through ``WorkersAI`` and ``AsyncWorkersAI`` (one parametrised suite).

Against the emulator: the bytes on the wire, error mapping, retries with Retry-After, the per-attempt
deadline, size caps, validation with nothing sent, streaming and batches, token hygiene in errors and
logs. Against raw hostile servers, in a fenced child process (``run_client``: address-space limit and
a deadline): dripped bodies and headers, SSE idle and total timeouts, endless bodies and events.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest
from workers_ai import errors
from workers_ai.testing import Emulator

from tests.runtime._drivers import CHILD_PRELUDES, KINDS, Driver
from tests.runtime._raw import RawRequest, RawServer, head, run_client

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3-8b-instruct"


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def emu() -> Any:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


@pytest.fixture
def drive(kind: str, emu: Emulator) -> Driver:
    return Driver(kind, emu.account_id, emu.api_token, emu.base_url)


def _raises(drive: Driver, fn: Any, **options: Any) -> BaseException:
    with pytest.raises(errors.WorkersAIError) as info:
        drive.call(fn, **options)
    return info.value


# ---------------------------------------------------------------------- the wire


def test_the_same_bytes_go_on_the_wire(drive: Driver, emu: Emulator) -> None:
    out = drive.call(lambda ai: ai.model(BGE).embed(text=["a", "b"]))
    assert len(out.data) == 2 and out.shape == [2, 1024]
    (req,) = emu.requests
    assert (req.method, req.path) == ("POST", f"/client/v4/accounts/{emu.account_id}/ai/run/{BGE}")
    assert req.body == b'{"text":["a","b"]}'
    h = req.headers
    assert h["authorization"] == f"Bearer {emu.api_token}"
    assert h["content-type"] == "application/json"
    assert h["user-agent"] == "workers-ai-python/0.1"
    assert (h["accept"], h["accept-encoding"]) == ("*/*", "identity")
    assert int(h["content-length"]) == len(req.body)
    # Nothing else: no cookies, no library banner, no Expect or chunked framing.
    assert set(h) <= {"host", "authorization", "content-type", "user-agent", "accept", "accept-encoding",
                      "content-length", "connection"}, sorted(h)  # fmt: skip


def test_mapping_payloads_and_generic_run_decode_alike(drive: Driver) -> None:
    out = drive.call(lambda ai: ai.run(BGE, {"query": "q", "contexts": [{"text": "a"}, {"text": "b"}]}))
    assert type(out).__name__ == "QueryOutput" and len(out.response) == 2


def test_last_response_is_kept(drive: Driver) -> None:
    def go(ai: Any) -> Any:
        async_or_sync = ai.model(BGE).embed(text=["a"])

        async def then() -> Any:
            await async_or_sync
            return ai.last_response

        return then() if drive.kind == "async" else ai.last_response

    info = drive.call(go)
    assert info.status == 200 and info.cf_ray


# ---------------------------------------------------------------------- errors and retries


@pytest.mark.parametrize(
    ("fault", "cls", "status", "code"),
    [
        ("model_deprecated", errors.APIError, 410, 5028),
        ("internal_error", errors.InternalServerError, 500, 3043),
        ("success_false", errors.APIError, 200, 3043),
        ("daily_limit", errors.QuotaExceededError, 429, 3036),
    ],
)
def test_errors_map_to_the_same_classes(
    drive: Driver, emu: Emulator, fault: str, cls: type[errors.APIError], status: int, code: int
) -> None:
    emu.inject(fault, times=None, retry_after=0)
    exc = _raises(drive, lambda ai: ai.model(BGE).embed(text=["a"]), max_retries=0)
    assert isinstance(exc, cls) and exc.status == status and exc.code == code, repr(exc)
    assert emu.api_token not in str(exc) and emu.api_token not in repr(exc)


def test_html_error_pages_are_api_errors(drive: Driver, emu: Emulator) -> None:
    emu.inject("html_502", times=None)
    exc = _raises(drive, lambda ai: ai.model(BGE).embed(text=["a"]), max_retries=1)
    assert isinstance(exc, errors.APIError) and exc.status == 502
    assert len(emu.requests) == 2  # retried once, then raised


def test_retry_after_is_honoured_then_the_call_succeeds(
    drive: Driver, emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    emu.inject("rate_limit", times=2, retry_after=0.25)
    with caplog.at_level(logging.INFO, logger="workers_ai"):
        out = drive.call(lambda ai: ai.model(BGE).embed(text=["a"]), max_retries=2)
    assert len(out.data) == 1
    assert len(emu.requests) == 3
    # The server's wait, not the backoff (the rate budget, slowed by the 429s, may add to the second).
    assert len(drive.sleeps) == 2 and drive.sleeps[0] == 0.25 and drive.sleeps[1] >= 0.25, drive.sleeps
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 2 and "HTTP 429" in retries[0]
    assert all(emu.api_token not in r.getMessage() for r in caplog.records)


def test_a_wait_longer_than_the_cap_is_not_waited_for(drive: Driver, emu: Emulator) -> None:
    emu.inject("rate_limit", retry_after=3600)
    exc = _raises(drive, lambda ai: ai.model(BGE).embed(text=["a"]), max_retries=2)
    assert isinstance(exc, errors.RateLimitError) and exc.retry_after == 3600
    assert len(emu.requests) == 1 and drive.sleeps == []


def test_the_quota_is_never_retried(drive: Driver, emu: Emulator) -> None:
    emu.inject("daily_limit", times=3, retry_after=0)
    _raises(drive, lambda ai: ai.model(BGE).embed(text=["a"]), max_retries=2)
    assert len(emu.requests) == 1


def test_a_broken_reply_is_retried(drive: Driver, emu: Emulator) -> None:
    emu.inject("reset")
    out = drive.call(lambda ai: ai.model(BGE).embed(text=["a"]), max_retries=1)
    assert len(out.data) == 1 and len(emu.requests) == 2


# ---------------------------------------------------------------------- deadlines and size caps


def test_the_attempt_deadline_covers_a_slow_reply(drive: Driver, emu: Emulator) -> None:
    emu.inject("slow", times=None, delay=3)
    exc = _raises(drive, lambda ai: ai.model(BGE).embed(text=["a"]), timeout=0.3, max_retries=1)
    assert isinstance(exc, errors.APITimeoutError) and "0.3s" in str(exc)
    assert len(emu.requests) == 2


def test_a_reply_over_max_response_bytes_is_refused(drive: Driver) -> None:
    exc = _raises(drive, lambda ai: ai.model(BGE).embed(text=["a"] * 4), max_response_bytes=2000)
    assert isinstance(exc, errors.ResponseTooLargeError) and "max_response_bytes" in str(exc)


# ---------------------------------------------------------------------- validation before sending


@pytest.mark.parametrize(
    ("call", "path"),
    [
        (lambda ai: ai.model(BGE).rank(query="q", contexts=[{"text": 5}]), "$.contexts[0].text"),
        (lambda ai: ai.model(BGE).embed(text=[1]), "$.text[0]"),
        (lambda ai: ai.run(BGE, {"nothing": 1}), "$"),
        (lambda ai: ai.model(LLAMA).generate(prompt="x", temperature=99), "$.temperature"),
        (lambda ai: ai.model(LLAMA).generate_stream(prompt="x", temperature=99), "$.temperature"),
        (lambda ai: ai.model(BGE).batch([{"text": [1]}]), "$.requests[0]"),
    ],
)
def test_bad_input_raises_before_anything_is_sent(drive: Driver, emu: Emulator, call: Any, path: str) -> None:
    exc = _raises(drive, call)
    assert isinstance(exc, errors.InputValidationError) and exc.path.startswith(path), repr(exc)
    assert emu.requests == []


def test_bad_model_ids_are_refused_before_sending(drive: Driver, emu: Emulator) -> None:
    exc = _raises(drive, lambda ai: ai.run("@cf/../../user/tokens/verify", {"prompt": "x"}))
    assert isinstance(exc, errors.ConfigurationError)
    assert emu.requests == []


def test_bad_options_are_refused_at_construction(drive: Driver) -> None:
    for options in ({"timeout": 0}, {"max_retries": -1}, {"max_response_bytes": 0}, {"api_token": " t\n"}):
        with pytest.raises(errors.ConfigurationError):
            drive.call(lambda ai: None, **options)


# ---------------------------------------------------------------------- streams


def test_streams_give_the_same_events(drive: Driver, emu: Emulator) -> None:
    got = drive.call(lambda ai: drive.texts(ai.model(LLAMA).generate_stream(prompt="tell me")))
    sync = Driver("sync", emu.account_id, emu.api_token, emu.base_url)
    assert got == sync.call(lambda ai: sync.texts(ai.model(LLAMA).generate_stream(prompt="tell me")))
    assert "".join(got)
    assert emu.requests[0].body == b'{"prompt":"tell me","stream":true}'


def test_an_error_event_raises_its_mapped_class(drive: Driver, emu: Emulator) -> None:
    emu.inject("stream_error")
    exc = _raises(drive, lambda ai: drive.texts(ai.model(LLAMA).generate_stream(prompt="x")))
    assert isinstance(exc, errors.CapacityError) and exc.code == 3040


def test_a_stream_without_done_is_an_error(drive: Driver, emu: Emulator) -> None:
    emu.inject("stream_no_done")
    exc = _raises(drive, lambda ai: drive.texts(ai.model(LLAMA).generate_stream(prompt="x")))
    assert isinstance(exc, errors.StreamError) and "[DONE]" in str(exc)


# ---------------------------------------------------------------------- batches


def test_batch_submit_and_wait(drive: Driver, emu: Emulator) -> None:
    emu.inject("batch_item_error", item=1, message="this one failed")
    result = drive.call(
        lambda ai: drive.wait(ai.model(BGE).batch([{"text": ["a"]}, {"text": ["b"]}]), timeout=30, poll_interval=0.01)
    )
    assert [item.success for item in result.items] == [True, False]
    assert "this one failed" in (result.items[1].error or "")
    assert emu.requests[0].query == "queueRequest=true"


def test_a_failed_batch_raises(drive: Driver, emu: Emulator) -> None:
    emu.inject("batch_failed")
    exc = _raises(drive, lambda ai: drive.wait(ai.model(BGE).batch([{"text": ["a"]}]), timeout=30, poll_interval=0.01))
    assert isinstance(exc, errors.BatchError)


def test_embed_many_keeps_order(drive: Driver) -> None:
    texts = [f"text {i}" for i in range(7)]
    got = drive.call(lambda ai: ai.model(BGE).embed_many(texts, batch_size=3, poll_interval=0.01))
    direct = drive.call(lambda ai: ai.model(BGE).embed(text=texts))
    assert got == direct.data


def test_embed_many_checks_every_text_before_sending(drive: Driver, emu: Emulator) -> None:
    exc = _raises(drive, lambda ai: ai.model(BGE).embed_many(["a", ""]))
    assert isinstance(exc, errors.InputValidationError) and exc.path == "$.texts[1]"
    assert emu.requests == []


# ---------------------------------------------------------------------- hostile servers, fenced


def _drip(conn: socket.socket, data: bytes, server: RawServer, every: float = 0.2) -> None:
    for i in range(len(data)):
        if server.stop.is_set():
            return
        conn.sendall(data[i : i + 1])
        server.stop.wait(every)


def _forever(conn: socket.socket, piece: bytes, server: RawServer, every: float = 0.0) -> None:
    while not server.stop.is_set():
        conn.sendall(piece)
        if every:
            server.stop.wait(every)


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _sse_head() -> bytes:
    return head(200, "text/event-stream", Transfer_Encoding="chunked")


def _fenced(kind: str, code: str, server: RawServer) -> dict[str, Any]:
    return run_client(CHILD_PRELUDES[kind] + code, server, deadline=40)


def test_hostile_a_dripped_body_is_cut_at_the_deadline(kind: str) -> None:
    def drip(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(Content_Length=1000))
        _drip(conn, b"x" * 1000, server)
        return False

    with RawServer(drip) as server:
        result = _fenced(
            kind, 'result = drive(lambda ai: ai.run("@cf/acme/any", {"prompt": "x"}), timeout=1, max_retries=1)', server
        )
    assert result["type"] == "APITimeoutError", result
    assert len(server.requests) == 2


def test_hostile_dripped_headers_are_cut_at_the_deadline(kind: str) -> None:
    def drip(conn: socket.socket, req: RawRequest) -> bool:
        _drip(conn, b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 500 + b"\r\n\r\n", server)
        return False

    with RawServer(drip) as server:
        result = _fenced(
            kind, 'result = drive(lambda ai: ai.run("@cf/acme/any", {"prompt": "x"}), timeout=1, max_retries=0)', server
        )
    assert result["type"] == "APITimeoutError", result


def test_hostile_sse_comments_hit_the_idle_timeout(kind: str) -> None:
    def comments(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head() + _chunk(b'data: {"response": "hi"}\n\n'))
        _forever(conn, _chunk(b": still here\n"), server, every=0.2)
        return False

    with RawServer(comments) as server:
        result = _fenced(
            kind,
            f"""
got = []
result = drive(lambda ai: texts(ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True), got), stream_idle_timeout=1)
result["texts"] = got
""",
            server,
        )
    assert result["type"] == "APITimeoutError" and "stream_idle_timeout" in result["message"], result
    assert result["texts"] == ["hi"]


def test_hostile_a_stream_that_never_ends_hits_its_total_timeout(kind: str) -> None:
    def events(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head())
        _forever(conn, _chunk(b'data: {"response": "."}\n\n'), server, every=0.1)
        return False

    with RawServer(events) as server:
        result = _fenced(
            kind,
            f'result = drive(lambda ai: texts(ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True)), stream_timeout=1)',
            server,
        )
    assert result["type"] == "APITimeoutError" and "stream_timeout" in result["message"], result


def test_hostile_a_huge_content_length_is_refused_unread(kind: str) -> None:
    def huge(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(Content_Length=2_000_000_000))
        _forever(conn, b"x" * 65536, server)
        return False

    with RawServer(huge) as server:
        result = _fenced(kind, 'result = drive(lambda ai: ai.run("@cf/acme/any", {"prompt": "x"}))', server)
    assert result["type"] == "ResponseTooLargeError", result
    assert result["rss_kib"] < 200_000


def test_hostile_an_endless_chunked_body_stops_at_the_limit(kind: str) -> None:
    def endless(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(Transfer_Encoding="chunked") + _chunk(b'{"result": "'))
        _forever(conn, _chunk(b"a" * 65536), server)
        return False

    with RawServer(endless) as server:
        result = _fenced(
            kind,
            'result = drive(lambda ai: ai.run("@cf/acme/any", {"prompt": "x"}), max_response_bytes=8 << 20)',
            server,
        )
    assert result["type"] == "ResponseTooLargeError", result
    assert result["rss_kib"] < 200_000


def test_hostile_an_endless_sse_line_stops_at_the_event_limit(kind: str) -> None:
    def endless(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head() + _chunk(b'data: {"response": "'))
        _forever(conn, _chunk(b"a" * 65536), server)
        return False

    with RawServer(endless) as server:
        result = _fenced(
            kind,
            f'result = drive(lambda ai: texts(ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True)), '
            "max_event_bytes=1 << 20)",
            server,
        )
    assert result["type"] == "ResponseTooLargeError" and "max_event_bytes" in result["message"], result
    assert result["rss_kib"] < 200_000


def test_hostile_a_batch_poll_that_never_answers_is_bounded(kind: str) -> None:
    def queue_then_hang(conn: socket.socket, req: RawRequest) -> bool:
        if b"requests" in req.body:
            body = b'{"result": {"status": "queued", "request_id": "r1"}, "success": true, "errors": []}'
            conn.sendall(head(Content_Length=len(body)) + body)
            return True
        server.stop.wait(30)
        return False

    with RawServer(queue_then_hang) as server:
        result = _fenced(
            kind,
            f'result = drive(lambda ai: wait(ai.model({BGE!r}).batch([{{"text": ["a"]}}]), timeout=1.5))',
            server,
        )
    assert result["type"] == "BatchTimeoutError" and "r1" in result["message"], result
