"""Typed views of untyped JSON values (so strict type checkers see ``Any``, not ``Unknown``)."""

from __future__ import annotations

from typing import Any

__all__ = ["as_list", "as_obj"]


def as_obj(value: Any) -> dict[str, Any] | None:
    """``value`` when it is a JSON object, else None."""
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def as_list(value: Any) -> list[Any] | None:
    """``value`` when it is a JSON array, else None."""
    return value if isinstance(value, list) else None  # pyright: ignore[reportUnknownVariableType]
