"""``ai.with_options(...)`` copies share the parent's connections, rate budget and usage, and differ only in
the options changed; the emulator's clients do not pace. Each scenario runs on both clients."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.testing import Emulator

from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import EMBED
from tests.runtime._drivers import KINDS

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3-8b-instruct"


async def settle(value: Any) -> Any:
    while inspect.isawaitable(value):
        value = await value
    return value


def run(kind: str, scenario: Callable[[Any], Awaitable[Any]], **options: Any) -> Any:
    async def go() -> Any:
        if kind == "sync":
            with WorkersAI(account_id=ACCOUNT, api_token=TOKEN, **options) as ai:
                return await scenario(ai)
        async with AsyncWorkersAI(account_id=ACCOUNT, api_token=TOKEN, **options) as ai:
            return await scenario(ai)

    return asyncio.run(go())


async def close(client: Any) -> None:
    await settle(client.aclose() if hasattr(client, "aclose") else client.close())


@pytest.mark.parametrize("kind", KINDS)
def test_sixty_calls_through_fresh_copies_use_the_parents_connection(kind: str, server: ScriptedServer) -> None:
    server.script(ok(EMBED))

    async def scenario(ai: Any) -> None:
        for i in range(60):
            copy = ai.with_options(timeout=5 + i % 3)
            out = await settle(copy.model(BGE).embed(text="a"))
            assert out.data == [[0.1, 0.2]] and copy.options.timeout == 5 + i % 3
            await close(copy)  # a copy's close leaves the parent's connections open
        await settle(ai.model(BGE).embed(text="parent"))

    run(kind, scenario, base_url=server.base_url)
    assert len(server.requests) == 61
    assert server.connections == 1


@pytest.mark.parametrize("kind", KINDS)
def test_copies_share_the_budget_and_usage_and_differ_only_in_what_changed(kind: str, server: ScriptedServer) -> None:
    server.script(ok(EMBED))

    async def scenario(ai: Any) -> float:
        copy = ai.with_options(timeout=7, max_retries=0)
        assert copy.rate_budget is ai.rate_budget and copy.usage is ai.usage
        assert (copy.options.timeout, copy.options.max_retries) == (7, 0)
        assert copy.options.base_url == ai.options.base_url and copy.options.rate_limit == ai.options.rate_limit
        own = ai.with_options(rate_limit=None)
        assert own.rate_budget is not ai.rate_budget and own.usage is ai.usage
        pooled = ai.with_options(max_connections=4)
        assert pooled._transport is not ai._transport  # a connection option: connections of its own
        await close(pooled)
        start = time.monotonic()
        for _ in range(3):  # 60/min, no burst: one request a second, whichever copy sends it
            await settle(ai.with_options(timeout=9).model(BGE).embed(text="paced"))
        return time.monotonic() - start

    elapsed = run(kind, scenario, base_url=server.base_url, rate_limit=60)
    assert elapsed >= 1.8, elapsed  # copies cannot escape the parent's budget


@pytest.mark.parametrize("kind", KINDS)
def test_the_emulator_client_does_not_pace_unless_asked(kind: str) -> None:
    with Emulator() as emu:

        async def go() -> None:
            ai = emu.client() if kind == "sync" else emu.async_client()
            assert ai.rate_budget.pace(LLAMA) is None
            start = time.monotonic()
            for _ in range(40):  # 300/min would take 7 s past the first second's burst
                await settle(ai.model(LLAMA).chat(messages=[{"role": "user", "content": "hi"}]))
            assert time.monotonic() - start < 5
            await close(ai)
            paced = emu.client(rate_limit="published") if kind == "sync" else emu.async_client(rate_limit="published")
            assert paced.rate_budget.rpm(LLAMA) == 300
            await close(paced)

        asyncio.run(go())
