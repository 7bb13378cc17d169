"""Models whose REST input is a raw body (nova-3: ``x-raw-body`` in its schema file): the audio goes as the
request body with its media type and the options as query parameters, from the typed method (bytes, a path
or a binary file), from generic ``run`` and from the CLI's ``--file``; checked byte for byte on a server
that records the request, and end to end on the emulator."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.errors import UnknownInputWarning
from workers_ai.families import TranscriptView
from workers_ai.testing import Emulator

from tests._server import ScriptedServer, ok

NOVA = "@cf/deepgram/nova-3"
AUDIO = b"ID3\x04\x00\x00\x00\x00\x00\x0f" + bytes(range(256)) * 4  # an MP3 header, then binary noise
RESULT = {"results": {"channels": [{"alternatives": [{"transcript": "hello there", "confidence": 0.9}]}]}}
PATH = f"/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/run/{NOVA}"


def _client(server: ScriptedServer) -> WorkersAI:
    return WorkersAI(
        account_id="0123456789abcdef0123456789abcdef", api_token="tok", base_url=server.base_url, max_retries=0
    )


@pytest.mark.parametrize("kind", ["bytes", "path", "file"])
def test_the_audio_is_the_body_and_the_options_the_query(server: ScriptedServer, tmp_path: Path, kind: str) -> None:
    server.script(ok(RESULT))
    path = tmp_path / "talk.mp3"
    path.write_bytes(AUDIO)
    audio = {"bytes": AUDIO, "path": path, "file": io.BytesIO(AUDIO)}[kind]
    out = _client(server).model(NOVA).transcribe(audio=audio, punctuate=True, language="en", utt_split=0.8)
    assert isinstance(out, TranscriptView) and out.text == "hello there"
    (req,) = server.requests
    assert req.method == "POST" and req.path == PATH
    assert req.body == AUDIO  # byte for byte, not JSON, not base64
    assert req.headers["content-type"] == "audio/mpeg"
    assert req.headers["content-length"] == str(len(AUDIO))
    assert req.query == "language=en&punctuate=true&utt_split=0.8"


def test_generic_run_and_an_unknown_media_type(server: ScriptedServer) -> None:
    server.script(ok(RESULT))
    noise = b"\x00\x01\x02" * 50
    out = _client(server).run(NOVA, {"audio": noise, "diarize": False})
    assert out.text == "hello there"
    (req,) = server.requests
    assert req.body == noise and req.headers["content-type"] == "application/octet-stream"
    assert req.query == "diarize=false"


def test_generic_run_keeps_keys_the_schema_does_not_declare(server: ScriptedServer) -> None:
    # As on any model, an unknown key is sent as given (here a query parameter), with a warning.
    server.script(ok(RESULT))
    with pytest.warns(UnknownInputWarning, match=r"\$\.tier"):
        _client(server).run(NOVA, {"audio": base64.b64encode(AUDIO).decode(), "tier": "nova", "diarize": True})
    (req,) = server.requests
    assert req.body == AUDIO and req.query == "diarize=true&tier=nova"


def test_invalid_options_are_refused_before_anything_is_sent(server: ScriptedServer) -> None:
    from workers_ai.errors import InputValidationError

    with pytest.raises(InputValidationError, match=r"nova-3.*\$\.mode"):
        _client(server).model(NOVA).transcribe(audio=AUDIO, mode="poetry")  # type: ignore[arg-type]
    assert server.requests == []


def test_the_async_client_sends_the_same_bytes(server: ScriptedServer) -> None:
    server.script(ok(RESULT))

    async def main() -> str:
        async with AsyncWorkersAI(
            account_id="0123456789abcdef0123456789abcdef", api_token="tok", base_url=server.base_url
        ) as ai:
            out = await ai.model(NOVA).transcribe(audio=AUDIO, smart_format=True)
            return out.text

    assert asyncio.run(main()) == "hello there"
    (req,) = server.requests
    assert req.body == AUDIO and req.headers["content-type"] == "audio/mpeg" and req.query == "smart_format=true"


def test_the_emulator_takes_raw_audio_and_query_options() -> None:
    with Emulator() as emu, emu.client() as ai:
        out = ai.model(NOVA).transcribe(audio=AUDIO, detect_language=True)
        assert out.text and out.results is not None and out.results.channels[0].alternatives[0].transcript
        (req,) = [r for r in emu.requests if r.method == "POST"]
    assert req.body == AUDIO and req.query == "detect_language=true"


def test_the_cli_file_option_sends_the_raw_audio(tmp_path: Path) -> None:
    audio = tmp_path / "a.mp3"
    audio.write_bytes(AUDIO)
    with Emulator() as emu:
        env = {**os.environ, "CLOUDFLARE_ACCOUNT_ID": emu.account_id, "CLOUDFLARE_API_TOKEN": emu.api_token}
        script = Path(sys.executable).parent / "workers-ai"
        cmd = [str(script), "run", NOVA, "--file", str(audio), "punctuate=true"]
        proc = subprocess.run([*cmd, "--base-url", emu.base_url], capture_output=True, text=True, env=env, timeout=60)
        (req,) = [r for r in emu.requests if r.method == "POST"]
    assert proc.returncode == 0, proc.stderr
    assert '"transcript"' in proc.stdout
    assert req.body == AUDIO and req.headers["content-type"] == "audio/mpeg" and req.query == "punctuate=true"
