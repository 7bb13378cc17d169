"""A whole-number float is an integer to JSON Schema, and models do send ``3.0`` for counts: such a reply
decodes into the typed result (the field an ``int``) through ``run()``, a typed method and the async
client, and a fraction where an integer belongs is still refused."""

from __future__ import annotations

import asyncio

import pytest
from workers_ai import AsyncWorkersAI, errors

from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import client

WHISPER = "@cf/openai/whisper"
LLAMA = "@cf/meta/llama-3.1-8b-instruct"
USAGE = {"prompt_tokens": 3.0, "completion_tokens": 2.0, "total_tokens": 5.0}


def test_whole_number_floats_decode_as_integers(server: ScriptedServer) -> None:
    server.script(ok({"text": "hi there", "word_count": 2.0}), ok({"response": "hi", "usage": USAGE}))
    ai = client(server)
    heard = ai.run(WHISPER, b"RIFF\x00\x00\x00\x00WAVE")
    assert heard.word_count == 2 and type(heard.word_count) is int
    reply = ai.model(LLAMA).chat(messages=[{"role": "user", "content": "x"}])
    assert reply.usage.total_tokens == 5 and type(reply.usage.total_tokens) is int
    assert ai.usage.total_tokens == 5


def test_the_async_client_reads_them_the_same(server: ScriptedServer) -> None:
    server.script(ok({"response": "hi", "usage": USAGE}))

    async def main() -> int:
        async with AsyncWorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url) as ai:
            reply = await ai.model(LLAMA).generate(prompt="x")
            return reply.usage.prompt_tokens

    assert asyncio.run(main()) == 3


def test_a_fraction_is_no_integer(server: ScriptedServer) -> None:
    server.script(ok({"text": "hi", "word_count": 2.5}))
    with pytest.raises(errors.ResponseDecodeError, match=r"word_count"):
        client(server).run(WHISPER, b"RIFF\x00\x00\x00\x00WAVE")
