"""Generated methods take ``**params: Unpack[...]``: what they send is built by one recipe (``_handles.ops``)
for sync and async alike. A wrong keyword is refused before anything is sent, naming the model and the
argument; every other argument reaches the wire as the schema names it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, errors
from workers_ai.models.cf.meta.llama_3_1_8b_instruct import ChatParams

from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import EMBED, client

TEXT = {"response": "hi", "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def test_an_unknown_keyword_is_an_argument_error_and_nothing_is_sent(server: ScriptedServer) -> None:
    ai = client(server)
    bge: Any = ai.model("@cf/baai/bge-m3")
    with pytest.raises(errors.ArgumentError) as caught:
        bge.embed(text="a", truncate_input=True)  # the schema's key is truncate_inputs
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, errors.InputValidationError)
    assert caught.value.model_id == "@cf/baai/bge-m3" and caught.value.path == "$.truncate_input"
    with pytest.raises(errors.ArgumentError) as missing:
        bge.embed(truncate_inputs=True)  # `text` is required
    assert "text" in str(missing.value)
    assert server.requests == []


def test_stream_is_the_methods_to_set_not_an_argument(server: ScriptedServer) -> None:
    llama: Any = client(server).model("@cf/meta/llama-3.1-8b-instruct")
    with pytest.raises(TypeError, match="stream"):
        llama.chat(messages=[{"role": "user", "content": "hi"}], stream=True)
    assert server.requests == []


def test_arguments_reach_the_wire_under_their_schema_names(server: ScriptedServer, tmp_path: Path) -> None:
    server.script(ok(TEXT), ok({"text": "heard"}), ok(EMBED))
    ai = client(server)
    params: ChatParams = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    assert ai.model("@cf/meta/llama-3.1-8b-instruct").chat(**params).text == "hi"
    assert server.requests[0].json() == {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF0000")
    # whisper-large-v3-turbo takes base64 audio in JSON: a path is read and encoded by the recipe
    ai.model("@cf/openai/whisper-large-v3-turbo").transcribe(audio, language="fr")
    assert server.requests[1].json() == {"audio": "UklGRjAwMDA=", "language": "fr"}
    ai.model("@cf/baai/bge-m3").embed(text=["a"], truncate_inputs=True)
    assert server.requests[2].json() == {"text": ["a"], "truncate_inputs": True}


def test_the_async_handle_builds_the_same_request(server: ScriptedServer) -> None:
    server.script(ok(TEXT))

    async def main() -> None:
        async with AsyncWorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url) as ai:
            llama: Any = ai.model("@cf/meta/llama-3.1-8b-instruct")
            with pytest.raises(errors.ArgumentError):
                await llama.chat(messages=[], temperture=0.1)
            out = await llama.chat(messages=[{"role": "user", "content": "hi"}], max_tokens=8)
            assert out.text == "hi"

    asyncio.run(main())
    assert [r.json() for r in server.requests] == [{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}]


def test_a_path_written_as_text_is_refused_where_audio_goes(server: ScriptedServer) -> None:
    ai = client(server)
    turbo: Any = ai.model("@cf/openai/whisper-large-v3-turbo")  # audio is base64 text in JSON
    with pytest.raises(errors.ArgumentError) as caught:
        turbo.transcribe("talk.mp3")
    assert caught.value.path == "$.audio" and "pathlib.Path" in str(caught.value)
    nova: Any = ai.model("@cf/deepgram/nova-3")  # audio is the raw body
    with pytest.raises(errors.ArgumentError, match=r"pathlib\.Path"):
        nova.transcribe("talk.mp3")
    whisper: Any = ai.model("@cf/openai/whisper")  # the body is the audio
    with pytest.raises(errors.WorkersAIError, match=r"pathlib\.Path"):
        whisper.transcribe("talk.mp3")
    assert server.requests == []
    server.script(ok({"text": "heard"}))
    turbo.transcribe("UklGRjAwMDA=")  # base64 text is what the field takes: sent as given
    assert server.requests[0].json() == {"audio": "UklGRjAwMDA="}


def test_base64_text_is_bytes_where_a_binary_field_takes_bytes(server: ScriptedServer) -> None:
    # JSON spells bytes as base64, so a `format: binary` field takes base64 text as run() does: nova-3's
    # audio goes out as the raw body it decodes to.
    server.script(ok({"results": {"channels": [{"alternatives": [{"transcript": "hi", "confidence": 1.0}]}]}}))
    client(server).model("@cf/deepgram/nova-3").transcribe(audio="UklGRjAwMDA=")
    assert server.requests[0].body == b"RIFF0000"


def test_a_wire_name_the_method_renames_is_named_in_the_error(server: ScriptedServer) -> None:
    melotts: Any = client(server).model("@cf/myshell-ai/melotts")  # speak(text=) fills the wire's prompt
    with pytest.raises(errors.ArgumentError, match="takes it as 'text'"):
        melotts.speak(prompt="hello")
    assert server.requests == []


def test_an_async_stream_request_collects_like_a_sync_stream() -> None:
    from workers_ai.testing import Emulator

    async def main(emu: Emulator) -> tuple[str, str]:
        async with emu.async_client() as ai:
            llama = ai.model("@cf/meta/llama-3.1-8b-instruct")
            joined = await llama.chat_stream(messages=[{"role": "user", "content": "Hi"}]).collect()
            text = await llama.generate_stream(prompt="Hi").text()
            return joined.text, text

    with Emulator() as emu:
        joined, text = asyncio.run(main(emu))
        with emu.client() as ai:
            sync = ai.model("@cf/meta/llama-3.1-8b-instruct").chat_stream(messages=[{"role": "user", "content": "Hi"}])
            assert joined == sync.collect().text and joined and text
