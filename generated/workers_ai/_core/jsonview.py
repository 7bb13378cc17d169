"""Typed views of decoded JSON, so code walking untyped data stays precise under strict checkers."""

from __future__ import annotations

from typing import Any, cast

import msgspec

__all__ = ["DECODE_ERRORS", "as_list", "as_object", "whole_numbers"]

# What msgspec raises on bytes it cannot read: malformed JSON, invalid UTF-8, nesting too deep.
DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, UnicodeError, RecursionError)


def as_object(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None when it is something else."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_list(value: object) -> list[Any] | None:
    """``value`` as a JSON array, or None when it is something else."""
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return items
    return None


def whole_numbers(value: Any) -> Any:
    """``value`` with every whole-number float as an int (JSON Schema counts ``3.0`` as an integer; msgspec's
    ``int`` takes only ints)."""
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [whole_numbers(v) for v in items]
    return value
