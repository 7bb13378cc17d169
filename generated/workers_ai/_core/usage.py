"""Token usage as the API reports it, on stream events and on finished batches."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Usage", "usage_from"]


class Usage(msgspec.Struct):
    """Token counts. ``prompt_tokens_details`` (cached tokens) and ``neurons`` appear on newer models."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_tokens_details: dict[str, Any] | None = None
    neurons: float | None = None


def usage_from(value: Any) -> Usage | None:
    """A :class:`Usage` from a decoded ``usage`` object, or None when it is missing or unreadable."""
    if not isinstance(value, dict):
        return None
    try:
        return msgspec.convert(value, Usage, strict=False)
    except msgspec.ValidationError:
        return None
