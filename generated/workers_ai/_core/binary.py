"""Binary data in and out: raw request bodies, base64 and byte-array fields, and binary replies."""

from __future__ import annotations

import base64
import os
from typing import IO, Any, TypeAlias, TypeVar, cast

from .._error_base import ConfigurationError

__all__ = ["BinaryInput", "BinaryOutput", "as_base64", "as_bytes", "as_uint8", "read_binary"]

BinaryInput: TypeAlias = bytes | bytearray | memoryview | os.PathLike[str] | IO[bytes]
_T = TypeVar("_T")


class BinaryOutput(bytes):
    """Bytes of a binary reply (an image, audio), with the ``content_type`` the server declared."""

    content_type: str

    def __new__(cls, data: bytes, content_type: str) -> BinaryOutput:
        obj = super().__new__(cls, data)
        obj.content_type = content_type
        return obj

    def __repr__(self) -> str:
        return f"BinaryOutput({len(self)} bytes, content_type={self.content_type!r})"

    @property
    def data(self) -> bytes:
        """The bytes themselves (what a JSON media result's ``.data`` decodes, so both read alike)."""
        return bytes(self)

    def save(self, path: str | os.PathLike[str]) -> None:
        with open(path, "wb") as fh:
            fh.write(self)


def read_binary(value: BinaryInput) -> bytes:
    """The bytes of ``value``: bytes-like objects as they are, paths read, files read to the end.

    ``ConfigurationError`` names a path that cannot be read (missing, a folder, no permission) and a
    file opened in text mode, before anything is sent.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        raise ConfigurationError(STR_IS_NOT_BYTES.format(value=shown(value)))
    if isinstance(value, os.PathLike):
        try:
            with open(value, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise ConfigurationError(f"cannot read {os.fspath(value)}: {exc.strerror or exc}") from None
    data = cast("object", value.read())
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    name = getattr(value, "name", "the file")
    raise ConfigurationError(f"{name} is open in text mode: open it with 'rb' to send its bytes")


# A str where bytes go is a path written as text, most often: say how to send the file.
STR_IS_NOT_BYTES = "a str ({value}) is not bytes: pass pathlib.Path(...) to send a file, or the bytes themselves"


def shown(value: str) -> str:
    """A str argument as an error message quotes it (cut at 60 characters)."""
    return repr(value if len(value) <= 60 else value[:57] + "...")


def is_base64_text(value: str) -> bool:
    """Whether ``value`` reads as base64 (padding included), as a base64 field's text must."""
    try:
        base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return True


def _is_binary(value: object) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview, os.PathLike)) or hasattr(value, "read")


def as_bytes(value: BinaryInput | _T) -> bytes | _T:
    """For ``format: binary`` fields inside JSON (msgspec sends bytes as base64)."""
    return read_binary(value) if _is_binary(value) else value  # type: ignore[arg-type,return-value]


def as_base64(value: BinaryInput | _T) -> str | _T:
    """For string fields that carry base64: raw bytes are encoded, strings pass through."""
    if _is_binary(value):
        return base64.b64encode(read_binary(value)).decode("ascii")  # type: ignore[arg-type]
    return value  # type: ignore[return-value]


def as_uint8(value: BinaryInput | _T) -> list[Any] | _T:
    """For fields that carry bytes as an array of integers 0-255."""
    if _is_binary(value):
        return list(read_binary(value))  # type: ignore[arg-type]
    return value  # type: ignore[return-value]
