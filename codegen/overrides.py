"""Facts the published schemas get wrong, stated in the schema file and applied before anything else.

A file in ``schemas/`` may carry a top-level list ``"x-overrides"``: RFC 6902 operations (``op``,
``path``, ``value``, ``from``) on the file's own document, each with a one-sentence ``fact`` (what the
API does) and a ``source`` (where that is documented or observed). ``load`` applies them first, so
everything after it (the plan, the structs, the emulator's ``_schemas`` copies) sees the patched schema;
``sync`` keeps them when the published schema changes, and says when one no longer applies.

The operations are applied one at a time with the ``jsonpatch`` library, so a failure names the entry.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, cast

import jsonpatch
import jsonpointer

__all__ = ["KEY", "OverrideError", "apply_overrides", "check_entry", "entries_of", "try_override"]

KEY = "x-overrides"
_OPS = {"add", "remove", "replace", "move", "copy", "test"}
_NEEDS_VALUE = {"add", "replace", "test"}
_NEEDS_FROM = {"move", "copy"}
_ALLOWED = {"op", "path", "value", "from", "fact", "source"}


@dataclass(frozen=True)
class OverrideError(Exception):
    """One override entry that is malformed or does not apply; ``pointer`` locates it in the file."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer}: {self.message}"


def _pointer_problem(value: Any, key: str) -> str | None:
    if not isinstance(value, str):
        return f"`{key}` must be a JSON pointer string"
    if value and not value.startswith("/"):
        return f"`{key}` {value!r} is not a JSON pointer (it must start with '/')"
    if value == f"/{KEY}" or value.startswith(f"/{KEY}/"):
        return f"`{key}` {value!r} points into the overrides themselves"
    return None


def check_entry(entry: Any, index: int) -> dict[str, Any]:
    """``entry`` as an override, or :class:`OverrideError` saying what is wrong with it."""
    where = f"/{KEY}/{index}"
    if not isinstance(entry, dict):
        raise OverrideError(where, "an override must be an object {op, path, value, fact, source}")
    obj = cast("dict[str, Any]", entry)
    op = obj.get("op")
    if op not in _OPS:
        raise OverrideError(f"{where}/op", f"unknown op {op!r}; expected one of {', '.join(sorted(_OPS))}")
    problem = _pointer_problem(obj.get("path"), "path")
    if problem:
        raise OverrideError(f"{where}/path", problem)
    if op in _NEEDS_VALUE and "value" not in obj:
        raise OverrideError(where, f"op {op!r} needs a `value`")
    if op in _NEEDS_FROM:
        problem = _pointer_problem(obj.get("from"), "from")
        if problem:
            raise OverrideError(f"{where}/from", problem)
    for key in ("fact", "source"):
        text = obj.get(key)
        if not isinstance(text, str) or not text.strip():
            raise OverrideError(f"{where}/{key}", f"`{key}` is required: a non-empty string")
    extra = sorted(set(obj) - _ALLOWED)
    if extra:
        raise OverrideError(where, f"unknown keys {extra}; an override has op, path, value, from, fact, source")
    return obj


def entries_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The file's overrides, checked (raises :class:`OverrideError` on the first malformed one)."""
    raw = doc.get(KEY)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise OverrideError(f"/{KEY}", "must be a list of overrides")
    items: list[Any] = raw  # pyright: ignore[reportUnknownVariableType]
    return [check_entry(entry, i) for i, entry in enumerate(items)]


def _operation(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k in ("op", "path", "value", "from")}


def try_override(doc: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (without overrides) with one override applied: a new object; ``ValueError`` if it does not apply."""
    try:
        patched: Any = jsonpatch.apply_patch(doc, [_operation(entry)], in_place=False)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise ValueError(str(exc)) from None
    except (TypeError, KeyError, IndexError) as exc:  # e.g. a path through a string
        raise ValueError(f"cannot apply: {exc}") from None
    if not isinstance(patched, dict):
        raise ValueError("the result is no longer a JSON object")
    return cast("dict[str, Any]", patched)


def apply_overrides(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its overrides applied in order and the ``x-overrides`` key removed (a new object).

    Raises :class:`OverrideError` naming the entry (``/x-overrides/N``) that is malformed or does not apply.
    """
    entries = entries_of(doc)
    current = {k: copy.deepcopy(v) for k, v in doc.items() if k != KEY}
    for i, entry in enumerate(entries):
        try:
            current = try_override(current, entry)
        except ValueError as exc:
            target = json.dumps(entry["path"])
            raise OverrideError(f"/{KEY}/{i}", f"{entry['op']} {target} does not apply: {exc}") from None
    return current
