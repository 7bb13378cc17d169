"""Requests checked against the model's effective input schema before anything is sent.

The generated structs type a request but cannot say everything its schema does: alternatives (per-role
messages, the two tool forms, typed questions) are merged into one struct, and ``minProperties`` or a
key only one alternative requires have no msgspec spelling. So the schema itself decides: the published
shape with our ``x-overrides``, shipped gzipped in ``_schemas/`` (a vendored copy without it keeps the
structs' checks). It is read as the API reads it: ``oneOf`` as ``anyOf`` (published branches rarely say
``required``, so a real payload matches several), a whole-number float as an integer, ``format:
binary`` inside JSON as base64 text. Compiled once per model into closures; a request is checked as the
JSON it is sent as. Errors read like msgspec's and name the path (``$.messages[0].content``).
``contentEncoding: base64`` (where an override says a string field carries base64) is asserted too.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any, cast

import msgspec

from .jsonview import as_list, as_object

__all__ = ["InputSchema", "input_schema"]

# A path is "$" or a (parent, key or index) pair, made text only for a reported problem.
Problem = tuple[Any, str]
Check = Callable[[Any, Any], "Problem | None"]
_PACKAGE = __name__.rsplit(".", 2)[0]
_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "array"}
_LOCK = threading.Lock()
_LOADED: dict[str, InputSchema | None] = {}


def input_schema(schema_path: str) -> InputSchema | None:
    """The compiled input schema of a generated model (``ModelInfo.schema``), None where none ships."""
    if schema_path in _LOADED:
        return _LOADED[schema_path]
    ref = resources.files(_PACKAGE) / "_schemas"
    for part in (schema_path + ".gz").split("/"):
        ref = ref / part
    try:
        doc = msgspec.json.decode(gzip.decompress(ref.read_bytes()))
    except (OSError, ValueError):
        doc = None
    schema = as_object((as_object(doc) or {}).get("schema"))
    found = InputSchema(schema["input"]) if schema is not None and "input" in schema else None
    with _LOCK:
        _LOADED[schema_path] = found
    return found


class InputSchema:
    """One model's compiled input schema: :meth:`problem` of a request, of one batch item."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.check = _compile(schema)
        batch = next((b for b in _branches(schema) if "requests" in (as_list(b.get("required")) or [])), None)
        items = (as_object((as_object(batch.get("properties")) or {}).get("requests")) or {}) if batch else {}
        self.item = _compile(items.get("items"))
        self._variants: dict[frozenset[str], Check | None] = {}

    def problem(self, value: Any, item: bool = False, variant: frozenset[str] | None = None) -> tuple[str, str] | None:
        """``(path, message)`` of the first thing the schema refuses in ``value``, or None: the whole input
        schema's, a batch item's (``item``), or the one input variant declaring exactly the keys
        ``variant`` (a typed request is checked against its own variant)."""
        check = self.item if item else self.check if variant is None else self._variant(variant)
        found = check(value, "$") if check is not None else None
        return None if found is None else (_text(found[0]), found[1])

    def _variant(self, keys: frozenset[str]) -> Check | None:
        if keys not in self._variants:
            found = (b for b in _branches(self.schema) if frozenset(as_object(b.get("properties")) or ()) == keys)
            branch = next(found, None)
            self._variants[keys] = self.check if branch is None else _compile(branch)
        return self._variants[keys]


def _branches(schema: Any) -> list[dict[str, Any]]:
    node = as_object(schema) or {}
    out = [node]
    for key in ("anyOf", "oneOf"):
        for branch in as_list(node.get(key)) or []:
            out.extend(_branches(branch))
    return out


def _text(path: Any) -> str:
    pieces: list[str] = []
    at: Any = path
    while type(at) is tuple:
        parent, piece = cast("tuple[Any, Any]", at)
        pieces.append(f"[{piece}]" if type(piece) is int else f".{piece}")
        at = parent
    return "$" + "".join(reversed(pieces))


def _depth(path: Any) -> int:
    depth = 0
    at: Any = path
    while type(at) is tuple:
        at, depth = cast("tuple[Any, Any]", at)[0], depth + 1
    return depth


