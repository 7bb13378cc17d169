"""Streaming end to end: a local server sends SSE in awkward pieces; the client yields typed events."""

from __future__ import annotations

import gc
import random
import socket
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from workers_ai import EventStream, StreamEvent, WorkersAI
from workers_ai._core.stream_events import StreamResult, ToolCall, ToolCallMerger
from workers_ai.errors import (
    APIConnectionError,
    CapacityError,
    InvalidInputError,
    ModelNotFoundError,
    StreamError,
)

from tests._server import Reply, Request, ScriptedServer, Server, fail, ok
from tests.conftest import ACCOUNT, TOKEN

LLAMA = "@cf/meta/llama-3-8b-instruct"


def client(server: ScriptedServer | str, **kw: Any) -> WorkersAI:
    base = server if isinstance(server, str) else server.base_url
    return WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=base, **kw)


def sse(*objs: Any, done: bool = True) -> bytes:
    out = b"".join(b"data: " + (o if isinstance(o, bytes) else msgspec.json.encode(o)) + b"\n\n" for o in objs)
    return out + (b"data: [DONE]\n\n" if done else b"")


def pieces(data: bytes, sizes: str | int, seed: int = 0) -> list[bytes]:
    if sizes == "one":
        return [data[i : i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    out: list[bytes] = []
    i = 0
    while i < len(data):
        n = rng.randint(1, int(sizes))
        out.append(data[i : i + n])
        i += n
    return out


def stream_reply(data: bytes, sizes: str | int = 4096, seed: int = 0, **kw: Any) -> Reply:
    return Reply(200, content_type="text/event-stream", chunks=pieces(data, sizes, seed), **kw)


TOKENS = ["H\u00e9", "llo ", "\u65e5\u672c", " \U0001f600", "!", " \u00e0\u00e7"]
USAGE = {"prompt_tokens": 169, "completion_tokens": 48, "total_tokens": 217}
LEGACY = sse(
    *[{"response": t, "p": "abcdefghijklmnop"[: i + 3], "tool_calls": []} for i, t in enumerate(TOKENS)],
    {"response": "", "usage": USAGE},
)


@pytest.mark.parametrize(
    ("sizes", "seed"), [("one", 0), (3, 1), (7, 2), (64, 3), (4096, 4)], ids=["1-byte", "r3", "r7", "r64", "r4096"]
)
def test_legacy_chunks_in_any_read_sizes_join_to_the_text_and_usage(
    server: ScriptedServer, sizes: Any, seed: int
) -> None:
    server.script(stream_reply(LEGACY, sizes, seed))
    with client(server).model(LLAMA).generate_stream(prompt="hi") as events:
        assert isinstance(events, EventStream)
        got = list(events)
    assert all(isinstance(e, StreamEvent) for e in got)
    assert [e.text for e in got] == [*TOKENS, ""]
    assert got[-1].usage is not None and got[-1].usage.total_tokens == 217
    assert all(e.usage is None for e in got[:-1])
    assert got[0].data["p"] == "abc"  # the whole chunk stays available; padding never leaks into text
    assert events.done and events.closed
    body = server.requests[0].json()
    assert body == {"prompt": "hi", "stream": True}


def test_collect_joins_text_and_keeps_the_final_usage(server: ScriptedServer) -> None:
    server.script(stream_reply(LEGACY, "one"))
    result = client(server).run(LLAMA, {"prompt": "hi"}, stream=True).collect()
    assert isinstance(result, StreamResult)
    assert result.text == "".join(TOKENS)
    assert result.usage is not None and (result.usage.prompt_tokens, result.usage.completion_tokens) == (169, 48)
    assert result.events == len(TOKENS) + 1


def test_handle_stream_method_takes_a_mapping_and_sets_stream(server: ScriptedServer) -> None:
    server.script(stream_reply(LEGACY))
    text = client(server).model(LLAMA).stream({"messages": [{"role": "user", "content": "hi"}]}).text()
    assert text == "".join(TOKENS)
    assert server.requests[0].json() == {"messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_crlf_and_cr_line_endings_comments_and_event_fields(server: ScriptedServer) -> None:
    raw = (
        b": keep-alive\r\n\r\n"
        b'event: message\r\nid: 1\r\ndata: {"response":\r\ndata: "multi"}\r\n\r\n'
        b'data: {"response":" line"}\r\r'
        b"data:\r\n\r\n"  # an empty data event is a keep-alive, not a text event
        b"data: [DONE]\r\n\r\n"
    )
    server.script(stream_reply(raw, "one"))
    with client(server).run(LLAMA, {"prompt": "x"}, stream=True) as events:
        got = list(events)
    assert [e.text for e in got] == ["multi", " line"]
    assert got[0].id == "1" and got[1].id == "1"  # the last event id carries over (SSE spec)
    assert events.last_event_id == "1"


OPENAI = sse(
    {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Think"}}],
        "p": "xx",
    },
    {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"reasoning_content": "ing."}}]},
    {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
    {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "lo \u2728"}}]},
    {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "weather", "arguments": ""},
                        }
                    ]
                },
            }
        ]
    },
    {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "clock", "arguments": '{"tz":'},
                        }
                    ]
                },
            }
        ]
    },
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Par'}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": '"UTC"}'}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'is"}'}}]}}]},
    {
        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    },
    {
        "response": "",
        "usage": {
            "prompt_tokens": 5,
            "completion_tokens": 9,
            "total_tokens": 14,
            "prompt_tokens_details": {"cached_tokens": 2},
        },
    },
)


