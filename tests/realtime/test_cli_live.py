"""``workers-ai listen FILE`` and ``workers-ai speak TEXT -o out.wav`` against the emulator."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest
from workers_ai._cli.main import main
from workers_ai.testing import Emulator


@pytest.fixture
def emu(emulator_env: Emulator) -> Emulator:
    return emulator_env


def test_listen_prints_interim_then_final_lines(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(16000))  # one second at 8 kHz
    assert main(["listen", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["~ the", "~ the quick", "~ the quick brown", "the quick brown fox"]
    assert "sample_rate=8000" in emu.requests_for("@cf/deepgram/nova-3")[-1].query


def test_listen_refuses_a_model_without_websocket(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "raw.pcm"
    path.write_bytes(bytes(3200))
    assert main(["listen", str(path), "--model", "@cf/openai/whisper"]) == 2
    assert "not a realtime speech-to-text model" in capsys.readouterr().err


def test_speak_writes_a_playable_wav(emu: Emulator, tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    assert main(["speak", "hello", "-o", str(out), "--sample-rate", "16000", "--speaker", "luna"]) == 0
    with wave.open(str(out)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 16000, 5 * 320)
    assert not list(tmp_path.glob(".*.part"))
