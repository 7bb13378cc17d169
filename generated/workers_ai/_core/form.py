"""``multipart/form-data`` request bodies, framed by urllib3's ``encode_multipart_formdata``."""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Sequence
from typing import IO, TypeAlias

from urllib3.filepost import encode_multipart_formdata

from .._error_base import ConfigurationError

__all__ = ["FileInput", "FormField", "encode_form", "read_file_input"]

FileInput: TypeAlias = "str | os.PathLike[str] | IO[bytes] | tuple[str, bytes]"
"""A file to upload: a path, a file opened in binary mode, or a ``(name, bytes)`` pair."""
FormField: TypeAlias = "tuple[str, str | tuple[str, bytes, str]]"
"""A form field: ``(name, text)`` or ``(name, (file name, bytes, content type))``."""


def encode_form(fields: Sequence[FormField], *, boundary: str | None = None) -> tuple[bytes, str]:
    """The body and its ``Content-Type`` (with the boundary) for ``fields``, in order."""
    body, content_type = encode_multipart_formdata(list(fields), boundary=boundary)
    return body, content_type


def guess_type(name: str) -> str:
    """The MIME type a file name suggests, ``application/octet-stream`` when it suggests none."""
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def read_file_input(value: FileInput, index: int = 0) -> tuple[str, bytes]:
    """``(file name, bytes)`` of a path, a binary file or a ``(name, bytes)`` pair.

    ``ConfigurationError`` names the file that cannot be read (missing, a directory, a text-mode file).
    """
    if isinstance(value, tuple):
        if len(value) != 2 or not isinstance(value[0], str) or not isinstance(value[1], (bytes, bytearray)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"file #{index}: expected a (name, bytes) pair")
        return value[0], bytes(value[1])
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        try:
            with open(path, "rb") as fh:
                return os.path.basename(path), fh.read()
        except OSError as exc:
            raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = value.read()
    if not isinstance(data, (bytes, bytearray)):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"file #{index}: open it in binary mode ('rb')")
    name = getattr(value, "name", None)
    return (os.path.basename(name) if isinstance(name, str) else f"file{index}"), bytes(data)
