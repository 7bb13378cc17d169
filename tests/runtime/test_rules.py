"""The runtime's pure rules, without a server: URL building, timeout checks, retry decisions, the
envelope's verdicts and the SSE parser's size cap."""

from __future__ import annotations

import math

import pytest
from workers_ai import errors
from workers_ai._core.envelope import checked, unwrap
from workers_ai._core.retry import (
    MAX_RETRY_AFTER,
    call_bound,
    check_seconds,
    delay_after_failure,
    delay_after_status,
)
from workers_ai._core.sse import SSEDecoder
from workers_ai._core.urls import model_path, segment


@pytest.mark.parametrize(
    ("model_id", "path"),
    [
        ("@cf/baai/bge-m3", "@cf/baai/bge-m3"),
        ("@hf/thebloke/a.b_c-d", "@hf/thebloke/a.b_c-d"),
        ("@cf/acme/a+b", "@cf/acme/a%2Bb"),
        ("plain", "plain"),
    ],
)
def test_model_paths_keep_slashes_and_at_and_encode_the_rest(model_id: str, path: str) -> None:
    assert model_path(model_id) == path


@pytest.mark.parametrize("model_id", ["@cf/..", "@cf/./x", "../x", "@cf/...", "@cf/x\n", "@cf//x", "/x", "x/"])
def test_bad_model_paths_raise(model_id: str) -> None:
    with pytest.raises(errors.ConfigurationError):
        model_path(model_id)


def test_segments_encode_slashes_and_refuse_dots() -> None:
    assert segment("a/b c") == "a%2Fb%20c"
    for bad in (".", "..", ""):
        with pytest.raises(errors.ConfigurationError):
            segment(bad)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 0, -1, True, "5", None])
def test_check_seconds_refuses_what_is_not_a_finite_positive_number(value: object) -> None:
    with pytest.raises(errors.ConfigurationError):
        check_seconds(value, "timeout")


def test_check_seconds_takes_ints_and_floats() -> None:
    assert check_seconds(2, "t") == 2.0 and check_seconds(0.25, "t") == 0.25


def test_the_call_bound_covers_every_attempt_and_the_longest_wait() -> None:
    assert call_bound(10.0, 2) == 3 * 10.0 + 2 * MAX_RETRY_AFTER
    assert call_bound(5.0, 0) == 5.0


def test_status_retries_follow_the_rules() -> None:
    assert delay_after_status(0, 2, 503, 1.5, queued=False, quota=False) == 1.5
    assert delay_after_status(0, 2, 503, MAX_RETRY_AFTER + 1, queued=False, quota=False) is None
    assert delay_after_status(2, 2, 503, None, queued=False, quota=False) is None  # attempts used up
    assert delay_after_status(0, 2, 400, None, queued=False, quota=False) is None
    assert delay_after_status(0, 2, 429, None, queued=False, quota=True) is None
    assert delay_after_status(0, 2, 500, None, queued=True, quota=False) is None  # may have been queued
    wait = delay_after_status(0, 2, 429, None, queued=True, quota=False)
    assert wait is not None and 0 < wait <= 0.5


def test_failure_retries_follow_the_rules() -> None:
    assert delay_after_failure(0, 2, request_sent=False, retryable=True, queued=True) is not None
    assert delay_after_failure(0, 2, request_sent=True, retryable=True, queued=True) is None
    assert delay_after_failure(0, 2, request_sent=True, retryable=True, queued=False) is not None
    assert delay_after_failure(0, 2, request_sent=False, retryable=False, queued=False) is None
    assert delay_after_failure(2, 2, request_sent=False, retryable=True, queued=False) is None


def _verdict(status: int, body: bytes) -> str:
    try:
        unwrap(status, {"content-type": "application/json"}, body, model_id="@cf/x/y")
    except errors.WorkersAIError as exc:
        return type(exc).__name__
    return "ok"


@pytest.mark.parametrize(
    ("status", "body", "verdict"),
    [
        (200, b'{"result": {"a": 1}, "success": true}', "ok"),
        (200, b'{"result": {"a": 1}, "success": "true"}', "ResponseDecodeError"),
        (200, b'{"result": {"a": 1}, "success": 1}', "ResponseDecodeError"),
        (200, b'{"result": null, "success": true}', "ResponseDecodeError"),
        (200, b'{"success": true, "errors": []}', "ResponseDecodeError"),
        (200, b'{"result": 1, "success": false, "errors": [{"code": 3040, "message": "busy"}]}', "CapacityError"),
        (200, b'{"result": 1, "success": "no", "errors": [{"code": 5007, "message": "gone"}]}', "ModelNotFoundError"),
        (200, b'{"result": "\xff", "success": true}', "ResponseDecodeError"),
        (200, b"[" * 50_000 + b"]" * 50_000, "ResponseDecodeError"),
        (503, b"[" * 50_000, "InternalServerError"),
        (400, b'{"errors": [{"code": 5006, "message": "bad \xff"}], "success": false}', "InvalidInputError"),
    ],
)
def test_envelope_verdicts(status: int, body: bytes, verdict: str) -> None:
    assert _verdict(status, body) == verdict


def test_an_unreadable_error_envelope_keeps_the_api_code_and_message() -> None:
    body = b'{"success": false, "errors": [{"code": 5006, "message": "bad input"}], "messages": ["\xff"]}'
    with pytest.raises(errors.InvalidInputError) as info:
        checked(400, {}, body, model_id=None)
    assert info.value.code == 5006 and "bad input" in str(info.value)


def test_the_sse_parser_caps_an_unfinished_line_and_an_unfinished_event() -> None:
    line = SSEDecoder(max_event_bytes=1000)
    line.feed(b"data: " + b"a" * 900)
    with pytest.raises(errors.ResponseTooLargeError):
        line.feed(b"a" * 200)
    event = SSEDecoder(max_event_bytes=1000)
    with pytest.raises(errors.ResponseTooLargeError):
        for _ in range(300):
            event.feed(b"data: x\n")
    ok = SSEDecoder(max_event_bytes=1000)
    for _ in range(300):
        assert len(ok.feed(b"data: x\n\n")) == 1  # many small events are fine