_KINDS: dict[type[Any], str] = {str: "string", bool: "boolean", int: "integer", list: "array", dict: "object"}


def json_type(value: Any) -> str:
    """The JSON Schema type of a decoded JSON value (a whole-number float is an ``integer``)."""
    name = _KINDS.get(value.__class__)
    if name is not None:
        return name
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    return "null" if value is None else "other"


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values (a boolean is never a number)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())  # pyright: ignore
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # pyright: ignore
    kinds = {json_type(a), json_type(b)}
    return (len(kinds) == 1 or kinds <= {"integer", "number"}) and a == b


def _compile(raw: Any) -> Check | None:
    """The check of one schema node; None when it takes anything."""
    node = as_object(raw)
    if node is None:
        return None if raw is not False else (lambda value, path: (path, "no value is allowed here"))
    checks = [c for c in (_types(node), _values(node), _sizes(node), _objects(node), _alternatives(node)) if c]
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def check(value: Any, path: Any) -> Problem | None:
        for one in checks:
            found = one(value, path)
            if found is not None:
                return found
        return None

    return check


def _kinds(node: dict[str, Any]) -> set[str]:
    listed = node.get("type")
    return {k for k in (as_list(listed) or [listed]) if isinstance(k, str)}


def _types(node: dict[str, Any]) -> Check | None:
    kinds = _kinds(node)
    if not kinds:
        return None
    allowed = kinds | ({"integer"} if "number" in kinds else set[str]())
    wanted = " | ".join(f"`{_NAMES.get(k, k)}`" for k in sorted(kinds))

    def check(value: Any, path: Any) -> Problem | None:
        got = json_type(value)
        if got in allowed:
            return None
        return path, f"Expected {wanted}, got `{_NAMES.get(got, got)}`"

    return check


def _values(node: dict[str, Any]) -> Check | None:
    """``enum``, ``const``, number bounds and ``not``."""
    allowed = as_list(node.get("enum"))
    if "const" in node:
        allowed = [node["const"]]
    bounds = [(k, node[k]) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in node]
    negated = _compile(node["not"]) if "not" in node else None
    if allowed is None and not bounds and negated is None:
        return None

    def check(value: Any, path: Any) -> Problem | None:
        if allowed is not None and not any(_same(value, a) for a in allowed):
            return path, f"Invalid enum value {value!r}"
        if bounds and json_type(value) in ("integer", "number"):
            for key, bound in bounds:
                if not _within(key, value, bound):
                    return path, f"Expected a number {_SIGNS[key]} {bound}"
        if negated is not None and negated(value, path) is None:
            return path, "this combination of fields is not allowed (see the model's schema)"
        return None

    return check


_SIGNS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def _within(key: str, value: float, bound: float) -> bool:
    if key == "minimum":
        return value >= bound
    if key == "maximum":
        return value <= bound
    return value > bound if key == "exclusiveMinimum" else value < bound


def _sizes(node: dict[str, Any]) -> Check | None:
    """Lengths of strings, arrays and objects, ``pattern``, and base64 text (``format: binary``,
    ``contentEncoding: base64``)."""
    limits = {
        kind: (node.get(f"min{word}"), node.get(f"max{word}"))
        for kind, word in (("string", "Length"), ("array", "Items"), ("object", "Properties"))
        if f"min{word}" in node or f"max{word}" in node
    }
    pattern = re.compile(node["pattern"]) if isinstance(node.get("pattern"), str) else None
    binary = node.get("format") == "binary" or node.get("contentEncoding") == "base64"
    if not limits and pattern is None and not binary:
        return None

    def check(value: Any, path: Any) -> Problem | None:
        kind = json_type(value)
        low, high = limits.get(kind, (None, None))
        if low is not None and len(value) < low:
            return path, f"Expected `{_NAMES.get(kind, kind)}` of length >= {low}"
        if high is not None and len(value) > high:
            return path, f"Expected `{_NAMES.get(kind, kind)}` of length <= {high}"
        if kind == "string" and pattern is not None and pattern.search(value) is None:
            return path, f"Expected `str` matching regex {pattern.pattern!r}"
        if kind == "string" and binary and not _base64(value):
            return path, "Invalid base64 encoded string"
        return None

    return check


