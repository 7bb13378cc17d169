"""Retries: Retry-After in every form, backoff on 5xx and resets, the cap, no retry on daily quota, and
logs without the token.
"""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest
from workers_ai import errors
from workers_ai._core.retry import retry_after

from tests._server import Reply, ScriptedServer, fail, ok
from tests.conftest import TOKEN
from tests.runtime._client import EMBED, client, embed


def test_429_with_retry_after_then_success(server: ScriptedServer) -> None:
    server.script(fail(429, 3021, "rate limited", retry_after="1"), ok(EMBED))
    ai = client(server)
    waits: list[float] = []
    ai._sleep = waits.append
    out = embed(ai)
    assert out.data == [[0.1, 0.2]]
    assert len(server.requests) == 2
    assert waits == [1.0]  # the server's Retry-After, not our own backoff


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert retry_after({"retry-after": "7"}, now=now) == 7.0
    assert retry_after({"retry-after": formatdate(now + 30, usegmt=True)}, now=now) == 30.0
    assert retry_after({"retry-after": formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}, now=now) == 0.25
    assert retry_after({"retry-after": "soon"}, now=now) is None
    assert retry_after({}, now=now) is None


def test_retry_after_http_date_is_honoured_on_the_wire(server: ScriptedServer) -> None:
    # A date far enough ahead that clock skew between formatting and parsing cannot matter.
    server.script(fail(429, 3040, "busy", retry_after=formatdate(time.time() + 40, usegmt=True)), ok(EMBED))
    ai = client(server)
    waits: list[float] = []
    ai._sleep = waits.append
    embed(ai)
    assert len(waits) == 1 and 30 <= waits[0] <= 40


def test_retry_after_beyond_the_cap_is_not_waited_for(server: ScriptedServer) -> None:
    server.script(fail(429, 3036, "daily allocation used up", retry_after="3600"), ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: pytest.fail(f"should not sleep {s}s")
    with pytest.raises(errors.RateLimitError) as info:
        embed(ai)
    assert info.value.retry_after == 3600
    assert len(server.requests) == 1


def test_503_then_success_uses_backoff(server: ScriptedServer) -> None:
    server.script(Reply(503, b"busy", content_type="text/plain"), ok(EMBED))
    ai = client(server)
    waits: list[float] = []
    ai._sleep = waits.append
    assert embed(ai).shape == [1, 2]
    assert len(server.requests) == 2
    assert len(waits) == 1 and 0.375 <= waits[0] <= 0.5  # 0.5 s with up to 25% jitter


def test_retries_exhausted_raise_with_status(server: ScriptedServer) -> None:
    server.script(fail(500, 0, "boom"))
    ai = client(server, max_retries=3)
    waits: list[float] = []
    ai._sleep = waits.append
    with pytest.raises(errors.InternalServerError) as info:
        embed(ai)
    assert info.value.status == 500
    assert len(server.requests) == 4
    assert len(waits) == 3 and waits[0] < waits[2]  # exponential


def test_reset_then_success_is_retried(server: ScriptedServer) -> None:
    server.script("reset", ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: None
    assert embed(ai).data == [[0.1, 0.2]]
    assert len(server.requests) == 2


def test_daily_quota_429_is_not_retried(server: ScriptedServer) -> None:
    server.script(fail(429, 3036, "daily free allocation used up"), ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: pytest.fail("quota errors must not be retried")
    with pytest.raises(errors.QuotaExceededError):
        embed(ai)
    assert len(server.requests) == 1


def test_retries_are_logged_without_the_token(server: ScriptedServer, caplog: pytest.LogCaptureFixture) -> None:
    server.script(fail(503, 7009, "Upstream service unavailable"), ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: None
    with caplog.at_level("DEBUG", logger="workers_ai"):
        embed(ai)
    lines = [r.getMessage() for r in caplog.records if r.name == "workers_ai"]
    assert len(lines) == 1 and "HTTP 503" in lines[0] and "retry 1 of 2" in lines[0]
    assert all(TOKEN not in line for line in caplog.text.splitlines())
