"""JSON Schemas without ``$ref``: what ``msgspec.json.schema`` writes, made self-contained for the API."""

from __future__ import annotations

from typing import Any, cast

from .._core.jsonview import as_list, as_object
from ..errors import ConfigurationError

__all__ = ["inline_refs"]


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``#/$defs/...`` reference replaced by the definition (``$defs`` dropped).

    Model servers take one schema object; references they may not follow. A recursive type cannot be
    inlined and raises ``ConfigurationError``.
    """
    defs = as_object(schema.get("$defs")) or {}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        obj = as_object(node)
        if obj is None:
            items = as_list(node)
            return node if items is None else [walk(v, seen) for v in items]
        ref = obj.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise ConfigurationError(f"JSON Schema of {name!r} is recursive; it cannot be sent inline")
            target = as_object(defs.get(name))
            if target is None:
                raise ConfigurationError(f"JSON Schema reference {ref!r} has no definition")
            merged = {**target, **{k: v for k, v in obj.items() if k != "$ref"}}
            return walk(merged, (*seen, name))
        return {k: walk(v, seen) for k, v in obj.items() if k != "$defs"}

    return cast("dict[str, Any]", walk(schema, ()))
