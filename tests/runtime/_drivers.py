"""Drive the same behaviour test through ``WorkersAI`` and ``AsyncWorkersAI``.

A test writes its scenario once as ``fn(ai)``; with the async driver every awaitable it returns is
awaited, so ``lambda ai: ai.model(BGE).embed(text=["a"])`` is a sync call for one and an awaited call
for the other. Streams and batch waits go through :meth:`Driver.texts` and :meth:`Driver.wait`, which
iterate/await as the client needs. The same holds for the hostile-server child processes:
:data:`CHILD_PRELUDES` define ``drive(fn, **options)``, ``texts(stream)`` and ``wait(job, **kw)``.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

from workers_ai import AsyncWorkersAI, WorkersAI

KINDS = ("sync", "async")


class Driver:
    """One client kind. ``call(fn, **options)`` builds a client with ``options``, runs ``fn(ai)`` (awaiting
    what it returns for the async kind), closes the client and returns the value or raises."""

    def __init__(self, kind: str, account_id: str, api_token: str, base_url: str) -> None:
        self.kind = kind
        self._config = {"account_id": account_id, "api_token": api_token, "base_url": base_url}
        self.sleeps: list[float] = []

    def __repr__(self) -> str:
        return self.kind

    def _nap(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        time.sleep(min(seconds, 0.05))

    def call(self, fn: Callable[[Any], Any], **options: Any) -> Any:
        config = {**self._config, **options}
        if self.kind == "sync":
            with WorkersAI(**config) as ai:
                ai._sleep = self._nap  # recorded; slept 50 ms at most
                return fn(ai)

        async def run() -> Any:
            async with AsyncWorkersAI(**config) as ai:

                async def sleep(seconds: float) -> None:
                    self.sleeps.append(seconds)
                    await asyncio.sleep(min(seconds, 0.05))

                ai._sleep_async = sleep
                value = fn(ai)
                while inspect.isawaitable(value):
                    value = await value
                return value

        return asyncio.run(run())

    def texts(self, stream: Any) -> Any:
        """The texts of a stream (an ``EventStream``, or for async an ``AsyncStreamRequest``), read whole."""
        if self.kind == "sync":
            with stream as events:
                return [e.text for e in events]

        async def read() -> list[str]:
            async with stream as events:
                return [e.text async for e in events]

        return read()

    def wait(self, job: Any, **kw: Any) -> Any:
        """``job.wait(**kw)`` for a job or (async) an awaitable giving one."""
        if self.kind == "sync":
            return job.wait(**kw)

        async def run() -> Any:
            got = await job if inspect.isawaitable(job) else job
            return await got.wait(**kw)

        return run()


_SYNC_CHILD = """
def drive(fn, **options):
    options.setdefault("base_url", BASE)
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, **options)
    ai._sleep = lambda s: None
    return outcome(lambda: fn(ai))

def texts(stream, got=None):
    out = [] if got is None else got
    for ev in stream:
        out.append(ev.text)
    return out

def wait(job, **kw):
    return job.wait(**kw)
"""

_ASYNC_CHILD = """
import asyncio, inspect
from workers_ai import AsyncWorkersAI

def drive(fn, **options):
    options.setdefault("base_url", BASE)

    async def run():
        async with AsyncWorkersAI(account_id=ACCOUNT, api_token=TOKEN, **options) as ai:
            async def nap(s):
                return None
            ai._sleep_async = nap
            value = fn(ai)
            while inspect.isawaitable(value):
                value = await value
            return value

    return outcome(lambda: asyncio.run(run()))

async def _texts(request, out):
    async with request as stream:
        async for ev in stream:
            out.append(ev.text)
    return out

def texts(stream, got=None):
    return _texts(stream, [] if got is None else got)

async def _wait(job, kw):
    return await (await job if inspect.isawaitable(job) else job).wait(**kw)

def wait(job, **kw):
    return _wait(job, kw)
"""

CHILD_PRELUDES = {"sync": _SYNC_CHILD, "async": _ASYNC_CHILD}
