"""Speech recognition: ``.text`` on every ASR model's result (whisper's ``text``; nova-3's transcript)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["TranscriptResult", "TranscriptView"]


class TranscriptResult(Protocol):
    """What every speech recognition model's result offers."""

    @property
    def text(self) -> str: ...


def _alternative(obj: Any) -> Any:
    results = getattr(obj, "results", None)
    channels = getattr(results, "channels", None) or ()
    alts = getattr(channels[0], "alternatives", None) or () if channels else ()
    return alts[0] if alts else None


class TranscriptView:
    """Mixin of Deepgram-shaped outputs: nova-3's ``results.channels[].alternatives[]`` (the first
    channel's best transcript) and Flux's turn events (their ``transcript``)."""

    __slots__ = ()

    @property
    def text(self) -> str:
        """The transcript of the first channel's best alternative (``""`` when there is none)."""
        transcript = getattr(self, "transcript", None)
        if transcript is None:
            transcript = getattr(_alternative(self), "transcript", None)
        return transcript if isinstance(transcript, str) else ""
