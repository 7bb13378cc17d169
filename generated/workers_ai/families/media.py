"""Media results (text-to-speech, text-to-image): ``.data`` bytes, ``.content_type`` and ``.save(path)``,
whether the wire carried raw bytes (:class:`~workers_ai.BinaryOutput`) or base64 inside JSON."""

from __future__ import annotations

import base64
import binascii
import os
from typing import Protocol

from .._core.binary import BinaryOutput
from .._error_base import ResponseDecodeError

__all__ = ["MediaResult", "MediaView", "as_binary", "sniff"]

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"\x1aE\xdf\xa3", "audio/webm"),
)


def sniff(data: bytes) -> str:
    """The media type of ``data`` from its first bytes (``application/octet-stream`` when unknown)."""
    if data[:4] == b"RIFF" and data[8:12] in (b"WAVE", b"WEBP"):
        return "audio/wav" if data[8:12] == b"WAVE" else "image/webp"
    if data[4:8] == b"ftyp":
        return "audio/mp4" if data[8:11] == b"M4A" else "video/mp4"
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    return "application/octet-stream"


class MediaResult(Protocol):
    """What every media-producing model's result offers."""

    @property
    def data(self) -> bytes: ...
    @property
    def content_type(self) -> str: ...
    def save(self, path: str | os.PathLike[str]) -> None: ...


class MediaView:
    """Mixin of JSON media outputs (``{image: <base64>}``, ``{audio: <base64>}``)."""

    __slots__ = ()

    @property
    def data(self) -> bytes:
        """The media bytes, base64-decoded."""
        text = getattr(self, "image", None)
        if text is None:
            text = getattr(self, "audio", None)
        if not isinstance(text, str):
            return b""
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ResponseDecodeError(f"media is not valid base64: {exc}") from None

    @property
    def content_type(self) -> str:
        """The media type, from the bytes' signature."""
        return sniff(self.data)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the bytes to ``path``."""
        with open(path, "wb") as fh:
            fh.write(self.data)


def as_binary(value: object) -> object:
    """A base64 media JSON answer (a :class:`MediaView` struct) as the :class:`BinaryOutput` a model that
    also answers in raw bytes hands back, so its methods have one return type; anything else unchanged."""
    if isinstance(value, MediaView):
        data = value.data
        return BinaryOutput(data, sniff(data))
    return value
