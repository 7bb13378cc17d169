"""Request URLs: model ids checked whole, and every path segment percent-encoded.

A model id is one or more ``/``-separated segments of letters, digits and ``@._+-``; a segment made
only of dots (``.``, ``..``) is refused because HTTP libraries resolve it and the request (with the
token) would go to another path. The ``/`` between segments stays literal and ``@`` stays as it is (the
API answers ``%2F`` with 400/7000); anything else is encoded.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from ..errors import ConfigurationError

__all__ = ["model_path", "segment"]

_SEGMENT = r"[A-Za-z0-9@._+-]+"
_MODEL_ID = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")


def model_path(model_id: str) -> str:
    """``model_id`` as a URL path (segments encoded, slashes kept); ``ConfigurationError`` for a bad id."""
    if not isinstance(model_id, str) or _MODEL_ID.fullmatch(model_id) is None:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"model id {model_id!r} is not a valid Workers AI model name")
    parts = model_id.split("/")
    if any(not part.strip(".") for part in parts):
        raise ConfigurationError(f"model id {model_id!r} has a '.' or '..' segment")
    return "/".join(quote(part, safe="@") for part in parts)


def segment(value: str) -> str:
    """One path segment, every reserved character encoded (a '/' too); dot-only values are refused."""
    if not value.strip("."):
        raise ConfigurationError(f"{value!r} cannot be a URL path segment")
    return quote(value, safe="")
