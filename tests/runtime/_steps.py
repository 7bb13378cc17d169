"""One scenario, written once, run by the sync and the async client inside a fenced child process.

``STEP_PRELUDES[kind]`` defines, in the child (after ``tests.runtime._raw``'s prelude):

- ``KIND``: ``"sync"`` or ``"async"``;
- ``make(**options)``: a ``WorkersAI`` or ``AsyncWorkersAI`` on the test server (``BASE``, ``ACCOUNT``,
  ``TOKEN`` unless given), with retry waits not slept;
- ``step(value)``: ``value`` itself for the sync client, awaited (again while awaitable) on one event
  loop kept for the whole child for the async client, so a client lives across steps;
- ``close(ai)``: close or await ``aclose``.

So ``outcome(lambda: step(make().run(BGE, payload)))`` is one call for both kinds.
"""

from __future__ import annotations

_COMMON = """
import asyncio, inspect
from workers_ai import AsyncWorkersAI
KIND = {kind!r}
_LOOP = asyncio.new_event_loop()

async def _await(value):
    return await value

def step(value):
    while inspect.isawaitable(value):
        value = _LOOP.run_until_complete(_await(value))
    return value

def make(**options):
    options.setdefault("base_url", BASE)
    options.setdefault("account_id", ACCOUNT)
    options.setdefault("api_token", TOKEN)
    ai = (WorkersAI if KIND == "sync" else AsyncWorkersAI)(**options)
    if KIND == "sync":
        ai._sleep = lambda s: None
    else:
        async def nap(s):
            return None
        ai._sleep_async = nap
    return ai

def close(ai):
    step(ai.close() if KIND == "sync" else ai.aclose())
"""

KINDS = ("sync", "async")
STEP_PRELUDES = {kind: _COMMON.format(kind=kind) for kind in KINDS}
