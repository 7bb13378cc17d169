"""Shared vocabulary of the synthesizer: :data:`MISSING` (no hint), :class:`Unsatisfiable`, and JSON
type tests (``True`` is not ``1``)."""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING", "Unsatisfiable", "json_type", "same_json", "type_ok"]


class _Missing:
    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""No hint for this value."""


class Unsatisfiable(Exception):
    """The synthesizer found no value for a (sub)schema."""


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "unknown"


def type_ok(value: Any, kind: str) -> bool:
    got = json_type(value)
    return got == kind or (kind == "number" and got == "integer")


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1``."""
    return json_type(a) == json_type(b) and a == b
