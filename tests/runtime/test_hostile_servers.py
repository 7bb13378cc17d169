"""The client against hostile servers: every case runs the client in a fenced process (``run_client``).

Each server misbehaves in one way (paths it must never see, bytes dripped forever, bodies without
end, compression bombs, unreadable JSON, lies in the envelope) and the client must answer with a
``WorkersAIError`` subclass within its deadline and its memory bound. A regression fails the case:
the child is killed at the harness deadline or by its address-space limit.
"""

from __future__ import annotations

import gzip
import json
import socket
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests._server import RawRequest, Server, chunk, drip, envelope, forever, head, reply
from tests.runtime._raw import ACCOUNT, run_client, self_signed

LLAMA = "@cf/meta/llama-3-8b-instruct"
BGE = "@cf/baai/bge-m3"


def _never(conn: socket.socket, req: RawRequest) -> bool:
    raise AssertionError(f"the server must see nothing, got {req.method} {req.target}")


# ---------------------------------------------------------------------- safe URLs


TRAVERSALS = [
    "@cf/../../user/tokens/verify",
    "@cf/../../../../../../etc/passwd",
    "@cf/./x",
    "@cf//x",
    "@cf/x/",
    "@cf/x\n",
    "@cf/x\r\nHost: evil",
    "@cf/x\x00y",
    "@cf/x y",
    "@cf/x?y=1",
    "@cf/x#frag",
    "..",
    "",
]


@pytest.mark.parametrize("gateway", [False, True], ids=["direct", "gateway"])
def test_traversal_ids_are_refused_before_anything_is_sent(gateway: bool) -> None:
    seen: list[RawRequest] = []

    def record(conn: socket.socket, req: RawRequest) -> bool:
        seen.append(req)
        return reply(conn, envelope({"response": "leaked"}))

    with Server(record) as server:
        result = run_client(
            f"""
            from workers_ai import Gateway
            from workers_ai._core.config import run_url
            gw = Gateway(id="gw", account_id=ACCOUNT, base_url={server.url!r} + "/v1", url_form=True)
            gw = gw if {gateway} else None
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, gateway=gw, max_retries=0)
            result = {{repr(i): outcome(lambda i=i: ai.run(i, {{"prompt": "x"}})) for i in {TRAVERSALS!r}}}
            result["model"] = outcome(lambda: ai.model("@cf/../../x"))
            bad = "@cf/../../../../x"
            result["gateway_url"] = outcome(lambda: gw.url(ACCOUNT, bad) if gw else run_url(ai, bad))
            """,
            server,
        )
    assert seen == []
    rss = result.pop("rss_kib")
    assert rss > 0
    for model_id, out in result.items():
        assert out["type"] == "ConfigurationError", (model_id, out)
        assert "WorkersAIError" in out["bases"]


def test_segments_are_percent_encoded_and_slashes_kept() -> None:
    seen: list[RawRequest] = []

    def record(conn: socket.socket, req: RawRequest) -> bool:
        seen.append(req)
        return reply(conn, envelope({"response": "ok"}))

    with Server(record) as server:
        result = run_client(
            f"""
            from workers_ai import Gateway
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
            gw = WorkersAI(account_id=ACCOUNT, api_token=TOKEN,
                           gateway=Gateway(id="g/w", account_id="x y", base_url={server.url!r}, url_form=True))
            result = {{"direct": outcome(lambda: ai.run("@cf/acme/a+b", {{"prompt": "x"}})),
                       "gateway": outcome(lambda: gw.run("@cf/acme/a+b", {{"prompt": "x"}}))}}
            """,
            server,
        )
    assert result["direct"]["ok"] and result["gateway"]["ok"], result
    assert [r.target for r in seen] == [
        f"/client/v4/accounts/{ACCOUNT}/ai/run/@cf/acme/a%2Bb",
        "/x%20y/g%2Fw/workers-ai/@cf/acme/a%2Bb",
    ]


# ---------------------------------------------------------------------- deadlines


