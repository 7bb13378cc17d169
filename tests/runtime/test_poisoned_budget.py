"""One bad ``Retry-After`` must not shut a long-lived client out of a model: the call that got it honours
it, the shared budget holds at most ``MAX_BLOCK``, and a daily-allocation reply says when it resets.
Each scenario runs on ``WorkersAI`` and ``AsyncWorkersAI``."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI, errors
from workers_ai._core import error_replies, ratelimit
from workers_ai._core.ratelimit import Pace

from tests._server import ScriptedServer, fail, ok
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import EMBED
from tests.runtime._drivers import KINDS

BGE = "@cf/baai/bge-m3"


async def settle(value: Any) -> Any:
    while inspect.isawaitable(value):
        value = await value
    return value


def run(kind: str, server: ScriptedServer, scenario: Callable[[Any], Awaitable[Any]]) -> Any:
    """``scenario(ai)`` on one client of ``kind`` (its sync calls simply block inside the loop)."""
    config: dict[str, Any] = {"account_id": ACCOUNT, "api_token": TOKEN, "base_url": server.base_url}

    async def go() -> Any:
        if kind == "sync":
            with WorkersAI(**config) as ai:
                return await scenario(ai)
        async with AsyncWorkersAI(**config) as ai:
            return await scenario(ai)

    return asyncio.run(go())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("header", ["1e12", "3600"])
def test_one_bad_retry_after_holds_the_budget_only_for_the_bound(
    kind: str, header: str, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ratelimit, "MAX_BLOCK", 0.3)  # the bound (60 s) made short enough to wait out
    server.script(fail(429, 3021, "rate limited", retry_after=header), ok(EMBED))

    async def scenario(ai: Any) -> float:
        with pytest.raises(errors.RateLimitError) as info:  # the call that got the header honours it all
            await settle(ai.model(BGE).embed(text="a"))
        assert info.value.retry_after is not None and info.value.retry_after >= 3600
        assert len(server.requests) == 1  # not retried: a wait that long is the caller's to decide
        start = time.monotonic()
        out = await settle(ai.model(BGE).embed(text="b"))  # the server answers again: so does the client
        assert out.data == [[0.1, 0.2]]
        return time.monotonic() - start

    waited = run(kind, server, scenario)
    assert len(server.requests) == 2
    assert waited < 5.0


def test_the_block_is_bounded_on_a_clock() -> None:
    now = [100.0]
    pace = Pace("m", 600, clock=lambda: now[0])
    pace.slow_down(1e12)
    assert pace.reserve() <= ratelimit.MAX_BLOCK
    now[0] += ratelimit.MAX_BLOCK + 1
    assert pace.reserve() < 1.0  # a later call goes to the server


def test_a_retry_after_within_the_bound_still_holds_every_call() -> None:
    now = [100.0]
    pace = Pace("m", 600, clock=lambda: now[0])
    pace.slow_down(5.0)
    assert pace.reserve() == pytest.approx(5.0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_daily_allocation_reply_says_when_it_resets(kind: str, server: ScriptedServer) -> None:
    server.script(fail(429, 3036, "you have used up your daily free allocation of 10,000 neurons"), ok(EMBED))

    async def scenario(ai: Any) -> Any:
        with pytest.raises(errors.QuotaExceededError) as info:
            await settle(ai.model(BGE).embed(text="a"))
        return info.value

    error = run(kind, server, scenario)
    assert "resets at 00:00 UTC" in str(error) and "not retried" in str(error)
    assert error.retry_after == pytest.approx(error_replies.until_daily_reset(), abs=5)
    assert len(server.requests) == 1


def test_until_daily_reset_is_the_next_midnight_utc() -> None:
    assert error_replies.until_daily_reset(86400.0 * 20_000 + 3600) == 23 * 3600
    assert error_replies.until_daily_reset(86400.0 * 20_000) == 86400
