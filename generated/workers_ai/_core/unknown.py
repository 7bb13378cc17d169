"""Input keys the model's schema does not know (``$.messages[0].contnt``): found before anything is sent.

Generated request structs ignore unknown keys of the dicts they are given, so a typo would be sent as
is and the API would ignore it too: the request "works" without the setting the user meant. A checker
is compiled once per input type from ``msgspec.inspect`` (imported on first use) and walks a payload:
object keys are matched against the fields of every struct or TypedDict the type allows there; a
``dict[str, ...]`` or ``Any`` allows any key. In a union the member that fits the value best (fewest
unknown keys) is the one reported against.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

import msgspec

from .._error_base import InputValidationError

log = logging.getLogger("workers_ai")

__all__ = ["check_unknown_keys"]

# Keys never reported: ``stream`` (``stream()`` adds it whatever the schema says), the tool-call keys the
# SDK's own tool loop puts on messages (``tool_calls``, ``tool_call_id``, ``name``) and ``stop``, which
# OpenAI-style clients send and the platform takes though few schemas list it.
_SENT_BY_CLIENTS = frozenset({"stream", "tool_calls", "tool_call_id", "name", "stop"})
# Fields whose value is a JSON Schema (tool parameters, JSON mode): open by nature, never walked.
_SCHEMA_VALUED = frozenset({"parameters", "json_schema", "schema", "properties", "guided_json"})
# A path is "$" or a (parent path, ".key" or index) pair, joined into ``$.a[0].b`` only for a key that is
# reported: building the text at every step cost more than the rest of the walk.
_Path = Any
# (path of an unknown key, the key, the keys known there: "did you mean" is worked out only for those reported)
_Found = list[tuple[str, str, "dict[str, Any]"]]
_Walk = Callable[[Any, _Path, _Found], None]
_Compiled = tuple[str, "_Walk | None"]  # (kind of value it reads: object, array, scalar, any; the walker)
_CACHE: dict[type[Any], _Compiled] = {}


def _compiled(kind: type[Any]) -> _Compiled:
    import msgspec.inspect as mi

    try:
        info = mi.type_info(kind)
    except TypeError:  # a struct holding a union msgspec cannot describe (a batch's variants): its own keys
        fields = tuple(mi.Field(f.name, f.encode_name, mi.AnyType()) for f in msgspec.structs.fields(kind))
        info = mi.TypedDictType(dict, fields)
    compiled = _CACHE[kind] = _compile(info, {})
    return compiled


def check_unknown_keys(model_id: str, value: Any, kind: type[Any], *, strict: bool) -> None:
    """Warn (``UnknownInputWarning``) about every unknown key, or raise ``InputValidationError`` for the
    first one when ``strict``."""
    walk = (_CACHE.get(kind) or _compiled(kind))[1]
    if walk is None or type(value) in _CLOSED:
        return
    paths: _Found = []
    walk(value, "$", paths)
    if not paths:
        return
    from .suggest import unknown_key_hint  # here: only an unknown key needs it

    if strict:
        path, key, known = paths[0]
        hint = unknown_key_hint(key, known)
        raise InputValidationError(model_id, path, f"unknown key{hint}: the model's input schema has no such field")
    from ..errors import UnknownInputWarning
    from .warn import warn_user

    for path, key, known in paths:
        hint = unknown_key_hint(key, known)
        log.warning("%s: unknown input key at %s%s (sent as given; the API ignores it)", model_id, path, hint)
        warn_user(
            f"{model_id}: unknown input key at {path}{hint}: the model's input schema has no such field (sent as"
            " given; the API ignores it). Pass strict_inputs=True to the client to refuse it instead",
            UnknownInputWarning,
        )


def _compile(info: Any, seen: dict[int, list[_Compiled]]) -> _Compiled:
    import msgspec.inspect as mi

    if isinstance(info, (mi.StructType, mi.TypedDictType, mi.DataclassType)):
        key = id(info.cls)
        if key in seen:  # a recursive type: walk it through the slot filled below
            return ("object", _later(seen[key]))
        slot: list[_Compiled] = []
        seen[key] = slot
        fields = {
            f.encode_name: None if f.encode_name in _SCHEMA_VALUED else _compile(f.type, seen)[1] for f in info.fields
        }
        names = {f.name: fields[f.encode_name] for f in info.fields}
        walk = _object(fields, names, info.cls)
        slot.append(("object", walk))
        return ("object", walk)
    if isinstance(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        item = _compile(info.item_type, seen)[1]
        return ("array", _array(item) if item is not None else None)
    if isinstance(info, mi.TupleType):
        return ("array", None)
    # FrozenDictType is newer than the oldest msgspec we support: read it only where it exists.
    if isinstance(info, mi.DictType) or type(info).__name__ == "FrozenDictType":
        values = _compile(info.value_type, seen)[1]
        return ("object", _mapping(values) if values is not None else None)
    if isinstance(info, mi.UnionType):
        return ("any", _union([_compile(t, seen) for t in info.types]))
    if isinstance(info, mi.AnyType):
        return ("any", None)
    return ("scalar", None)


def _later(slot: list[_Compiled]) -> _Walk:
    """The walker of a type still being compiled (a recursive struct), looked up when first used."""

    def walk(value: Any, path: _Path, out: _Found) -> None:
        inner = slot[0][1] if slot else None
        if inner is not None:
            inner(value, path, out)

    return walk


# Struct classes whose instances hold no field that can carry an unknown key (every field a scalar, or
# a struct of the same kind): an instance of one is skipped without a look (the call path's common case).
_CLOSED: set[type[Any]] = set()


def _text(path: _Path) -> str:
    """``$.a[0].b`` from a path (see ``_Path``)."""
    pieces: list[str] = []
    at: Any = path
    while type(at) is tuple:
        parent, piece = cast("tuple[Any, Any]", at)
        pieces.append(f"[{piece}]" if type(piece) is int else str(piece))
        at = parent
    return str(at) + "".join(reversed(pieces))


def _object(fields: dict[str, _Walk | None], names: dict[str, _Walk | None], cls: type[Any] | None = None) -> _Walk:
    # Only the fields that can hold an unknown key are looked at on a struct instance.
    active = [(name, "." + name, sub) for name, sub in names.items() if sub is not None]
    if cls is not None and not active and issubclass(cls, msgspec.Struct):
        _CLOSED.add(cls)

    def walk(value: Any, path: _Path, out: _Found) -> None:
        if type(value) in _CLOSED:
            return
        if isinstance(value, dict):
            for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
                if key not in fields:
                    if key not in _SENT_BY_CLIENTS:
                        out.append((f"{_text(path)}.{key}", f"{key}", fields))
                    continue
                sub = fields[key]
                if sub is not None:
                    sub(item, (path, f".{key}"), out)
        elif isinstance(value, msgspec.Struct):
            for name, piece, sub in active:
                item = getattr(value, name, msgspec.UNSET)
                if item is not msgspec.UNSET and item is not None and type(item) not in _CLOSED:
                    sub(item, (path, piece), out)

    return walk


def _array(item: _Walk) -> _Walk:
    def walk(value: Any, path: _Path, out: _Found) -> None:
        if isinstance(value, (list, tuple)):
            for index, element in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                if type(element) not in _CLOSED:  # pyright: ignore[reportUnknownArgumentType]
                    item(element, (path, index), out)

    return walk


def _mapping(values: _Walk) -> _Walk:
    def walk(value: Any, path: _Path, out: _Found) -> None:
        if isinstance(value, dict):
            for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
                values(item, (path, f".{key}"), out)

    return walk


def _union(members: list[_Compiled]) -> _Walk | None:
    if all(walk is None for _, walk in members):
        return None

    def walk(value: Any, path: _Path, out: _Found) -> None:
        kind = "object" if isinstance(value, (dict, msgspec.Struct)) else "array" if isinstance(value, list) else ""
        fitting = [w for k, w in members if k in (kind, "any")]
        if not fitting or any(w is None for w in fitting):
            return  # no member reads this kind (a type error, reported by validation) or one takes anything
        best: _Found | None = None
        for member in fitting:
            found: _Found = []
            member(value, path, found)  # type: ignore[misc]  # None members returned above
            if best is None or len(found) < len(best):
                best = found
            if not best:
                return
        out.extend(best or [])

    return walk
