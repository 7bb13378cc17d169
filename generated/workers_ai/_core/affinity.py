"""Session affinity: the ``x-session-affinity`` header that keeps a conversation on one replica, so
the API can reuse its cached prompt prefix."""

from __future__ import annotations

from .._error_base import ConfigurationError

__all__ = ["AFFINITY_HEADER", "affinity_header"]

AFFINITY_HEADER = "x-session-affinity"


def affinity_header(key: str) -> dict[str, str]:
    """``{"x-session-affinity": key}``; ``ConfigurationError`` for an empty key or one with a line break."""
    if not isinstance(key, str) or not key.strip() or any(c in key for c in "\r\n\0"):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"session_affinity must be a non-empty string without line breaks, not {key!r}")
    return {AFFINITY_HEADER: key}
