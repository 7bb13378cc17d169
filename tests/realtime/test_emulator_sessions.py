"""Realtime sessions, sync and async, against the emulator's WebSocket side (nova-3, flux, aura)."""

from __future__ import annotations

import asyncio
import wave
from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.errors import (
    AuthenticationError,
    InputValidationError,
    ModelNotFoundError,
    RateLimitError,
    RealtimeError,
)
from workers_ai.models.cf.deepgram.flux_live import TurnInfo
from workers_ai.models.cf.deepgram.nova_3_live import Metadata, Results, SpeechStarted
from workers_ai.realtime import RawEvent
from workers_ai.testing import Emulator

SECOND = bytes(32000)  # one second of 16 kHz linear16 silence


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def _async(emu: Emulator, **options: object) -> AsyncWorkersAI:
    return AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **options)  # type: ignore[arg-type]


def test_nova_sync_events_in_order_and_close_drains(emu: Emulator) -> None:
    nova = emu.client().model("@cf/deepgram/nova-3")
    with nova.listen(encoding="linear16", sample_rate=16000, interim_results=True, vad_events=True) as s:
        s.send(SECOND[:8000])
        first = s.receive(timeout=5)
        assert isinstance(first, SpeechStarted)
        interim = s.receive(timeout=5)
        # The first interim result answers the very chunk that produced it.
        assert isinstance(interim, Results) and not interim.is_final and interim.transcript == "the"
        s.send(SECOND[:8000])
        s.finalize()
        rest = s.close()
    finals = [e for e in rest if isinstance(e, Results) and e.is_final]
    assert finals[-1].from_finalize is True and finals[-1].transcript == "the quick"
    assert [w.word for w in finals[-1].words] == ["the", "quick"]
    assert isinstance(rest[-1], Metadata) and rest[-1].duration == 0.5
    handshake = emu.requests_for("@cf/deepgram/nova-3")[-1]
    assert (
        handshake.method == "GET"
        and "interim_results=true" in handshake.query
        and "sample_rate=16000" in handshake.query
    )


def test_nova_transcribe_file_paced_and_unpaced(emu: Emulator, tmp_path: Path) -> None:
    path = tmp_path / "speech.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(SECOND * 2)
    nova = emu.client().model("@cf/deepgram/nova-3")
    with nova.listen(encoding="linear16", sample_rate=16000) as s:
        fast = s.transcribe(path)
    assert fast.text == "the quick brown fox jumps over a lazy"
    assert fast.finals == ["the quick brown fox", "jumps over a lazy"]
    with nova.listen(encoding="linear16", sample_rate=16000) as s:
        paced = s.transcribe(SECOND[:16000], pace=True, chunk_ms=100)  # 0.5 s of audio, sent in real time
    assert paced.text == "the quick"


def test_flux_sync_turns(emu: Emulator) -> None:
    flux = emu.client().model("@cf/deepgram/flux")
    with flux.listen(encoding="linear16", sample_rate=16000, eager_eot_threshold=0.5) as s:
        result = s.transcribe([SECOND, SECOND])
    turns = [e for e in result.events if isinstance(e, TurnInfo)]
    assert [t.event for t in turns[:5]] == ["StartOfTurn", "Update", "Update", "EagerEndOfTurn", "EndOfTurn"]
    assert turns[4].turn_index == 0 and turns[5].turn_index == 1
    assert result.finals == ["the quick brown fox", "jumps over a lazy"]


def test_aura_sync_audio_and_control_events(emu: Emulator, tmp_path: Path) -> None:
    aura = emu.client().model("@cf/deepgram/aura-2-en")
    with aura.speak_live(encoding="linear16", sample_rate=16000, speaker="luna") as s:
        audio = b"".join(s.speak("hello"))
        s.send_text("never spoken")
        s.clear()
        rest = s.close()
    assert len(audio) == 5 * 320 * 2  # 20 ms per character at 16 kHz
    assert [type(e).__name__ for e in rest] == ["Cleared"]


def test_async_sessions_for_each_model(emu: Emulator) -> None:
    async def main() -> tuple[str, list[str], int]:
        ai = _async(emu)
        try:
            async with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
                nova = await s.transcribe(SECOND * 2)
            events: list[str] = []
            async with ai.model("@cf/deepgram/flux").listen(encoding="linear16", sample_rate=16000) as f:
                await f.send(SECOND)
                await f.close()
                async for e in f:
                    events.append(e.event if isinstance(e, TurnInfo) else type(e).__name__)
            size = 0
            async with ai.model("@cf/deepgram/aura-1").speak_live() as a:
                async for chunk in a.speak("hi"):
                    size += len(chunk)
            return nova.text, events, size
        finally:
            await ai.aclose()

    text, events, size = asyncio.run(main())
    assert text == "the quick brown fox jumps over a lazy"
    assert events == ["Connected", "StartOfTurn", "Update", "Update", "EndOfTurn"]
    assert size == 2 * 480 * 2  # aura's default 24 kHz


