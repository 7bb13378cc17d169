"""``until_flushed()`` on a speak session: the loop docs/realtime.md shows ends once every flush is answered,
sync and async, against the emulator's aura, each under a deadline (a hang fails, it does not block the run)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from workers_ai import AsyncWorkersAI
from workers_ai.models.cf.deepgram.aura_2_en_live import Flushed
from workers_ai.testing import Emulator

DEADLINE = 20.0
PER_CHAR = 320 * 2  # bytes of 16 kHz linear16 the emulator speaks per character (20 ms)
T = TypeVar("T")


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def within(deadline: float, run: Callable[[], T]) -> T:
    """``run()`` in a daemon thread; fails the test if it has not returned within ``deadline`` seconds."""
    out: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            out.append(run())
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(deadline)
    assert not thread.is_alive(), f"still iterating after {deadline:g} s"
    if failed:
        raise failed[0]
    return out[0]


def _kinds(items: list[Any]) -> list[str]:
    return ["audio" if isinstance(i, bytes) else type(i).__name__ for i in items]


def test_sync_until_flushed_ends_after_every_flush_is_answered_and_the_session_stays_open(emu: Emulator) -> None:
    aura = emu.client().model("@cf/deepgram/aura-2-en")

    def run() -> tuple[list[Any], list[Any], list[Any], bytes]:
        with aura.speak_live(encoding="linear16", sample_rate=16000, speaker="luna") as voice:
            nothing = list(voice.until_flushed())  # no flush pending: ends at once
            voice.send_text("hello")
            voice.flush()
            voice.send_text("hi")
            voice.flush()
            both = list(voice.until_flushed())
            again = b"".join(voice.speak("yes"))  # still open: more text, more audio
            voice.send_text("ok")
            voice.flush()
            rest = list(voice.until_flushed())
        return nothing, both, rest, again

    nothing, both, rest, again = within(DEADLINE, run)
    assert [i for i in nothing if isinstance(i, bytes)] == []
    flushed = [i for i in both if isinstance(i, Flushed)]
    assert len(flushed) == 2 and isinstance(both[-1], Flushed)  # the second Flushed is the last item
    assert sum(len(i) for i in both if isinstance(i, bytes)) == 7 * PER_CHAR
    assert len(again) == 3 * PER_CHAR
    assert _kinds(rest)[-1] == "Flushed" and sum(len(i) for i in rest if isinstance(i, bytes)) == 2 * PER_CHAR


def test_a_flushed_taken_by_receive_counts(emu: Emulator) -> None:
    aura = emu.client().model("@cf/deepgram/aura-2-en")

    def run() -> list[Any]:
        with aura.speak_live(encoding="linear16", sample_rate=16000, speaker="luna") as voice:
            voice.send_text("hey")
            voice.flush()
            while not isinstance(voice.receive(timeout=5), Flushed):
                pass
            return list(voice.until_flushed())  # the one flush is answered already: nothing to wait for

    assert within(DEADLINE, run) == []


def test_async_until_flushed_delivers_audio_read_ahead_then_ends(emu: Emulator) -> None:
    async def main() -> tuple[list[Any], bytes]:
        async with AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
            aura = ai.model("@cf/deepgram/aura-2-en")
            async with aura.speak_live(encoding="linear16", sample_rate=16000, speaker="luna") as voice:
                await voice.send_text("hello")
                await voice.flush()
                # The reader task has received the audio and the Flushed before the loop starts.
                for _ in range(250):
                    if voice.core.unanswered() == ():
                        break
                    await asyncio.sleep(0.02)
                assert voice.core.unanswered() == () and voice.core.flushing
                items = [item async for item in voice.until_flushed()]
                spoken = b"".join([chunk async for chunk in voice.speak("hi")])
        return items, spoken

    items, spoken = asyncio.run(asyncio.wait_for(main(), DEADLINE))
    assert _kinds(items)[-1] == "Flushed" and _kinds(items).count("Flushed") == 1
    assert sum(len(i) for i in items if isinstance(i, bytes)) == 5 * PER_CHAR
    assert len(spoken) == 2 * PER_CHAR