@pytest.mark.parametrize("sizes", ["one", 11])
def test_openai_chunks_reasoning_and_tool_calls_merged_by_index(server: ScriptedServer, sizes: Any) -> None:
    server.script(stream_reply(OPENAI, sizes, seed=5))
    result = client(server).run(LLAMA, {"prompt": "x"}, stream=True).collect()
    assert result.text == "Hello \u2728"
    assert result.reasoning == "Thinking."
    assert result.finish_reason == "tool_calls"
    assert result.usage is not None and result.usage.total_tokens == 14
    assert result.usage.prompt_tokens_details == {"cached_tokens": 2}
    assert [(c.index, c.id, c.name) for c in result.tool_calls] == [(0, "call_a", "weather"), (1, "call_b", "clock")]
    assert [c.parsed_arguments() for c in result.tool_calls] == [{"city": "Paris"}, {"tz": "UTC"}]


def test_legacy_tool_calls_are_whole_objects() -> None:
    merger = ToolCallMerger()
    merger.add([])
    merger.add([{"name": "weather", "arguments": {"city": "Paris"}}, {"name": "clock", "arguments": {}}])
    assert merger.calls == [ToolCall(name="weather", arguments={"city": "Paris"}), ToolCall(name="clock", arguments={})]
    assert merger.calls[0].parsed_arguments() == {"city": "Paris"}


def test_tool_call_fragments_without_index_continue_by_id_or_last_call() -> None:
    merger = ToolCallMerger()
    merger.add([{"id": "c1", "function": {"name": "f", "arguments": '{"a"'}}])
    merger.add([{"function": {"arguments": ": 1}"}}])
    merger.add([{"id": "c2", "function": {"name": "g", "arguments": "{}"}}])
    merger.add([{"id": "c1", "function": {"arguments": ""}}])
    # The joined JSON text is decoded: a streamed call is the same ToolCall a whole reply gives.
    assert [(c.id, c.name, c.arguments) for c in merger.calls] == [("c1", "f", {"a": 1}), ("c2", "g", {})]
    merger.add([{"id": "c3", "function": {"name": "h", "arguments": "{broken"}}])
    last = merger.calls[-1]  # kept, with the text as sent and the parse problem
    assert (last.arguments, last.raw_arguments) == ({}, "{broken") and "not valid JSON" in (last.arguments_error or "")


def test_stream_without_done_raises_after_the_events_it_delivered(server: ScriptedServer) -> None:
    raw = sse({"response": "a"}, {"response": "b"}, done=False)
    server.script(stream_reply(raw, 5))
    seen: list[str] = []
    with pytest.raises(StreamError, match="without \\[DONE\\]"):
        for ev in client(server).run(LLAMA, {"prompt": "x"}, stream=True):
            seen.append(ev.text)
    assert seen == ["a", "b"]


def test_stream_cut_inside_an_event_names_the_cut_event(server: ScriptedServer) -> None:
    server.script(stream_reply(b'data: {"response":"a"}\n\ndata: {"respo', 4))
    with pytest.raises(StreamError, match="cut short"):
        client(server).run(LLAMA, {"prompt": "x"}, stream=True).collect()