def test_refused_handshakes_raise_the_rest_errors(emu: Emulator) -> None:
    bad = WorkersAI(account_id=emu.account_id, api_token="wrong", base_url=emu.base_url)
    with pytest.raises(AuthenticationError), bad.model("@cf/deepgram/nova-3").listen(encoding="linear16"):
        pass
    faulty = emu.client(headers={"x-emulator-fault": "ws_refuse; status=429; code=3040"})
    with pytest.raises(RateLimitError) as caught, faulty.model("@cf/deepgram/nova-3").listen():
        pass
    assert "Capacity" in str(caught.value)
    from workers_ai.models.cf.deepgram.nova_3_live import SPEC
    from workers_ai.realtime import ListenSession

    with pytest.raises(ModelNotFoundError), ListenSession(emu.client(), SPEC, {}, model_id="@cf/deepgram/nova-9"):
        pass
    with pytest.raises(InputValidationError) as invalid:
        emu.client().model("@cf/deepgram/flux").listen(encoding="linear16", sample_rate="fast")  # type: ignore[typeddict-item]
    assert "sample_rate" in str(invalid.value)


def test_close_1011_mid_stream_names_what_was_not_answered(emu: Emulator) -> None:
    ai = emu.client(headers={"x-emulator-fault": "ws_close_1011; after=2"})
    with pytest.raises(RealtimeError) as caught:
        with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
            s.send(SECOND[:3200])
            s.send(SECOND[:3200])
            for _ in s:
                pass
    assert caught.value.close_code == 1011
    assert "6400 bytes of audio with no result" in str(caught.value)


def test_idle_close_without_keepalive_and_keepalive_keeps_it_open(emu: Emulator) -> None:
    from workers_ai.models.cf.deepgram.nova_3_live import SPEC
    from workers_ai.realtime import ListenSession, RealtimeSpec

    ai = emu.client(headers={"x-emulator-fault": "ws_idle; seconds=0.6"})
    quiet = RealtimeSpec(
        model_id=SPEC.model_id, kind="listen", options=SPEC.options, events=SPEC.events, send=SPEC.send
    )
    with pytest.raises(RealtimeError) as caught:
        with ListenSession(ai, quiet, {"encoding": "linear16", "sample_rate": 16000}) as s:
            s.send(SECOND[:3200])
            for _ in s:
                pass
    assert caught.value.close_code == 1011 and "NET-0001" in str(caught.value)
    fast = RealtimeSpec(
        model_id=SPEC.model_id,
        kind="listen",
        options=SPEC.options,
        events=SPEC.events,
        send=SPEC.send,
        keepalive_seconds=0.2,
    )
    with ListenSession(ai, fast, {"encoding": "linear16", "sample_rate": 16000}) as s:
        s.send(SECOND[:3200])
        assert s.receive(timeout=1.5) is None  # 1.5 s of silence: KeepAlive kept it open
        assert not s.ended
        s.close()


def test_slow_reader_backpressure_loses_nothing(emu: Emulator) -> None:
    async def main() -> list[str]:
        ai = _async(emu, headers={"x-emulator-fault": "ws_slow_reader; delay=0.02"})
        try:
            async with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
                result = await s.transcribe(SECOND * 2, chunk_ms=50)
                return result.finals
        finally:
            await ai.aclose()

    assert asyncio.run(main()) == ["the quick brown fox", "jumps over a lazy"]


def test_unknown_message_types_are_kept_raw() -> None:
    from workers_ai.models.cf.deepgram.nova_3_live import SPEC

    event = SPEC.decode(b'{"type":"Brand New","x":1}')
    assert isinstance(event, RawEvent) and event.type == "Brand New" and event.data == {"type": "Brand New", "x": 1}
    broken = SPEC.decode(b'{"type":"Results","channel":3}')
    assert isinstance(broken, RawEvent) and "does not fit" in broken.error


def test_gateway_url_form_on_the_emulator(emu: Emulator) -> None:
    from workers_ai import Gateway

    gw = Gateway(id="gw1", base_url=emu.gateway_url, url_form=True)
    ai = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, gateway=gw)
    with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
        assert s.transcribe(SECOND).text == "the quick brown fox"
    rec = emu.requests_for("@cf/deepgram/nova-3")[-1]
    assert rec.path.endswith("/gw1/workers-ai") and rec.query.startswith("model=@cf/deepgram/nova-3&")


def test_unknown_options_are_refused_before_anything_is_sent(emu: Emulator) -> None:
    before = len(emu.requests)
    with pytest.raises(InputValidationError) as caught:
        emu.client().model("@cf/deepgram/flux").listen(encoding="linear16", sample_rate=16000, interim_results=True)  # type: ignore[call-arg]
    assert "interim_results" in str(caught.value)
    assert len(emu.requests) == before
