"""What the emulator's realtime models say: a deterministic script per session kind, frames in, frames
out, no I/O. :class:`ListenScript` transcribes (words from the audio's length), :class:`TurnScript` adds
turn events, :class:`SpeakScript` speaks text as tones; the same input always gives the same frames.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import msgspec

__all__ = ["ListenScript", "Out", "Script", "SpeakScript", "TurnScript", "synth"]

_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "again")
Out = tuple[str, Any]  # ("text", dict) | ("binary", bytes) | ("close", (code, reason))


class Script:
    """A deterministic model: frames in, frames out (no I/O)."""

    idle_close = True

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.request_id = "emu-" + msgspec.json.encode(sorted(options.items())).hex()[:24]

    def opened(self) -> list[Out]:
        return []

    def audio(self, data: bytes) -> list[Out]:
        return [("close", (1003, "this model takes text frames"))]

    def message(self, msg: dict[str, Any]) -> list[Out]:
        return []


class ListenScript(Script):
    """nova-3: one word per 0.25 s of audio; interim Results per chunk, a final one per second of audio."""

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self.rate = int(options.get("sample_rate", 16000)) * 2 * int(options.get("channels", 1))
        self.total: int = 0  # bytes received
        self.final_at = 0  # bytes covered by final results
        self.started = False

    def _words(self, start: int, end: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        step = self.rate // 4
        for i in range(start // step, end // step):
            w = _WORDS[i % len(_WORDS)]
            out.append({"word": w, "start": i * 0.25, "end": i * 0.25 + 0.2, "confidence": 0.99, "punctuated_word": w})
        return out

    def _results(self, end: int, *, final: bool, finalize: bool = False) -> Out:
        words = self._words(self.final_at, end)
        start, duration = self.final_at / self.rate, (end - self.final_at) / self.rate
        msg: dict[str, Any] = {
            "type": "Results",
            "channel_index": [0, 1],
            "duration": round(duration, 3),
            "start": round(start, 3),
            "is_final": final,
            "speech_final": final,
            "channel": {
                "alternatives": [
                    {
                        "transcript": " ".join(w["word"] for w in words),
                        "confidence": 0.99 if words else 0.0,
                        "words": words,
                    }
                ]
            },
            "metadata": {
                "request_id": self.request_id,
                "model_uuid": "emu-nova-3",
                "model_info": {"name": "nova-3", "version": "emu", "arch": "nova-3"},
            },
        }
        if finalize:
            msg["from_finalize"] = True
        if final:
            self.final_at = end
        return ("text", msg)

    def audio(self, data: bytes) -> list[Out]:
        out: list[Out] = []
        if not self.started and self.options.get("vad_events"):
            out.append(("text", {"type": "SpeechStarted", "channel": [0], "timestamp": 0.0}))
        self.started = True
        self.total += len(data)
        if self.total - self.final_at >= self.rate:
            out.append(self._results(self.final_at + self.rate, final=True))
        elif self.options.get("interim_results"):
            out.append(self._results(self.total, final=False))
        return out

    def message(self, msg: dict[str, Any]) -> list[Out]:
        kind = msg.get("type")
        if kind == "Finalize":
            return [self._results(self.total, final=True, finalize=True)]
        if kind == "CloseStream":
            out: list[Out] = [self._results(self.total, final=True)] if self.total > self.final_at else []
            meta = {
                "type": "Metadata",
                "transaction_key": "deprecated",
                "request_id": self.request_id,
                "sha256": "0" * 64,
                "created": "2026-11-25T00:00:00.000Z",
                "duration": round(self.total / self.rate, 3),
                "channels": 1,
            }
            return [*out, ("text", meta), ("close", (1000, ""))]
        if kind == "KeepAlive":
            return []
        return [("close", (1011, f"DATA-0000: unknown message type {kind!r}"))]


class TurnScript(ListenScript):
    """flux: Connected, then TurnInfo every 0.25 s of audio; a turn ends after each second of audio."""

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self.turn = 0
        self.seq = 0
        self.in_turn = False
        self.update_at = 0

    def _info(self, event: str, end: int) -> Out:
        self.seq += 1
        words = self._words(self.final_at, end)
        return (
            "text",
            {
                "type": "TurnInfo",
                "event": event,
                "request_id": self.request_id,
                "sequence_id": self.seq,
                "turn_index": self.turn,
                "audio_window_start": self.final_at / self.rate,
                "audio_window_end": end / self.rate,
                "transcript": " ".join(w["word"] for w in words),
                "words": [{"word": w["word"], "confidence": w["confidence"]} for w in words],
                "end_of_turn_confidence": 0.9 if event.endswith("EndOfTurn") else 0.1,
            },
        )

    def opened(self) -> list[Out]:
        return [("text", {"type": "Connected", "request_id": self.request_id, "sequence_id": 0})]

    def audio(self, data: bytes) -> list[Out]:
        out: list[Out] = []
        self.total += len(data)
        step = self.rate // 4
        while self.total - self.update_at >= step:
            self.update_at += step
            if not self.in_turn:
                self.in_turn = True
                out.append(self._info("StartOfTurn", self.update_at))
            elif self.update_at - self.final_at >= self.rate:
                out += self._end(self.update_at)
            else:
                out.append(self._info("Update", self.update_at))
        return out

    def _end(self, end: int) -> list[Out]:
        out: list[Out] = []
        if "eager_eot_threshold" in self.options:
            out.append(self._info("EagerEndOfTurn", end))
        out.append(self._info("EndOfTurn", end))
        self.final_at, self.in_turn = end, False
        self.turn += 1
        return out

    def message(self, msg: dict[str, Any]) -> list[Out]:
        if msg.get("type") == "CloseStream":
            out = self._end(self.total) if self.in_turn else []
            return [*out, ("close", (1000, ""))]
        return [
            (
                "text",
                {"type": "Error", "code": "INVALID_MESSAGE", "description": f"unknown message {msg.get('type')!r}"},
            )
        ]


class SpeakScript(Script):
    """aura: Metadata on open; Speak text is queued; Flush speaks it as linear16 (a tone per
    character, 20 ms each) in 4800-byte chunks, then Flushed; Clear drops it; Close speaks and closes."""

    idle_close = False

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self.rate = int(options.get("sample_rate", 24000))
        self.pending = ""
        self.seq = 0

    def opened(self) -> list[Out]:
        meta = {
            "type": "Metadata",
            "request_id": self.request_id,
            "model_name": "aura",
            "model_version": "emu",
            "model_uuid": "emu-aura",
        }
        return [("text", meta)]

    def _speak(self) -> list[Out]:
        pcm = synth(self.pending, self.rate)
        self.pending = ""
        return [("binary", pcm[i : i + 4800]) for i in range(0, len(pcm), 4800)]

    def message(self, msg: dict[str, Any]) -> list[Out]:
        kind = msg.get("type")
        if kind == "Speak":
            text = msg.get("text")
            if not isinstance(text, str):
                return [("text", {"type": "Warning", "code": "INVALID_TEXT", "description": "Speak needs text"})]
            self.pending += text
            return []
        if kind == "Flush":
            self.seq += 1
            return [*self._speak(), ("text", {"type": "Flushed", "sequence_id": self.seq})]
        if kind == "Clear":
            self.pending = ""
            self.seq += 1
            return [("text", {"type": "Cleared", "sequence_id": self.seq})]
        if kind == "Close":
            return [*self._speak(), ("close", (1000, ""))]
        return [("text", {"type": "Warning", "code": "UNKNOWN_MESSAGE", "description": f"unknown message {kind!r}"})]


def synth(text: str, rate: int) -> bytes:
    """Deterministic speech: 20 ms of a tone per character, its pitch from the character."""
    per = max(1, rate // 50)
    out = bytearray()
    for ch in text:
        freq = 200 + (ord(ch) % 32) * 20
        out += b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * freq * i / rate))) for i in range(per))
    return bytes(out)
