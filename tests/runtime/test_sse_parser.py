"""The SSE framing parser on its own: the spec's line and field rules under every way of cutting the bytes."""

from __future__ import annotations

import random

import pytest
from workers_ai._core.sse import ServerSentEvent, SSEDecoder, iter_events


def feed_all(chunks: list[bytes]) -> list[ServerSentEvent]:
    return list(iter_events(chunks))


def cut(data: bytes, rng: random.Random, max_size: int = 7) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    while i < len(data):
        n = rng.randint(1, max_size)
        out.append(data[i : i + n])
        i += n
    return out


def one_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def ev(data: str, event: str = "message", id: str | None = None, retry: int | None = None) -> ServerSentEvent:
    return ServerSentEvent(data, event, id, retry)


# A stream exercising every rule at once: CRLF, CR and LF line endings, comments, a BOM, multi-line
# data, event/id/retry fields, an unknown field, a blank line without data, and multi-byte characters.
MIXED = (
    "\ufeff: hello comment\r\n"
    "data: first\r\n\r\n"
    "event: add\rdata: line one\rdata:line two\rid: 7\r\r"
    "data: caf\u00e9 \u65e5\u672c \U0001f600\n\n"
    "retry: 1500\nfoo: ignored\n\n"
    "data\ndata:  two spaces\n\n"
    "id\ndata: after empty id\n\n"
    "id: bad\x00id\ndata: nul id ignored\n\n"
    "event: typed\n\n"
    "data: untyped again\n\n"
).encode()

MIXED_EVENTS = [
    ev("first"),
    ev("line one\nline two", "add", "7"),
    ev("caf\u00e9 \u65e5\u672c \U0001f600", id="7"),
    ev("\n two spaces", id="7", retry=1500),
    ev("after empty id", id="", retry=1500),
    ev("nul id ignored", id="", retry=1500),
    ev("untyped again", id="", retry=1500),
]


def test_spec_rules_on_the_whole_stream() -> None:
    assert feed_all([MIXED]) == MIXED_EVENTS


@pytest.mark.parametrize("seed", range(25))
def test_any_cutting_of_the_bytes_gives_the_same_events(seed: int) -> None:
    rng = random.Random(seed)
    assert feed_all(cut(MIXED, rng, max_size=rng.choice([2, 5, 17, 64]))) == MIXED_EVENTS


def test_one_byte_reads_split_every_line_ending_and_utf8_character() -> None:
    assert feed_all(one_byte(MIXED)) == MIXED_EVENTS


def test_cr_at_the_end_of_a_read_and_lf_at_the_start_of_the_next_are_one_line_ending() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\n") == []  # not a second (blank) line: nothing is dispatched yet
    assert dec.feed(b"\r") == [ev("a")]
    assert dec.feed(b"\ndata: b\r\n\r\n") == [ev("b")]


def test_lone_cr_then_data_on_next_read() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"data: b\r\r") == [ev("a\nb")]


def test_a_utf8_character_split_across_reads_is_decoded_whole() -> None:
    raw = "data: \u00e9\u20ac\U0001f680\n\n".encode()
    assert raw.count(b"\xf0") == 1
    dec = SSEDecoder()
    out: list[ServerSentEvent] = []
    for piece in one_byte(raw):
        out += dec.feed(piece)
    assert out == [ev("\u00e9\u20ac\U0001f680")]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert feed_all([b"data: a\xffb\n\n"]) == [ev("a\ufffdb")]


def test_bom_only_at_the_very_start_is_dropped() -> None:
    bom = "\ufeff".encode()
    assert feed_all([bom[:1], bom[1:], b"data: x\n\n"]) == [ev("x")]
    # A BOM later in the stream is part of the field name, so that line is an unknown field.
    assert feed_all([b"data: x\n\n", bom + b"data: y\n\n"]) == [ev("x")]


def test_flush_returns_an_unfinished_event_and_a_last_line_without_newline() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: [DONE]") == []
    assert dec.incomplete
    assert dec.flush() == [ev("[DONE]")]
    dec = SSEDecoder()
    dec.feed(b"data: x\n")
    assert dec.flush() == [ev("x")]
    dec = SSEDecoder()
    dec.feed(b"data: x\n\n")
    assert not dec.incomplete
    assert dec.flush() == []


def test_blank_line_without_data_resets_the_event_type() -> None:
    assert feed_all([b"event: a\n\ndata: x\n\n"]) == [ev("x")]


def test_retry_must_be_all_digits() -> None:
    assert feed_all([b"retry: 12a\ndata: x\n\nretry: 30\ndata: y\n\n"]) == [ev("x"), ev("y", retry=30)]


def test_a_ten_megabyte_line_fed_in_small_pieces_is_linear() -> None:
    # 10 MB in 128-byte reads is 81920 feeds: re-joining the pending line on every read (quadratic)
    # would copy ~400 GB and never finish here, so finishing at all shows the work is linear.
    payload = b"x" * (10 * 1024 * 1024)
    raw = b"data: " + payload + b"\n\n"
    dec = SSEDecoder()
    out: list[ServerSentEvent] = []
    for i in range(0, len(raw), 128):
        out += dec.feed(raw[i : i + 128])
    assert len(out) == 1
    assert len(out[0].data) == len(payload)


def test_ten_megabytes_of_typical_events() -> None:
    line = b'data: {"response":"token ","p":"abcdefghijklmnopqrstuvwxyz0123456789abcdefgh"}\n\n'
    count = (10 * 1024 * 1024) // len(line) + 1
    raw = line * count
    rng = random.Random(3)
    dec = SSEDecoder()
    n = 0
    i = 0
    while i < len(raw):
        size = rng.randint(1, 65536)
        n += len(dec.feed(raw[i : i + size]))
        i += size
    assert n == count
    assert dec.flush() == []
