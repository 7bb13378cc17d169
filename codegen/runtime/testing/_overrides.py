"""Schema overrides (``x-overrides`` in a model's schema file): facts where the published schema and the
documented API disagree, kept once in the schema file so the SDK and the emulator agree.

The generator applies them when it writes the package's schema copies; a copy that still carries its
``x-overrides`` list (written before the generator applied them) gets them applied here, with the
``jsonpatch`` library. Every op the emulator relies on sets an object member (``add``/``replace``), so
applying a list twice changes nothing.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping
from typing import Any, Protocol, cast

from .._json import as_list, as_object

__all__ = ["apply_overrides"]

_KEYS = ("op", "path", "value", "from")


class _Patch(Protocol):
    def apply(self, obj: Any) -> Any: ...


class _Module(Protocol):
    def JsonPatch(self, patch: list[dict[str, Any]]) -> _Patch: ...


def _jsonpatch() -> _Module:
    try:
        return cast(_Module, importlib.import_module("jsonpatch"))
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "workers_ai.testing needs the 'jsonpatch' package: pip install 'workers-ai[testing]'"
        ) from exc


def apply_overrides(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with its ``x-overrides`` applied (a copy; ``doc`` itself is left alone).

    ``fact`` and ``source`` are documentation for people; only the RFC 6902 members are applied.
    An op that does not apply (its path is gone after a catalog update) raises ``ValueError`` naming it.
    """
    overrides = as_list(doc.get("x-overrides"))
    if not overrides:
        return dict(doc)
    ops: list[dict[str, Any]] = []
    for raw in overrides:
        entry = as_object(raw)
        if entry is not None:
            ops.append({k: copy.deepcopy(entry[k]) for k in _KEYS if k in entry})
    body = {k: v for k, v in doc.items() if k != "x-overrides"}
    try:
        patched = _jsonpatch().JsonPatch(ops).apply(body)
    except Exception as exc:  # jsonpatch raises its own error classes; say which model file and op
        raise ValueError(f"x-overrides of {doc.get('name', '?')}: {type(exc).__name__}: {exc}") from None
    return cast("dict[str, Any]", patched)
