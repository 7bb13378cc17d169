"""JSON Schema validation with the real ``jsonschema`` library (Draft 7), relaxed the way the API is.

Catalog ``oneOf`` branches rarely declare ``required``, so a real payload often matches several of
them and a strict ``oneOf`` rejects it. Every ``oneOf`` is therefore checked as ``anyOf`` (on a copy of
the schema). Error messages name the JSON path of the first real problem, looking inside the branch
whose required keys the instance has.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, cast

from .._core.jsonview import as_list, as_object
from ._jsonschema import Draft7, Draft7Validator, ValidationError, best_match
from ._jsonschema import SchemaError as _JsonSchemaError

__all__ = ["SchemaError", "Validator", "relax", "sanitize"]

# Keywords whose value is a map of name -> schema: walk the values, never rename the names.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions", "$defs", "dependencies"})
# Keywords whose value is data, not a schema.
_DATA = frozenset({"enum", "const", "default", "examples", "example", "required", "title", "description"})
_MAX_MESSAGE = 300


class SchemaError(ValueError):
    """A schema the validator cannot use."""


def sanitize(schema: Any) -> Any:
    """A copy with upstream slips repaired, so a careful user's reading of the schema is what is checked.

    - ``"required": [...]`` written inside ``properties`` (one catalog file does this) moves up to the
      object's own ``required`` list.
    - ``properties`` entries that are not schemas are dropped.
    """
    obj = as_object(schema)
    if obj is None:
        items = as_list(schema)
        return schema if items is None else [sanitize(v) for v in items]
    out: dict[str, Any] = {}
    for key, value in obj.items():
        sub = as_object(value)
        if key in _SCHEMA_MAPS and sub is not None:
            entries: dict[str, Any] = {}
            for name, item in sub.items():
                listed = as_list(item)
                if key == "properties" and name == "required" and listed is not None:
                    names = [n for n in listed if isinstance(n, str)]
                    out["required"] = sorted(set(cast("list[str]", obj.get("required") or [])) | set(names))
                    continue
                if isinstance(item, (dict, bool)) or (key == "dependencies" and isinstance(item, list)):
                    entries[name] = sanitize(item)
            out[key] = entries
        elif key in _DATA:
            if key == "required" and "required" in out:
                continue
            out[key] = copy.deepcopy(value)
        else:
            out[key] = sanitize(value)
    return out


def relax(schema: Any) -> Any:
    """A copy of ``schema`` with every ``oneOf`` turned into ``anyOf`` (both present: an ``allOf`` of the two)."""
    obj = as_object(schema)
    if obj is None:
        items = as_list(schema)
        return schema if items is None else [relax(v) for v in items]
    out: dict[str, Any] = {}
    for key, value in obj.items():
        sub = as_object(value)
        if key in _SCHEMA_MAPS and sub is not None:
            out[key] = {name: relax(item) for name, item in sub.items()}
        elif key in _DATA:
            out[key] = value
        elif key == "oneOf":
            continue
        else:
            out[key] = relax(value)
    one = as_list(obj.get("oneOf"))
    if one is not None:
        branches = [relax(b) for b in one]
        if "anyOf" in out:
            out["allOf"] = [
                *cast("list[Any]", out.get("allOf") or []),
                {"anyOf": out.pop("anyOf")},
                {"anyOf": branches},
            ]
        else:
            out["anyOf"] = branches
    return out


def _pointer(path: Iterable[Any]) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts)


def _required(branch: Any) -> list[str]:
    obj = as_object(branch)
    if obj is None:
        return []
    req = obj.get("required")
    return [r for r in as_list(req) or [] if isinstance(r, str)]


def _admits_object(branch: Any) -> bool:
    obj = as_object(branch)
    if obj is None:
        return branch is not False
    kind = obj.get("type")
    if kind is None:
        return True
    return kind == "object" or "object" in (as_list(kind) or [])


def _declared(branch: Any) -> frozenset[str]:
    props = as_object((as_object(branch) or {}).get("properties"))
    return frozenset(props) if props is not None else frozenset()


class Validator:
    """Relaxed Draft 7 validation of instances against one schema (the schema is copied, not changed).

    Every ``oneOf`` is checked as ``anyOf``. At the root, an object is checked against the branches it
    plausibly means: those whose required keys it has and, among them, those declaring the most of its
    keys. Without that, a branch that requires nothing would accept any object at all.
    """

    def __init__(self, schema: Any) -> None:
        self.original = sanitize(schema)
        self.schema: Any = relax(self.original)
        try:
            Draft7Validator.check_schema(self.schema)
        except _JsonSchemaError as exc:
            problem = cast(ValidationError, exc)
            raise SchemaError(
                f"not a usable JSON Schema: {problem.message} at {_pointer(problem.absolute_path)}"
            ) from None
        self._impl: Draft7 = Draft7Validator(self.schema)
        root = as_object(self.schema) or {}
        self._branches: list[Any] = as_list(root.get("anyOf")) or []
        base = {k: v for k, v in root.items() if k != "anyOf"}
        extra = as_list(base.get("allOf")) or []
        self._branch_impls: list[Draft7] = [
            self._impl.evolve(schema={**base, "allOf": [*extra, branch]}) for branch in self._branches
        ]

    def is_valid(self, instance: Any, schema: Any = None) -> bool:
        """Whether ``instance`` fits the whole schema, or ``schema``: a part of (or built from) the relaxed root."""
        if schema is not None:
            return bool(self._impl.evolve(schema=schema).is_valid(instance))
        if not self._impl.is_valid(instance):
            return False
        picked = self._candidates(instance)
        return picked is None or any(self._branch_impls[i].is_valid(instance) for i in picked)

    def _candidates(self, instance: Any) -> list[int] | None:
        """Indexes of the root branches ``instance`` is checked against; None when all of them apply."""
        data = as_object(instance)
        if data is None or not self._branches:
            return None
        objects = [i for i, b in enumerate(self._branches) if _admits_object(b)]
        fitting = [
            i for i in objects if _required(self._branches[i]) and all(k in data for k in _required(self._branches[i]))
        ]
        if not fitting:
            fitting = [i for i in objects if not _required(self._branches[i])]
        if data and fitting:
            cover = {i: len(_declared(self._branches[i]) & data.keys()) for i in fitting}
            most = max(cover.values())
            if most > 0:
                fitting = [i for i in fitting if cover[i] == most]
        return fitting

    def errors(self, instance: Any) -> list[tuple[str, str]]:
        """Every problem as ``(json pointer, message)``, most useful first; empty when valid."""
        if self.is_valid(instance):
            return []
        picked = self._candidates(instance)
        if picked is None:
            return [self._describe(best_match(self._impl.iter_errors(instance)))]
        if not picked:
            wanted = sorted({" + ".join(repr(k) for k in _required(b)) for b in self._branches if _required(b)})
            if not wanted:
                return [self._describe(best_match(self._impl.iter_errors(instance)))]
            return [("/", f"required properties missing: the input needs one of {', '.join(wanted)}")]
        best: tuple[str, str] | None = None
        fewest = 0
        for i in picked:
            errs = list(self._branch_impls[i].iter_errors(instance))
            if best is None or len(errs) < fewest:
                best, fewest = self._describe(best_match(errs)), len(errs)
        assert best is not None
        return [best]

    @staticmethod
    def _describe(error: ValidationError | None) -> tuple[str, str]:
        if error is None:
            return "/", "the instance does not fit the schema"
        message = str(error.message)
        if len(message) > _MAX_MESSAGE:
            message = message[: _MAX_MESSAGE - 3] + "..."
        return _pointer(error.absolute_path), message

    def first_error(self, instance: Any) -> str | None:
        """``"/path: message"`` of the most useful problem, or None when the instance is valid."""
        errs = self.errors(instance)
        if not errs:
            return None
        path, message = errs[0]
        return f"{path}: {message}"