def test_a_dripped_body_is_cut_at_the_total_deadline() -> None:
    def slow(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(Content_Length=1000))
        drip(conn, b"x" * 1000, server.stop)
        return False

    with Server(slow) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, timeout=1, max_retries=1)
            ai._sleep = lambda s: None
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
            deadline=30,
        )
    assert result["type"] == "APITimeoutError", result
    assert len(server.requests) == 2  # the retry is bounded the same way


def test_dripped_headers_are_cut_at_the_total_deadline() -> None:
    def slow(conn: socket.socket, req: RawRequest) -> bool:
        drip(conn, b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"y" * 500 + b"\r\n\r\n", server.stop)
        return False

    with Server(slow) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, timeout=1, max_retries=0)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
            deadline=30,
        )
    assert result["type"] == "APITimeoutError", result


def _sse_head() -> bytes:
    return head(200, "text/event-stream", Transfer_Encoding="chunked")


def test_dripped_sse_comments_hit_the_idle_timeout() -> None:
    def comments(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head() + chunk(b'data: {"response": "hi"}\n\n'))
        forever(conn, chunk(b": still here\n"), server.stop, every=0.2)
        return False

    with Server(comments) as server:
        result = run_client(
            f"""
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, stream_idle_timeout=1)
            got = []
            def read():
                for ev in ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True):
                    got.append(ev.text)
            result = outcome(read)
            result["texts"] = got
            """,
            server,
            deadline=30,
        )
    assert result["type"] == "APITimeoutError" and "stream_idle_timeout" in result["message"], result
    assert result["texts"] == ["hi"]


def test_a_stream_that_never_ends_hits_its_total_timeout() -> None:
    def events(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head())
        forever(conn, chunk(b'data: {"response": "."}\n\n'), server.stop, every=0.1)
        return False

    with Server(events) as server:
        result = run_client(
            f"""
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, stream_timeout=1.5)
            count = [0]
            def read():
                for ev in ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True):
                    count[0] += 1
            result = outcome(read)
            result["count"] = count[0]
            """,
            server,
            deadline=30,
        )
    assert result["type"] == "APITimeoutError" and "stream_timeout" in result["message"], result
    assert result["count"] > 0


def test_job_wait_bounds_a_poll_that_never_answers() -> None:
    def batch(conn: socket.socket, req: RawRequest) -> bool:
        if b"requests" in req.body:
            return reply(conn, envelope({"status": "queued", "request_id": "r-1", "model": BGE}))
        conn.sendall(head(Content_Length=100))
        drip(conn, b" " * 100, server.stop)
        return False

    with Server(batch) as server:
        result = run_client(
            f"""
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, timeout=60)
            job = ai.run({BGE!r}, {{"requests": [{{"text": ["a"]}}]}}, queue_request=True)
            result = outcome(lambda: job.wait(timeout=1.5, poll_interval=0.1))
            """,
            server,
            deadline=30,
        )
    assert result["type"] == "BatchTimeoutError" and "r-1" in result["message"], result


@pytest.mark.parametrize("value", ["float('nan')", "-1", "float('inf')", "0"])
def test_bad_timeouts_are_refused_at_the_call(value: str) -> None:
    result = run_client(
        f"""
        v = {value}
        ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN)
        result = {{
            "client": outcome(lambda: WorkersAI(account_id=ACCOUNT, api_token=TOKEN, timeout=v)),
            "idle": outcome(lambda: WorkersAI(account_id=ACCOUNT, api_token=TOKEN, stream_idle_timeout=v)),
            "total": outcome(lambda: WorkersAI(account_id=ACCOUNT, api_token=TOKEN, stream_timeout=v)),
            "wait": outcome(lambda: ai.batch_job({BGE!r}, "r").wait(timeout=v)),
        }}
        """
    )
    result.pop("rss_kib")
    for name, out in result.items():
        assert out["type"] == "ConfigurationError", (name, out)


# ---------------------------------------------------------------------- bounded memory


def test_a_huge_content_length_is_refused_unread() -> None:
    def huge(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(Content_Length=2_000_000_000))
        forever(conn, b"x" * 65536, server.stop)
        return False

    with Server(huge) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
        )
    assert result["type"] == "ResponseTooLargeError" and "APIError" in result["bases"], result
    assert result["rss_kib"] < 200_000


