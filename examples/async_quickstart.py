"""The async client in a few lines (the snippet of docs/async.md; type-checked by ``make check``).

Runs against the local emulator, so it needs no account: ``python examples/async_quickstart.py``.
"""

from __future__ import annotations

import asyncio

from workers_ai import AsyncWorkersAI
from workers_ai.testing import Emulator


async def main(ai: AsyncWorkersAI) -> None:
    bge = ai.model("@cf/baai/bge-m3")
    # Many calls in flight on one event loop: no thread per call.
    outs = await asyncio.gather(*(bge.embed(text=[t]) for t in ["a llama", "an orange cloud", "a hug"]))
    print([len(o.data[0]) for o in outs])

    llama = ai.model("@cf/meta/llama-3-8b-instruct")
    async with llama.chat_stream(messages=[{"role": "user", "content": "Tell me a story"}]) as events:
        async for event in events:
            print(event.text, end="", flush=True)
    print()

    job = await bge.batch([{"text": ["first"]}, {"text": ["second"]}])
    result = await job.wait(timeout=60, poll_interval=0.1)
    print([item.success for item in result.items])
    vectors = await bge.embed_many([f"text {i}" for i in range(250)], poll_interval=0.1)
    print(len(vectors))


async def run() -> None:
    with Emulator() as emu:
        async with AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
            await main(ai)


if __name__ == "__main__":
    asyncio.run(run())