def _base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _objects(node: dict[str, Any]) -> Check | None:
    """Object keys (``properties``, ``required``, ``additionalProperties``) and array ``items``."""
    props = {k: _compile(v) for k, v in (as_object(node.get("properties")) or {}).items()}
    required = [k for k in as_list(node.get("required")) or [] if isinstance(k, str)]
    closed = node.get("additionalProperties") is False
    extra = None if closed else _compile(node.get("additionalProperties"))
    items = _compile(node.get("items")) if "items" in node else None
    if not (any(props.values()) or required or closed or extra or items):
        return None

    def check(value: Any, path: Any) -> Problem | None:
        if type(value) is list:
            if items is not None:
                listed: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
                for i, item in enumerate(listed):
                    found = items(item, (path, i))
                    if found is not None:
                        return found
            return None
        if type(value) is not dict:
            return None
        obj = cast("dict[str, Any]", value)
        for key in required:
            if key not in obj:
                return path, f"Object missing required field `{key}`"
        for key, item in obj.items():
            sub = props[key] if key in props else extra
            if key not in props and closed:
                return path, f"Object contains unknown field `{key}`"
            found = sub(item, (path, key)) if sub is not None else None
            if found is not None:
                return found
        return None

    return check


def _alternatives(node: dict[str, Any]) -> Check | None:
    """``anyOf``/``oneOf`` (at least one branch fits) and ``allOf``; a failure is reported from the branch
    the value most looks like (its type, its tag values, its required keys, how far it got)."""
    every = [c for c in (_compile(b) for b in as_list(node.get("allOf")) or []) if c is not None]
    branches = [b for key in ("anyOf", "oneOf") for b in as_list(node.get(key)) or []]
    compiled = [(_compile(b), _Likeness(b)) for b in branches]
    if not every and (not compiled or any(c is None for c, _ in compiled)):
        return None

    def check(value: Any, path: Any) -> Problem | None:
        for one in every:
            found = one(value, path)
            if found is not None:
                return found
        best: tuple[tuple[int, ...], Problem] | None = None
        for branch, likeness in compiled:
            found = branch(value, path) if branch is not None else None
            if found is None:
                return None
            rank = (*likeness.of(value), _depth(found[0]))
            if best is None or rank > best[0]:
                best = (rank, found)
        return best[1] if best is not None else None

    return check


class _Likeness:
    """How much a value looks like a branch: its JSON type fits, its tag keys (a single-value enum or a
    const: ``role``, ``type``) agree, how few of the branch's required keys it lacks."""

    def __init__(self, raw: Any) -> None:
        node = as_object(raw) or {}
        self.kinds = _kinds(node)
        self.required = [k for k in as_list(node.get("required")) or [] if isinstance(k, str)]
        self.tags: dict[str, Any] = {}
        self.types: dict[str, _Likeness] = {}
        for key, prop in (as_object(node.get("properties")) or {}).items():
            sub = as_object(prop) or {}
            values = [sub["const"]] if "const" in sub else as_list(sub.get("enum"))
            if values is not None and len(values) == 1:
                self.tags[key] = values[0]
            if "type" in sub:
                self.types[key] = _Likeness({"type": sub["type"]})

    def fits(self, value: Any) -> bool:
        kind = json_type(value)
        return not self.kinds or kind in self.kinds or (kind == "integer" and "number" in self.kinds)

    def of(self, value: Any) -> tuple[int, int, int, int]:
        """(type fits, tags agreeing minus disagreeing, minus required keys missing, keys of a fitting type)."""
        if type(value) is not dict:
            return int(self.fits(value)), 0, 0, 0
        tags = sum(1 if _same(value[k], tag) else -1 for k, tag in self.tags.items() if k in value)
        typed = sum(1 for k, t in self.types.items() if k in value and t.fits(value[k]))
        return int(self.fits(value)), tags, -sum(1 for k in self.required if k not in value), typed