def test_an_endless_chunked_body_stops_at_the_limit() -> None:
    def endless(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(head(Transfer_Encoding="chunked") + chunk(b'{"result": "'))
        forever(conn, chunk(b"a" * 65536), server.stop)
        return False

    with Server(endless) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_response_bytes=8 << 20)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
        )
    assert result["type"] == "ResponseTooLargeError", result
    assert result["rss_kib"] < 200_000


def test_an_endless_sse_line_stops_at_the_event_limit() -> None:
    def endless(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head() + chunk(b'data: {"response": "'))
        forever(conn, chunk(b"a" * 65536), server.stop)
        return False

    with Server(endless) as server:
        result = run_client(
            f"""
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_event_bytes=4 << 20)
            result = outcome(lambda: list(ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True)))
            """,
            server,
        )
    assert result["type"] == "ResponseTooLargeError" and "max_event_bytes" in result["message"], result
    assert result["rss_kib"] < 200_000


def test_many_data_lines_without_a_blank_line_stop_at_the_event_limit() -> None:
    def endless(conn: socket.socket, req: RawRequest) -> bool:
        conn.sendall(_sse_head())
        forever(conn, chunk(b"data: x\n" * 8192), server.stop)
        return False

    with Server(endless) as server:
        result = run_client(
            f"""
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_event_bytes=4 << 20)
            result = outcome(lambda: list(ai.run({LLAMA!r}, {{"prompt": "x"}}, stream=True)))
            """,
            server,
        )
    assert result["type"] == "ResponseTooLargeError", result
    assert result["rss_kib"] < 200_000


_BOMB: list[bytes] = []


def _bomb() -> bytes:
    """~256 MiB of zeros gzipped (about 250 KB on the wire)."""
    if not _BOMB:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = bytes(1 << 20)
        _BOMB.append(b"".join([packer.compress(block) for _ in range(256)] + [packer.flush()]))
    return _BOMB[0]


@pytest.mark.parametrize("status", [200, 500])
def test_a_gzip_bomb_is_not_decompressed(status: int) -> None:
    seen: list[RawRequest] = []

    def bomb(conn: socket.socket, req: RawRequest) -> bool:
        seen.append(req)
        body = _bomb()
        conn.sendall(head(status, Content_Encoding="gzip", Content_Length=len(body)) + body)
        return True

    with Server(bomb) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_retries=0)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
        )
    assert seen[0].headers["accept-encoding"] == "identity"
    expected = "ResponseDecodeError" if status == 200 else "InternalServerError"
    assert result["type"] == expected and result["status"] == status, result
    assert result["rss_kib"] < 200_000


def test_with_compression_on_the_decoded_size_is_capped() -> None:
    def bomb(conn: socket.socket, req: RawRequest) -> bool:
        body = _bomb()
        conn.sendall(head(200, Content_Encoding="gzip", Content_Length=len(body)) + body)
        return True

    with Server(bomb) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, compress=True,
                           max_response_bytes=8 << 20)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
        )
    assert result["type"] == "ResponseTooLargeError", result
    assert result["rss_kib"] < 200_000


