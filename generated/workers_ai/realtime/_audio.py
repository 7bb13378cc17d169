"""Audio for realtime sessions, without I/O on the socket: audio sources cut into chunks, real-time
pacing, the transcript made of a session's events, speech formats and WAV files.

What the jobs on a session decide (chunk sizes, pacing, which events make the final transcript, the WAV
header) is plain code here, shared by the sync and async sessions (``_sync``, ``_aio``), which only wait
differently.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from ..errors import ConfigurationError, InputValidationError

if TYPE_CHECKING:
    from ._core import SessionCore

__all__ = ["AudioSource", "Transcript", "WavInfo", "audio_chunks", "read_wav", "wav_header", "write_wav"]

E = TypeVar("E")
AudioSource = bytes | str | os.PathLike[str] | IO[bytes] | Iterable[bytes]
_SAMPLE_BYTES = {"linear16": 2, "mulaw": 1, "alaw": 1}


class Transcript(msgspec.Struct, Generic[E], frozen=True):
    """What a whole transcription returned: the final ``text`` (final pieces joined by spaces),
    those ``finals`` one by one, and every event in arrival order."""

    text: str
    finals: list[str]
    events: list[E]


class WavInfo(msgspec.Struct, frozen=True):
    sample_rate: int
    channels: int
    bits: int
    data_offset: int
    data_bytes: int


# ---------------------------------------------------------------------------- audio in


def bytes_per_second(core: SessionCore) -> int | None:
    """How many bytes one second of the session's audio takes (None: not raw audio, or unknown)."""
    options = core.options
    encoding = getattr(options, "encoding", None)
    rate = getattr(options, "sample_rate", None)
    channels = getattr(options, "channels", None)
    width = _SAMPLE_BYTES.get(encoding) if isinstance(encoding, str) else None
    if width is None or not isinstance(rate, int):
        return None
    return width * rate * (channels if isinstance(channels, int) else 1)


def audio_chunks(source: AudioSource, chunk_bytes: int) -> Iterator[bytes]:
    """``source`` as chunks of about ``chunk_bytes`` (an iterable of chunks is passed through as it is);
    a WAV file or WAV bytes are sent without their header."""
    if isinstance(source, (str, os.PathLike)):
        data = Path(source).read_bytes()
        yield from _split(_without_header(data), chunk_bytes)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        yield from _split(_without_header(bytes(source)), chunk_bytes)
    elif hasattr(source, "read"):
        reader: Any = source
        while True:
            block = reader.read(chunk_bytes)
            if not block:
                return
            yield bytes(block)
    else:
        for chunk in source:
            if chunk:
                yield bytes(chunk)


def _split(data: bytes, size: int) -> Iterator[bytes]:
    view = memoryview(data)
    for at in range(0, len(data), size):
        yield bytes(view[at : at + size])


def _without_header(data: bytes) -> bytes:
    info = wav_info(data)
    return data[info.data_offset : info.data_offset + info.data_bytes] if info is not None else data


def chunk_size(core: SessionCore, chunk_ms: int) -> int:
    rate = bytes_per_second(core)
    return max(2, (rate or 32000) * chunk_ms // 1000 // 2 * 2)


class Pacer:
    """Real-time pacing: chunk ``n`` goes out no earlier than its audio time since the first chunk."""

    def __init__(self, core: SessionCore, pace: bool) -> None:
        self.rate = bytes_per_second(core) if pace else None
        if pace and self.rate is None:
            raise ConfigurationError(
                f"{core.model_id}: pace=True needs raw audio with a known rate "
                "(encoding linear16/mulaw/alaw and sample_rate)"
            )
        self.sent = 0
        self.start = time.monotonic()

    def delay(self, size: int) -> float:
        """Seconds to wait before sending the next ``size`` bytes."""
        if self.rate is None:
            return 0.0
        due = self.start + self.sent / self.rate
        self.sent += size
        return max(0.0, due - time.monotonic())


def collect(core: SessionCore, events: list[Any]) -> Transcript[Any]:
    finals = [t for t in (core.spec.final_text(e) for e in events) if t]
    return Transcript(text=" ".join(finals), finals=finals, events=events)


# ---------------------------------------------------------------------------- audio out


def wav_header(sample_rate: int, data_bytes: int, *, channels: int = 1, bits: int = 16) -> bytes:
    """A 44-byte RIFF/WAVE header for PCM audio of ``data_bytes`` bytes."""
    block = channels * bits // 8
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data_bytes,
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        sample_rate,
        sample_rate * block,
        block,
        bits,
        b"data",
        data_bytes,
    )


def write_wav(path: str | os.PathLike[str], chunks: Iterable[bytes], sample_rate: int) -> int:
    """Write ``chunks`` as a WAV file atomically (a failure leaves no partial file); returns the bytes of audio."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.part")
    size = 0
    try:
        with tmp.open("wb") as fh:
            fh.write(wav_header(sample_rate, 0))
            for chunk in chunks:
                fh.write(chunk)
                size += len(chunk)
            fh.seek(0)
            fh.write(wav_header(sample_rate, size))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size


def wav_info(data: bytes) -> WavInfo | None:
    """The format and data chunk of WAV bytes, or None when they are not a PCM WAV file."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    at, fmt = 12, None
    while at + 8 <= len(data):
        name, size = data[at : at + 4], struct.unpack_from("<I", data, at + 4)[0]
        body = at + 8
        if name == b"fmt " and size >= 16:
            channels, rate, _bps, _block, bits = struct.unpack_from("<HIIHH", data, body + 2)
            fmt = (rate, channels, bits)
        elif name == b"data" and fmt is not None:
            return WavInfo(fmt[0], fmt[1], fmt[2], body, min(size, len(data) - body))
        at = body + size + (size & 1)
    return None


def read_wav(path: str | os.PathLike[str]) -> tuple[WavInfo, bytes]:
    """A PCM WAV file's format and samples; ``InputValidationError`` naming the file otherwise."""
    data = Path(path).read_bytes()
    info = wav_info(data)
    if info is None:
        raise InputValidationError("wav", str(path), "not a PCM WAV file (RIFF/WAVE with fmt and data chunks)")
    return info, data[info.data_offset : info.data_offset + info.data_bytes]
