"""Small, real, deterministic media files for binary model outputs: PNG, JPEG, MP3 and WAV.

Each is built from the standard library only, so a user saving an emulated image or clip gets a file
any viewer or player opens. Images are tiles of two seeded colours; audio is silence.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable

__all__ = ["jpeg", "media_for", "mp3", "png", "wav"]

_TILE = 32


def _palette(seed: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    h = hashlib.sha256(seed.encode()).digest()
    return (h[0], h[1], h[2]), (h[3], h[4], h[5])


def _tile_colour(seed: str, tx: int, ty: int, tiles: tuple[int, int]) -> tuple[int, int, int]:
    """A diagonal blend between the two seeded colours, one colour per tile."""
    (r1, g1, b1), (r2, g2, b2) = _palette(seed)
    span = max(1, tiles[0] + tiles[1] - 2)
    t = (tx + ty) / span
    return (round(r1 + (r2 - r1) * t), round(g1 + (g2 - g1) * t), round(b1 + (b2 - b1) * t))


def _clamp_size(width: int, height: int) -> tuple[int, int]:
    return max(1, min(int(width), 2048)), max(1, min(int(height), 2048))


def png(width: int, height: int, seed: str) -> bytes:
    """An RGB PNG of the given size."""
    width, height = _clamp_size(width, height)
    tiles = (-(-width // _TILE), -(-height // _TILE))
    rows: list[bytes] = []
    for ty in range(tiles[1]):
        row = b"".join(
            bytes(_tile_colour(seed, tx, ty, tiles)) * min(_TILE, width - tx * _TILE) for tx in range(tiles[0])
        )
        line = b"\x00" + row  # filter type 0 (None) for every scanline
        rows.append(line * min(_TILE, height - ty * _TILE))
    raw = b"".join(rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


# Baseline JPEG, DC coefficients only: every 8x8 block is one flat colour, so the entropy-coded data
# is a DC difference and an end-of-block per block. The DC Huffman table is the standard luminance
# one; the AC table holds the single end-of-block symbol.
_DC_BITS = (0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0)
_DC_VALS = tuple(range(12))
_AC_BITS = (1,) + (0,) * 15
_AC_VALS = (0,)
_QUANT = 8


def _huffman_codes(bits: tuple[int, ...], vals: tuple[int, ...]) -> dict[int, tuple[int, int]]:
    codes: dict[int, tuple[int, int]] = {}
    code = 0
    k = 0
    for length, count in enumerate(bits, start=1):
        for _ in range(count):
            codes[vals[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return codes


class _BitWriter:
    def __init__(self) -> None:
        self.out = bytearray()
        self._acc = 0
        self._n = 0

    def write(self, value: int, length: int) -> None:
        for i in range(length - 1, -1, -1):
            self._acc = (self._acc << 1) | ((value >> i) & 1)
            self._n += 1
            if self._n == 8:
                self._emit()

    def _emit(self) -> None:
        self.out.append(self._acc)
        if self._acc == 0xFF:
            self.out.append(0x00)  # byte stuffing
        self._acc = 0
        self._n = 0

    def finish(self) -> bytes:
        if self._n:
            pad = 8 - self._n
            self._acc = (self._acc << pad) | ((1 << pad) - 1)
            self._n = 8
            self._emit()
        return bytes(self.out)


def _segment(marker: int, payload: bytes) -> bytes:
    return struct.pack(">HH", marker, len(payload) + 2) + payload


def jpeg(width: int, height: int, seed: str) -> bytes:
    """A baseline YCbCr JPEG of the given size."""
    width, height = _clamp_size(width, height)
    dc = _huffman_codes(_DC_BITS, _DC_VALS)
    ac_eob = _huffman_codes(_AC_BITS, _AC_VALS)[0]
    bx, by = -(-width // 8), -(-height // 8)
    tiles = (-(-width // _TILE), -(-height // _TILE))
    writer = _BitWriter()
    pred = [0, 0, 0]
    per_tile = _TILE // 8
    for y in range(by):
        for x in range(bx):
            r, g, b = _tile_colour(seed, x // per_tile, y // per_tile, tiles)
            ycc = (
                0.299 * r + 0.587 * g + 0.114 * b,
                128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
                128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
            )
            for c in range(3):
                level = max(0, min(255, round(ycc[c]))) - 128
                value = round(8 * level / _QUANT)  # the DC term of a flat block is 8x its level
                diff = value - pred[c]
                pred[c] = value
                size = abs(diff).bit_length()
                code, length = dc[size]
                writer.write(code, length)
                if size:
                    writer.write(diff if diff > 0 else diff - 1 + (1 << size), size)
                writer.write(*ac_eob)
    jfif = b"JFIF\x00" + struct.pack(">BBBHHBB", 1, 1, 0, 1, 1, 0, 0)
    dqt = bytes([0]) + bytes([_QUANT] * 64)
    sof = struct.pack(">BHHB", 8, height, width, 3) + bytes([1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0])
    dht = bytes([0x00, *_DC_BITS, *_DC_VALS]) + bytes([0x10, *_AC_BITS, *_AC_VALS])
    sos = bytes([3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0])
    return (
        b"\xff\xd8"
        + _segment(0xFFE0, jfif)
        + _segment(0xFFDB, dqt)
        + _segment(0xFFC0, sof)
        + _segment(0xFFC4, dht)
        + _segment(0xFFDA, sos)
        + writer.finish()
        + b"\xff\xd9"
    )


# MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, mono, no CRC. A frame whose side information is all zero
# has no main data: decoders play it as 1152 samples of silence.
_MP3_HEADER = bytes([0xFF, 0xFB, 0x90, 0xC4])
_MP3_FRAME_BYTES = 144 * 128000 // 44100
MP3_FRAME_SECONDS = 1152 / 44100


def mp3(seconds: float) -> bytes:
    """Silent MP3 of about ``seconds`` (at least one frame)."""
    frames = max(1, min(4000, round(seconds / MP3_FRAME_SECONDS)))
    frame = _MP3_HEADER + bytes(_MP3_FRAME_BYTES - len(_MP3_HEADER))
    return frame * frames


def wav(seconds: float, rate: int = 16000) -> bytes:
    """Silent 16-bit mono PCM WAV."""
    samples = max(1, min(rate * 120, round(seconds * rate)))
    data = bytes(samples * 2)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def media_for(content_type: str, *, seed: str, width: int = 256, height: int = 256, seconds: float = 1.0) -> bytes:
    """Bytes of ``content_type`` (image/png, image/jpeg, audio/mpeg, audio/wav); other types get seeded bytes."""
    kind = content_type.split(";")[0].strip().lower()
    makers: dict[str, Callable[[], bytes]] = {
        "image/png": lambda: png(width, height, seed),
        "image/jpeg": lambda: jpeg(width, height, seed),
        "image/jpg": lambda: jpeg(width, height, seed),
        "audio/mpeg": lambda: mp3(seconds),
        "audio/mp3": lambda: mp3(seconds),
        "audio/wav": lambda: wav(seconds),
        "audio/x-wav": lambda: wav(seconds),
        "audio/wave": lambda: wav(seconds),
    }
    maker = makers.get(kind)
    if maker is not None:
        return maker()
    return hashlib.sha256(seed.encode()).digest() * 4