def test_compressed_replies_are_read_when_asked_for() -> None:
    seen: list[RawRequest] = []

    def small(conn: socket.socket, req: RawRequest) -> bool:
        seen.append(req)
        body = gzip.compress(envelope({"response": "unzipped"}))
        conn.sendall(head(200, Content_Encoding="gzip", Content_Length=len(body)) + body)
        return True

    with Server(small) as server:
        result = run_client(
            """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, compress=True)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
        )
    assert "gzip" in seen[0].headers["accept-encoding"]
    assert result["ok"] and "unzipped" in result["value"], result


# ---------------------------------------------------------------------- every failure is a WorkersAIError


def _body_case(body: bytes, status: int = 200, code: str = "", content_type: str = "application/json") -> Any:
    def answer(conn: socket.socket, req: RawRequest) -> bool:
        return reply(conn, body, status, content_type)

    with Server(answer) as server:
        return run_client(
            code
            or """
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_retries=0)
            result = outcome(lambda: ai.run("@cf/acme/any", {"prompt": "x"}))
            """,
            server,
        )


def test_invalid_utf8_in_a_success_envelope_is_a_decode_error() -> None:
    result = _body_case(b'{"result": {"response": "caf\xff"}, "success": true, "errors": [], "messages": []}')
    assert result["type"] == "ResponseDecodeError" and "WorkersAIError" in result["bases"], result


def test_invalid_utf8_in_an_error_envelope_keeps_the_api_error() -> None:
    body = (
        b'{"result": null, "success": false, "errors": [{"code": 5006, "message": "bad input"}],'
        b' "messages": ["\xff\xfe"]}'
    )
    result = _body_case(body, status=400)
    assert result["type"] == "InvalidInputError" and result["code"] == 5006, result
    assert "bad input" in result["message"]


@pytest.mark.parametrize("status", [200, 400])
def test_json_nested_100000_deep_is_an_sdk_error(status: int) -> None:
    result = _body_case(b"[" * 100_000 + b"]" * 100_000, status=status)
    assert "WorkersAIError" in result["bases"] and result["status"] == status, result
    if status == 200:
        assert result["type"] == "ResponseDecodeError"


def test_success_must_be_the_boolean_true() -> None:
    result = _body_case(b'{"result": {"response": "x"}, "success": "false", "errors": [], "messages": []}')
    assert result["type"] == "ResponseDecodeError" and "success" in result["message"], result


def test_success_without_a_result_is_an_error() -> None:
    result = _body_case(b'{"success": true, "errors": [], "messages": []}')
    assert result["type"] == "ResponseDecodeError" and "no result" in result["message"], result


def test_an_empty_result_for_a_struct_with_required_fields_is_an_error() -> None:
    code = f"""
    import msgspec
    class Out(msgspec.Struct):
        response: str
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_retries=0)
    handle = ai.model({BGE!r})
    result = outcome(lambda: handle._send_and_decode(b'{{"text": "x"}}', Out))
    """
    result = _body_case(envelope({}), code=code)
    assert result["type"] == "ResponseDecodeError" and "response" in result["message"], result


@pytest.mark.parametrize(
    ("content_type", "expected"), [("text/html", "ResponseDecodeError"), ("image/png", "BinaryOutput")]
)
def test_generic_run_takes_bytes_only_for_binary_media(content_type: str, expected: str) -> None:
    body = b"<html><title>Just a moment</title></html>" if content_type == "text/html" else b"\x89PNG\r\n"
    result = _body_case(body, content_type=content_type)
    assert result["type"] == expected, result


# ---------------------------------------------------------------------- fork and threads


def _echo(delay: float = 0.0) -> Any:
    def echo(conn: socket.socket, req: RawRequest) -> bool:
        if delay:
            time.sleep(delay)
        text = json.loads(req.body)["prompt"]
        return reply(conn, envelope({"response": text}))

    return echo


def test_a_forked_child_never_shares_the_parents_connections() -> None:
    with Server(_echo(0.001)) as server:
        result = run_client(
            """
            import os
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, max_retries=0)
            ai.run("@cf/acme/echo", {"prompt": "warm"})  # the parent's pool now holds a connection

            def calls(tag):
                wrong = 0
                for i in range(200):
                    want = f"{tag}-{i}"
                    got = ai.run("@cf/acme/echo", {"prompt": want})["response"]
                    wrong += got != want
                return wrong

            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    wrong = calls("child")
                except BaseException as exc:
                    wrong = -1
                os.write(write, str(wrong).encode())
                os._exit(0)
            parent_wrong = calls("parent")
            os.waitpid(pid, 0)
            result = {"parent": parent_wrong, "child": int(os.read(read, 64))}
            """,
            server,
        )
    assert result["parent"] == 0 and result["child"] == 0, result
    prompts = [json.loads(r.body)["prompt"] for r in server.requests]
    assert sum(p.startswith("child-") for p in prompts) == 200


def test_64_threads_on_the_default_client_log_no_pool_warnings() -> None:
    with Server(_echo(0.005)) as server:
        result = run_client(
            """
            import logging, threading, warnings
            warnings.simplefilter("error")
            threading.stack_size(512 * 1024)  # 64 default 8 MiB stacks would not fit the address-space cap
            records = []
            class Catch(logging.Handler):
                def emit(self, record):
                    records.append(record.getMessage())
            logging.getLogger("urllib3").addHandler(Catch())
            logging.getLogger("urllib3").setLevel(logging.DEBUG)
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
            wrong = []
            infos = []
            def work(n):
                for i in range(20):
                    want = f"{n}-{i}"
                    if ai.run("@cf/acme/echo", {"prompt": want})["response"] != want:
                        wrong.append(want)
                infos.append(ai.last_response.status)
            threads = [threading.Thread(target=work, args=(n,)) for n in range(64)]
            for t in threads: t.start()
            for t in threads: t.join()
            result = {"wrong": wrong, "full": [r for r in records if "pool is full" in r], "infos": len(infos)}
            """,
            server,
        )
    assert result["wrong"] == [] and result["full"] == [] and result["infos"] == 64, result
    assert len(server.requests) == 64 * 20


# ---------------------------------------------------------------------- over TLS, as the real API is reached


def test_over_tls_calls_streams_and_deadlines_work(tmp_path: Path) -> None:
    cert, context = self_signed(tmp_path)

    def answer(conn: socket.socket, req: RawRequest) -> bool:
        prompt = json.loads(req.body)["prompt"]
        if prompt == "drip":
            conn.sendall(head(Content_Length=1000))
            drip(conn, b"x" * 1000, server.stop)
            return False
        if prompt == "stream":
            events = b"".join(b'data: {"response": "%d"}\n\n' % i for i in range(300)) + b"data: [DONE]\n\n"
            return reply(conn, events, content_type="text/event-stream")
        return reply(conn, envelope({"response": prompt * 20000}))

    with Server(answer, tls=context) as server:
        result = run_client(
            f"""
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, timeout=1, max_retries=0)
            def joined():
                return "".join(e.text for e in ai.run({LLAMA!r}, {{"prompt": "stream"}}, stream=True))
            result = {{
                "big": outcome(lambda: len(ai.run("@cf/acme/echo", {{"prompt": "ab"}})["response"])),
                "stream": outcome(joined),
                "drip": outcome(lambda: ai.run("@cf/acme/echo", {{"prompt": "drip"}})),
                "again": outcome(lambda: ai.run("@cf/acme/echo", {{"prompt": "c"}})["response"][:3]),
            }}
            """,
            server,
            env={"SSL_CERT_FILE": str(cert)},
            deadline=30,
        )
    assert result["big"] == {"ok": True, "type": "int", "value": "40000"}, result
    assert result["stream"]["ok"] and result["stream"]["value"] == repr("".join(str(i) for i in range(300)))
    assert result["drip"]["type"] == "APITimeoutError", result
    assert result["again"]["value"] == "'ccc'", result


def test_connections_are_reused_after_empty_and_whole_bodies() -> None:
    conns: set[int] = set()

    def answer(conn: socket.socket, req: RawRequest) -> bool:
        conns.add(id(conn))
        if b"empty" in req.body:
            conn.sendall(head(204, Content_Length=0))
            return True
        return reply(conn, envelope({"response": "x"}))

    with Server(answer) as server:
        result = run_client(
            """
            from workers_ai._core.config import run_url
            from workers_ai._core.requests import request_flow
            ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE)
            url = run_url(ai, "@cf/acme/any")
            got = [ai.run("@cf/acme/any", {"prompt": "x"})["response"] for _ in range(3)]
            got.append(ai._drive(request_flow(ai, "POST", url, b'{"empty": 1}')).status)
            got.append(ai.run("@cf/acme/any", {"prompt": "x"})["response"])
            result = {"got": got}
            """,
            server,
        )
    assert result["got"] == ["x", "x", "x", 204, "x"]
    assert len(conns) == 1
