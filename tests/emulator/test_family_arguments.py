"""A family's methods take the same arguments on every model of the family (enumerated from the registry):
``transcribe(audio)`` with bytes, a path or a binary file (positionally or by name), ``speak(text=)``,
``generate_image(prompt=)``, ``embed(text=)`` and ``chat(messages=)`` / ``chat_stream(messages=)``; each
called on one shared emulator, its result read through the family's view."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workers_ai import TimedText, TimedWord, WorkersAI, _registry
from workers_ai.testing import Emulator

from tests._params import keywords

MODULES = {mid: module for mid, (module, _handle) in _registry.MODELS.items()}
TASKS = {mid: str(importlib.import_module(f"workers_ai.{mod}").INFO.task) for mid, mod in sorted(MODULES.items())}
HANDLES: dict[str, Any] = {
    mid: getattr(importlib.import_module(f"workers_ai.{mod}"), handle)
    for mid, (mod, handle) in _registry.MODELS.items()
}
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt " + b"\x00" * 4000

# Flux speaks over a WebSocket only (`ai.realtime`); its REST schema is its event shape.
ASR = [m for m, t in TASKS.items() if t == "Automatic Speech Recognition" and m != "@cf/deepgram/flux"]
TTS = [m for m, t in TASKS.items() if t == "Text-to-Speech"]
IMAGES = [m for m, t in TASKS.items() if t == "Text-to-Image"]
EMBEDDINGS = [m for m, t in TASKS.items() if t == "Text Embeddings"]
# Text models that chat (the clef/clairic scorers take other inputs).
CHAT = [m for m, t in TASKS.items() if t == "Text Generation" and not m.startswith("@cf/cloudflare/cl")]


def _first_param(cls: Any, method: str) -> inspect.Parameter:
    return list(inspect.signature(getattr(cls, method)).parameters.values())[1]


def test_the_families_are_the_catalogs() -> None:
    assert {"@cf/openai/whisper", "@cf/openai/whisper-tiny-en", "@cf/openai/whisper-large-v3-turbo"} <= set(ASR)
    assert "@cf/deepgram/nova-3" in ASR and "@cf/myshell-ai/melotts" in TTS
    assert len(IMAGES) >= 10 and len(EMBEDDINGS) >= 8 and len(CHAT) >= 50


@pytest.mark.parametrize("model_id", ASR)
def test_transcribe_takes_audio_first_on_every_asr_model(model_id: str) -> None:
    first = _first_param(HANDLES[model_id], "transcribe")
    assert first.name == "audio" and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, (model_id, first)


@pytest.mark.parametrize("model_id", TTS)
def test_speak_takes_text_on_every_tts_model(model_id: str) -> None:
    assert "text" in keywords(HANDLES[model_id].speak), model_id


@pytest.mark.parametrize("model_id", EMBEDDINGS)
def test_embed_takes_text_on_every_embedding_model(model_id: str) -> None:
    assert "text" in keywords(HANDLES[model_id].embed), model_id


@pytest.mark.parametrize("model_id", CHAT)
def test_chat_takes_messages_on_every_text_model(model_id: str) -> None:
    cls = HANDLES[model_id]
    assert keywords(cls.chat).get("messages") is True, model_id
    if model_id != "@cf/meta/llama-guard-3-8b":  # its schema has no `stream` input
        assert keywords(cls.chat_stream).get("messages") is True, model_id


@pytest.mark.parametrize("model_id", IMAGES)
def test_generate_image_takes_prompt(model_id: str) -> None:
    # FLUX.2 too: its form body is built from the keyword arguments (tests/runtime/test_form_body_inputs.py).
    method = HANDLES[model_id].generate_image
    assert keywords(method).get("prompt") is True and "prompt" not in inspect.signature(method).parameters, model_id


# ------------------------------------------------------------------ on the emulator


@pytest.fixture(scope="module")
def ai() -> Iterator[WorkersAI]:
    with Emulator() as emu, emu.client() as client:
        yield client


@pytest.mark.parametrize("model_id", ASR)
def test_every_asr_model_transcribes_bytes_a_path_and_a_file(model_id: str, ai: WorkersAI, tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    path.write_bytes(WAV)
    handle: Any = ai.model(model_id)
    with path.open("rb") as fh:
        outs = [handle.transcribe(WAV), handle.transcribe(path), handle.transcribe(fh), handle.transcribe(audio=WAV)]
    for out in outs:
        assert isinstance(out.text, str) and out.text, (model_id, out)
        assert all(isinstance(w, TimedWord) and type(w.start) is float for w in out.words)
        assert all(isinstance(s, TimedText) for s in out.segments)
    assert outs[0].words, f"{model_id}: the emulator sends timed words"
    assert [w.word for w in outs[0].words] == outs[0].text.split()
    if model_id == "@cf/openai/whisper-large-v3-turbo":
        assert outs[0].segments and outs[0].segments[0].text


@pytest.mark.parametrize("model_id", TTS)
def test_every_tts_model_speaks_text(model_id: str, ai: WorkersAI) -> None:
    out = ai.model(model_id).speak(text="Hello there")
    assert isinstance(out.data, bytes) and out.data and "/" in out.content_type, model_id


@pytest.mark.parametrize("model_id", EMBEDDINGS)
def test_every_embedding_model_embeds_text(model_id: str, ai: WorkersAI) -> None:
    out = ai.model(model_id).embed(text=["one", "two"])
    assert len(out.vectors) == 2 and out.dimensions > 0, model_id


@pytest.mark.parametrize("model_id", IMAGES)
def test_every_image_model_generates_from_a_prompt(model_id: str, ai: WorkersAI) -> None:
    out: Any = ai.model(model_id).generate_image(prompt="a llama in a meadow")
    assert isinstance(out.data, bytes) and out.data and out.content_type.startswith("image/"), model_id


def test_a_websocket_only_model_has_no_rest_methods() -> None:
    # flux's schema says "rest": false in its x-realtime section: the API serves it over WebSocket only,
    # so its handle opens sessions (listen) and offers no transcribe() that could never be answered.
    flux = HANDLES["@cf/deepgram/flux"]
    assert hasattr(flux, "listen") and not hasattr(flux, "transcribe")
    assert hasattr(HANDLES["@cf/deepgram/nova-3"], "transcribe")
