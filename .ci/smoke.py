"""A short smoke run of the installed package on one Python (``.ci/run`` calls it for 3.10 with the lowest
and 3.13 with the newest versions of its dependencies, in a fresh venv with the wheel and its extras):
sync, async, stream and batch calls on the emulator, and what the wheel put into site-packages."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
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


def installed_names() -> None:
    """The generator ships as ``workers_ai_codegen``: a top-level ``codegen`` could clash with a user's own."""
    assert importlib.util.find_spec("codegen") is None, "the wheel installs a top-level package named codegen"
    assert importlib.util.find_spec("workers_ai_codegen") is not None


def main() -> int:
    installed_names()
    with Emulator(batch_polls=(1, 1)) as emu:
        with emu.client() as ai:
            sync_calls(ai)
        asyncio.run(main_async(emu))
    versions = ", ".join(
        f"{name} {importlib.metadata.version(name)}" for name in ("msgspec", "urllib3", "aiohttp", "websockets")
    )
    print(f"smoke: Python {sys.version.split()[0]} ({versions}): sync, async, stream and batch calls passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
