"""How the synthesizer reads a schema's keywords: ``$ref`` followed, ``allOf`` merged into one schema,
the ``type`` to build (led by a hint where one fits) and the ``enum`` value to take."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from .._core.jsonview import as_list, as_object
from ._instances import MISSING, Unsatisfiable, json_type, same_json, type_ok

__all__ = ["enum_value", "merge_all_of", "merge_schemas", "pick_type", "resolve_ref"]


def merge_schemas(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """The schema both ``a`` and ``b`` describe, as far as keywords can be merged key by key."""
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
            continue
        mine = out[key]
        if key == "properties":
            props = dict(cast("dict[str, Any]", mine))
            for name, sub in cast("dict[str, Any]", value).items():
                props[name] = {"allOf": [props[name], sub]} if name in props else sub
            out[key] = props
        elif key == "required":
            out[key] = list(dict.fromkeys([*(as_list(mine) or []), *(as_list(value) or [])]))
        elif key == "type":
            left = set(cast("list[str]", mine)) if isinstance(mine, list) else {cast(str, mine)}
            right = set(cast("list[str]", value)) if isinstance(value, list) else {cast(str, value)}
            if "number" in left:
                left.add("integer")
            if "number" in right:
                right.add("integer")
            both = sorted(left & right)
            if not both:
                raise Unsatisfiable("allOf branches disagree on the type")
            out[key] = both if len(both) > 1 else both[0]
        elif key in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"):
            out[key] = max(mine, value)
        elif key in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"):
            out[key] = min(mine, value)
        elif key == "anyOf":
            left_b, right_b = as_list(mine) or [], as_list(value) or []
            out[key] = [{"allOf": [x, y]} for x in left_b for y in right_b]
        else:
            out[key] = value
    return out


def resolve_ref(root: Any, obj: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in obj:
        ref = obj["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise Unsatisfiable(f"cannot follow $ref {ref!r}")
        target: Any = root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            t = as_object(target)
            if t is None or part not in t:
                raise Unsatisfiable(f"dangling $ref {ref!r}")
            target = t[part]
        if target is True:
            return {}
        nxt = as_object(target)
        if nxt is None:
            raise Unsatisfiable(f"$ref {ref!r} is not a schema")
        obj = nxt
        seen += 1
        if seen > 64:
            raise Unsatisfiable("$ref loop")
    return obj


def merge_all_of(root: Any, obj: dict[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in obj.items() if k != "allOf"}
    for part in as_list(obj.get("allOf")) or []:
        if part is True:
            continue
        p = as_object(part)
        if p is None:
            raise Unsatisfiable("allOf with a false branch")
        p = resolve_ref(root, p)
        if "allOf" in p:
            p = merge_all_of(root, p)
        merged = merge_schemas(merged, p)
    return merged


def pick_type(obj: dict[str, Any], hint: Any) -> str:
    declared = obj.get("type")
    kinds: list[str]
    if isinstance(declared, str):
        kinds = [declared]
    else:
        kinds = [k for k in as_list(declared) or [] if isinstance(k, str)]
    if kinds and obj.get("nullable") is True and "null" not in kinds:
        kinds.append("null")
    if not kinds:
        if any(k in obj for k in ("properties", "required", "additionalProperties", "minProperties")):
            return "object"
        if any(k in obj for k in ("items", "minItems", "maxItems")):
            return "array"
        if any(k in obj for k in ("minLength", "maxLength", "pattern", "format")):
            return "string"
        if any(k in obj for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
            return "number"
        return "any" if hint is MISSING else json_type(hint).replace("unknown", "any")
    if hint is not MISSING:
        for k in kinds:
            if type_ok(hint, k):
                return k
    non_null = [k for k in kinds if k != "null"]
    return non_null[0] if non_null else "null"


def enum_value(obj: dict[str, Any], hint: Any) -> Any:
    values = as_list(obj.get("enum")) or []
    if hint is not MISSING and any(same_json(hint, v) for v in values):
        return hint
    kinds = obj.get("type")
    allowed: list[str] = (
        ([kinds] if isinstance(kinds, str) else [k for k in as_list(kinds) or [] if isinstance(k, str)])
        if kinds is not None
        else []
    )
    default = obj.get("default")
    if default is not None and any(same_json(default, v) for v in values):
        return default
    for v in values:
        if not allowed or any(type_ok(v, k) for k in allowed):
            return v
    raise Unsatisfiable("empty enum")
