"""JSON request bodies: what msgspec cannot encode becomes an ``InputValidationError`` naming the field.

A lone surrogate (``"\\ud800"``, which Python strings allow and UTF-8 does not) makes msgspec raise
``UnicodeEncodeError``, and an unknown object type ``TypeError``; every request body is encoded here so
both are reported the same way, with the path of the offending value, before anything is sent.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._error_base import InputValidationError

__all__ = ["encode_body"]

_ENCODER = msgspec.json.Encoder()


def encode_body(value: Any, model_id: str, where: str = "$") -> bytes:
    """``value`` as JSON bytes; ``InputValidationError(model_id, path, ...)`` for what JSON cannot hold."""
    try:
        return _ENCODER.encode(value)
    except UnicodeEncodeError:
        path = _surrogate_path(value, where) or where
        raise InputValidationError(
            model_id, path, "the text has a lone surrogate (not valid UTF-8, so not sendable as JSON)"
        ) from None
    except TypeError as exc:
        raise InputValidationError(model_id, where, f"not JSON-serialisable: {exc}") from None


def _surrogate_path(value: Any, path: str) -> str | None:
    """The path of the first string holding a lone surrogate, or None."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value, str_keys=True)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(key, str) and _surrogate_path(key, path) is not None:
                return f"{path}.{key!a}"
            found = _surrogate_path(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            found = _surrogate_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None
