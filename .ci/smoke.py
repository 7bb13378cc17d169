"""A short smoke run of the installed package on one Python (``.ci/run`` calls it for 3.10 and 3.13 in a
fresh venv with ``.[testing,async]``): sync, async, stream and batch calls on the emulator."""

from __future__ import annotations

import asyncio
import sys

from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3-8b-instruct"
HI = [{"role": "user", "content": "Say hi to Lisbon"}]


def sync_calls(ai: WorkersAI) -> None:
    out = ai.model(BGE).embed(text=["a", "b"])
    assert out.shape == [2, 1024], out.shape
    assert ai.model(LLAMA).chat(messages=HI).response
    with ai.model(LLAMA).chat_stream(messages=HI) as events:
        assert "".join(e.text for e in events)
    job = ai.model(BGE).batch([{"text": ["a"]}, {"text": ["b"]}])
    result = job.wait(timeout=60, poll_interval=0.01)
    assert result.ok and len(result.items) == 2


async def async_calls(ai: AsyncWorkersAI) -> None:
    outs = await asyncio.gather(*(ai.model(BGE).embed(text=[t]) for t in "abc"))
    assert [o.shape for o in outs] == [[1, 1024]] * 3
    assert (await ai.model(LLAMA).chat(messages=HI)).response
    async with ai.model(LLAMA).chat_stream(messages=HI) as events:
        assert "".join([e.text async for e in events])
    job = await ai.model(BGE).batch([{"text": ["a"]}])
    result = await job.wait(timeout=60, poll_interval=0.01)
    assert result.ok and len(result.items) == 1


async def main_async(emu: Emulator) -> None:
    async with emu.async_client() as ai:
        await async_calls(ai)


def main() -> int:
    with Emulator(batch_polls=(1, 1)) as emu:
        with emu.client() as ai:
            sync_calls(ai)
        asyncio.run(main_async(emu))
    print(f"smoke: Python {sys.version.split()[0]}: sync, async, stream and batch calls passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
