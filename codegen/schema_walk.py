"""Walking JSON Schemas by meaning: which keys hold subschemas, which hold data, and JSON pointers.

The generator's one set of JSON-narrowing helpers (``as_map``, ``as_list``): every step (``load``, ``plan``,
``render``) and the schema tools (``normalise``, ``prose``, ``schema_diff``) use these, so no step reaches
back into another for them. It imports nothing of the generator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

__all__ = ["DATA_KEYS", "MAP_KEYS", "SUB_KEYS", "as_list", "as_map", "branches", "escape", "subschemas"]

# Keys whose value is a map of name -> subschema.
MAP_KEYS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Keys whose value is one subschema or a list of them.
SUB_KEYS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
LIST_KEYS = ("oneOf", "anyOf", "allOf", "prefixItems")
# Keys whose value is data (never walked, never rewritten).
DATA_KEYS = ("enum", "const", "default", "examples", "required")


def as_map(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_list(value: object) -> list[Any] | None:
    """``value`` as a JSON array, or None."""
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return items
    return None


def escape(key: str) -> str:
    """One JSON pointer segment."""
    return key.replace("~", "~0").replace("/", "~1")


def subschemas(node: dict[str, Any], pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The direct subschemas of ``node`` with their pointers (property maps walked by name)."""
    for key, value in node.items():
        where = f"{pointer}/{escape(key)}"
        if key in MAP_KEYS:
            for name, sub in (as_map(value) or {}).items():
                obj = as_map(sub)
                if obj is not None:
                    yield obj, f"{where}/{escape(name)}"
        elif key in SUB_KEYS or key in LIST_KEYS:
            many = as_list(value)
            if many is not None:
                for i, sub in enumerate(many):
                    obj = as_map(sub)
                    if obj is not None:
                        yield obj, f"{where}/{i}"
            else:
                obj = as_map(value)
                if obj is not None:
                    yield obj, where


def walk(node: dict[str, Any], pointer: str = "") -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema object at or below ``node``, parents first."""
    yield node, pointer
    for sub, where in subschemas(node, pointer):
        yield from walk(sub, where)


def branches(schema: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """(``oneOf``/``anyOf``, its object branches) of a root schema, or (None, [schema]) when it has none."""
    for key in ("oneOf", "anyOf"):
        many = as_list(schema.get(key))
        if many is not None:
            return key, [b for b in (as_map(x) for x in many) if b is not None]
    return None, [schema]
