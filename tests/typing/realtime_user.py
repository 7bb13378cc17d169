"""Realtime sessions as a user writes them: every assert_type must hold under mypy --strict and pyright strict."""

from __future__ import annotations

from typing import Literal

from typing_extensions import assert_type

from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.models.cf.deepgram.aura_2_en_live import Aura2EnEvent, Flushed
from workers_ai.models.cf.deepgram.flux_live import FluxEvent, TurnInfo
from workers_ai.models.cf.deepgram.nova_3_live import Nova3Event, Results, Word
from workers_ai.realtime import (
    AsyncListenSession,
    AsyncSpeakSession,
    ListenSession,
    RawEvent,
    SpeakSession,
    Transcript,
)


def nova(ai: WorkersAI) -> None:
    with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000, interim_results=True) as s:
        assert_type(s, ListenSession[Nova3Event])
        s.send(b"\0" * 3200)
        s.finalize()
        for ev in s:
            assert_type(ev, Nova3Event)
            if isinstance(ev, Results):
                assert_type(ev.transcript, str)
                assert_type(ev.is_final, bool)
                assert_type(ev.words, list[Word])
                assert_type(ev.words[0].start, float)
            elif isinstance(ev, RawEvent):
                assert_type(ev.type, str)
        done = s.transcribe(b"\0" * 32000)
        assert_type(done, Transcript[Nova3Event])
        assert_type(done.text, str)


def flux(ai: WorkersAI) -> None:
    with ai.model("@cf/deepgram/flux").listen(encoding="linear16", sample_rate=16000, eot_threshold=0.7) as s:
        for ev in s:
            if isinstance(ev, TurnInfo):
                assert_type(ev.event, Literal["Update", "StartOfTurn", "EagerEndOfTurn", "TurnResumed", "EndOfTurn"])
                assert_type(ev.transcript, str)
                assert_type(ev.turn_index, int)
            assert_type(ev, FluxEvent)


def aura(ai: WorkersAI) -> None:
    with ai.model("@cf/deepgram/aura-2-en").speak_live(speaker="luna", encoding="linear16") as s:
        assert_type(s, SpeakSession[Aura2EnEvent])
        s.send_text("hello")
        s.flush()
        for item in s:
            if isinstance(item, bytes):
                assert_type(item, bytes)
            elif isinstance(item, Flushed):
                assert_type(item.sequence_id, int)
        for chunk in s.speak("more"):
            assert_type(chunk, bytes)
        s.flush()
        for got in s.until_flushed():
            assert_type(got, bytes | Aura2EnEvent)


async def async_aura(ai: AsyncWorkersAI) -> None:
    async with ai.model("@cf/deepgram/aura-2-en").speak_live(speaker="luna") as s:
        assert_type(s, AsyncSpeakSession[Aura2EnEvent])
        await s.send_text("hello")
        await s.flush()
        async for got in s.until_flushed():
            assert_type(got, bytes | Aura2EnEvent)
        async for chunk in s.speak("more"):
            assert_type(chunk, bytes)


async def async_nova(ai: AsyncWorkersAI) -> None:
    async with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
        assert_type(s, AsyncListenSession[Nova3Event])
        await s.send(b"\0" * 3200)
        async for ev in s:
            assert_type(ev, Nova3Event)
        rest = await s.close()
        assert_type(rest, list[Nova3Event])