def test_done_without_its_blank_line_still_ends_cleanly(server: ScriptedServer) -> None:
    server.script(stream_reply(b'data: {"response":"a"}\n\ndata: [DONE]', 3))
    assert client(server).run(LLAMA, {"prompt": "x"}, stream=True).text() == "a"


def test_connection_dropped_mid_stream_is_a_connection_error(server: ScriptedServer) -> None:
    body = b'data: {"response":"a"}\n\n' * 50
    server.script(Reply(200, body + b"data: [DONE]\n\n", content_type="text/event-stream", truncate_to=len(body) // 2))
    seen = 0
    with pytest.raises(APIConnectionError, match="broke off"):
        for _ in client(server, max_retries=0).run(LLAMA, {"prompt": "x"}, stream=True):
            seen += 1
    assert 0 < seen < 50


@pytest.mark.parametrize(
    ("error_event", "cls", "code"),
    [
        (b'data: {"errors":[{"code":3040,"message":"Capacity temporarily exceeded"}]}\n\n', CapacityError, 3040),
        (b'event: error\ndata: {"error":{"code":"5006","message":"bad input"}}\n\n', InvalidInputError, 5006),
        (b'data: {"error":"5007: No such model"}\n\n', ModelNotFoundError, 5007),
        (b"event: error\ndata: upstream exploded\n\n", StreamError, None),
        (b'data: {"success":false,"errors":[{"code":9999,"message":"odd"}]}\n\n', StreamError, 9999),
    ],
)
def test_error_object_mid_stream_raises_the_sdk_error_with_its_code(
    server: ScriptedServer, error_event: bytes, cls: type[Exception], code: int | None
) -> None:
    raw = sse({"response": "a"}, done=False) + error_event + sse({"response": "never"})
    server.script(stream_reply(raw, 6))
    seen: list[str] = []
    with pytest.raises(cls) as info:
        for ev in client(server).run(LLAMA, {"prompt": "x"}, stream=True):
            seen.append(ev.text)
    assert seen == ["a"]
    err: Any = info.value
    assert err.code == code
    assert err.model_id == LLAMA


def test_http_error_before_the_stream_is_a_normal_api_error(server: ScriptedServer) -> None:
    server.script(fail(429, 3040, "Capacity temporarily exceeded"))
    with pytest.raises(CapacityError):
        client(server, max_retries=0).run(LLAMA, {"prompt": "x"}, stream=True)


def test_a_json_reply_to_a_stream_request_becomes_one_event(server: ScriptedServer) -> None:
    server.script(ok({"response": "whole answer", "usage": USAGE}))
    with client(server).run(LLAMA, {"prompt": "x"}, stream=True) as events:
        got = list(events)
    assert [e.text for e in got] == ["whole answer"]
    assert got[0].usage is not None and got[0].usage.total_tokens == 217


def test_a_success_false_json_reply_to_a_stream_request_raises(server: ScriptedServer) -> None:
    server.script(
        Reply(200, b'{"result":null,"success":false,"errors":[{"code":3040,"message":"busy"}],"messages":[]}')
    )
    with pytest.raises(CapacityError):
        client(server).run(LLAMA, {"prompt": "x"}, stream=True).collect()


def test_a_binary_reply_to_a_stream_request_is_refused(server: ScriptedServer) -> None:
    server.script(Reply(200, b"\x89PNG", content_type="image/png"))
    with pytest.raises(StreamError, match="expected text/event-stream"):
        client(server).run(LLAMA, {"prompt": "x"}, stream=True).collect()


def test_a_finished_stream_gives_its_connection_back_to_the_pool(server: ScriptedServer) -> None:
    server.script(stream_reply(LEGACY, 100))
    ai = client(server)
    assert ai.run(LLAMA, {"prompt": "a"}, stream=True).text() == "".join(TOKENS)
    assert ai.run(LLAMA, {"prompt": "b"}, stream=True).text() == "".join(TOKENS)
    assert len(server.requests) == 2 and server.connections == 1


def test_ten_megabyte_stream_end_to_end(server: ScriptedServer) -> None:
    line = msgspec.json.encode({"response": "tok ", "p": "abcdefghijklmnopqrstuvwxyz", "tool_calls": []})
    count = (10 * 1024 * 1024) // (len(line) + 8) + 1
    raw = (b"data: " + line + b"\n\n") * count + b"data: [DONE]\n\n"
    server.script(stream_reply(raw, 65536, seed=9))
    with client(server).run(LLAMA, {"prompt": "x"}, stream=True) as events:
        result = events.collect()
        assert events.bytes_read == len(raw)
    assert result.events == count
    assert len(result.text) == 4 * count


class _RawStreamServer(Server):
    """A raw server on 127.0.0.1 that answers the request with chunked SSE headers, then hands the
    socket to ``_stream`` (the part each test server does differently)."""

    def handle(self, conn: socket.socket, request: Request) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        self._stream(conn)
        return False

    def _stream(self, conn: socket.socket) -> None:
        raise NotImplementedError


class EndlessStream(_RawStreamServer):
    """Streams events until the client goes away, and notes when it did."""

    def __init__(self) -> None:
        self.sent = 0
        self.limit = 256 * 1024 * 1024
        self.peer_closed = threading.Event()
        super().__init__()

    def _stream(self, conn: socket.socket) -> None:
        event = b'data: {"response":"more "}\n\n' * 100
        frame = f"{len(event):x}\r\n".encode() + event + b"\r\n"
        try:
            while self.sent < self.limit:
                conn.sendall(frame)
                self.sent += len(frame)
        except OSError:
            self.peer_closed.set()
        finally:
            conn.close()


@pytest.fixture
def endless() -> Iterator[EndlessStream]:
    srv = EndlessStream()
    yield srv
    srv.close()


def test_leaving_a_with_block_early_closes_the_connection(endless: EndlessStream) -> None:
    ai = client(endless.base_url)
    with ai.run(LLAMA, {"prompt": "x"}, stream=True) as events:
        for n, ev in enumerate(events):
            assert ev.text == "more "
            if n == 2:
                break
    assert events.closed and not events.done
    # The server notices the closed socket on its next writes; it never got to send the whole stream.
    assert endless.peer_closed.wait(30)
    assert endless.sent < endless.limit
    assert events.bytes_read < endless.sent
    assert list(events) == []  # nothing more comes out of a closed stream


def test_a_stream_dropped_unread_gives_its_connection_back(endless: EndlessStream) -> None:
    ai = client(endless.base_url)
    pool = ai._transport._pool.connection_from_url(endless.base_url)  # type: ignore[attr-defined]
    free = pool.pool.qsize()
    events = ai.run(LLAMA, {"prompt": "x"}, stream=True)
    assert pool.pool.qsize() == free - 1  # the stream holds a pooled connection
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del events
        gc.collect()
    assert pool.pool.qsize() == free  # given back when the stream went away...
    assert endless.peer_closed.wait(30)  # ...closed, since the stream was not finished
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


class DoneThenHold(_RawStreamServer):
    """Sends one event and ``[DONE]``, then keeps the chunked body open until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.client_closed = threading.Event()
        super().__init__()

    def _stream(self, conn: socket.socket) -> None:
        event = b'data: {"response":"all"}\n\ndata: [DONE]\n\n'
        conn.sendall(f"{len(event):x}\r\n".encode() + event + b"\r\n")  # no terminating 0-size chunk
        conn.settimeout(0.05)
        try:
            while not self.release.is_set():
                try:
                    if conn.recv(1) == b"":
                        self.client_closed.set()
                        return
                except TimeoutError:
                    continue
        except OSError:
            self.client_closed.set()
        finally:
            conn.close()

    def close(self) -> None:
        self.release.set()
        super().close()


def test_a_server_holding_the_body_open_after_done_does_not_block_the_stream() -> None:
    srv = DoneThenHold()
    results: list[Any] = []
    try:
        ai = client(srv.base_url, timeout=30, max_retries=0)

        def read() -> None:
            try:
                results.append(ai.run(LLAMA, {"prompt": "x"}, stream=True).collect())
            except Exception as exc:  # reported by the assertion below
                results.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(20)  # a hang guard, well under the 30 s read timeout the drain used to wait for
        assert not reader.is_alive(), "collect() waited for the body to end after [DONE]"
        (result,) = results
        assert isinstance(result, StreamResult) and result.text == "all"
        # The unfinished body could not be drained, so the connection was closed, not pooled.
        assert srv.client_closed.wait(10)
    finally:
        srv.close()
