"""Speech recognition: ``.text`` on every ASR model's result (whisper's ``text``; nova-3's transcript), and
``.words`` / ``.segments`` with their timings where the model gives them (whisper's ``words``,
whisper-large-v3-turbo's ``segments``, nova-3's words of the best alternative)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

__all__ = ["TimedText", "TimedTranscriptView", "TimedWord", "TimingView", "TranscriptResult", "TranscriptView"]


class TimedWord(NamedTuple):
    """One recognised word and when it was said (seconds from the start of the audio)."""

    word: str
    start: float
    end: float


class TimedText(NamedTuple):
    """One segment of the transcript and when it was said (seconds from the start of the audio)."""

    text: str
    start: float
    end: float


class TranscriptResult(Protocol):
    """What every speech recognition model's result offers (``words``/``segments`` empty where the model
    gives none)."""

    @property
    def text(self) -> str: ...
    @property
    def words(self) -> list[TimedWord]: ...
    @property
    def segments(self) -> list[TimedText]: ...


def _alternative(obj: Any) -> Any:
    results = getattr(obj, "results", None)
    channels = getattr(results, "channels", None) or ()
    alts = getattr(channels[0], "alternatives", None) or () if channels else ()
    return alts[0] if alts else None


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _timed_words(items: Iterable[Any]) -> list[TimedWord]:
    out: list[TimedWord] = []
    for item in items:
        word = getattr(item, "word", None)
        if isinstance(word, str):
            out.append(TimedWord(word, _seconds(getattr(item, "start", None)), _seconds(getattr(item, "end", None))))
    return out


class TimingView:
    """Mixin of whisper-shaped outputs (their wire ``text`` is the transcript): the timed words and segments,
    read from the wire ``words`` / ``segments`` (kept as ``words_`` / ``segments_``)."""

    __slots__ = ()

    @property
    def words(self) -> list[TimedWord]:
        """Every recognised word with its timing (a segmented answer's words, in order; ``[]`` when none)."""
        words = getattr(self, "words_", None)
        if words is None:
            words = [w for s in getattr(self, "segments_", None) or () for w in getattr(s, "words", None) or ()]
        return _timed_words(words)

    @property
    def segments(self) -> list[TimedText]:
        """The transcript's timed segments (``[]`` when the model gives none)."""
        out: list[TimedText] = []
        for item in getattr(self, "segments_", None) or ():
            text = getattr(item, "text", None)
            if isinstance(text, str):
                out.append(
                    TimedText(text, _seconds(getattr(item, "start", None)), _seconds(getattr(item, "end", None)))
                )
        return out


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


class TimedTranscriptView(TranscriptView):
    """Mixin of nova-3's output: the transcript with the best alternative's timed words."""

    __slots__ = ()

    @property
    def words(self) -> list[TimedWord]:
        """The best alternative's words with their timings (``[]`` when none)."""
        return _timed_words(getattr(_alternative(self), "words", None) or ())

    @property
    def segments(self) -> list[TimedText]:
        """nova-3's REST answer has no timed segments in its schema: always ``[]``."""
        return []
