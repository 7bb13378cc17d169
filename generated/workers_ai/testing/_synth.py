"""A schema-driven instance synthesizer: a valid, deterministic instance for any catalog schema.

It walks the (relaxed) schema and builds a value that fits by construction: objects get their
required and some optional properties, arrays ``minItems`` elements, numbers and strings land inside
their bounds, ``enum``/``const`` are honoured, ``anyOf`` takes the first branch that works, ``$ref``
follows ``#/...`` pointers, ``allOf`` is merged. Choices come from a ``random.Random`` seeded by the
caller, so the same seed always gives the same instance.

A ``hint`` (a partial, ideal instance, e.g. a realistic embedding reply) is kept wherever it fits the
schema and replaced where it does not, so task-specific realism can never produce an invalid reply.
Where construction alone cannot promise validity (``pattern``, ``allOf``, ``not``, ...) the result
is checked with the real validator and the branch abandoned when it fails.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any, cast

from .._core.jsonview import as_list, as_object
from ._instances import MISSING, Unsatisfiable, same_json
from ._regex import regex_example
from ._scalars import number, scalar_list, string
from ._schema_keywords import enum_value, merge_all_of, merge_schemas, pick_type, resolve_ref
from ._validate import Validator

__all__ = ["MISSING", "Synthesizer", "Unsatisfiable", "input_variants", "merge_schemas", "regex_example"]


_MAX_DEPTH = 24
_OPTIONAL_DEPTH = 3
# Keywords whose effect construction does not guarantee; a value built under them is checked.
_HARD = frozenset("allOf not contains if dependencies propertyNames patternProperties uniqueItems".split())


def _is_binary_branch(schema: Any) -> bool:
    obj = as_object(schema)
    return obj is not None and obj.get("type") == "string" and obj.get("format") == "binary"


def _agreement(hint: Any, value: Any) -> int:
    """How much of ``hint`` survived into ``value`` (a score to choose between branches)."""
    if hint is MISSING:
        return 0
    if same_json(hint, value):
        return 1 + (len(cast("Collection[Any]", hint)) if isinstance(hint, (dict, list)) else 0)
    h, v = as_object(hint), as_object(value)
    if h is not None and v is not None:
        return sum(_agreement(x, v[k]) for k, x in h.items() if k in v)
    hl, vl = as_list(hint), as_list(value)
    if hl is not None and vl is not None:
        return sum(_agreement(x, y) for x, y in zip(hl, vl, strict=False))
    return 0


# --------------------------------------------------------------------------- the synthesizer


class Synthesizer:
    """Makes instances of one schema (and of any part of it) that its :class:`Validator` accepts."""

    def __init__(self, schema: Any = None, *, validator: Validator | None = None) -> None:
        self.validator = validator if validator is not None else Validator(schema)
        self.root: Any = self.validator.schema

    def generate(
        self,
        schema: Any = MISSING,
        *,
        seed: str,
        hint: Any = MISSING,
        optional: float = 0.5,
        skip: Collection[str] = (),
        binary: bool = False,
    ) -> Any:
        """An instance of ``schema`` (a part of, or built from parts of, the relaxed root; default the root).

        ``optional`` is the chance each optional property is filled (near the top of the value only);
        property names in ``skip`` are never added unless required; ``binary`` lets ``format: binary``
        string branches be chosen (their value is base64 text).
        """
        run = _Run(self, seed, optional, frozenset(skip), binary)
        target = self.root if schema is MISSING else schema
        return run.gen(target, 0, hint)


class _Run:
    def __init__(self, synth: Synthesizer, seed: str, optional: float, skip: frozenset[str], binary: bool) -> None:
        self.s = synth
        self.rng = random.Random(seed)
        self.seed = seed
        self.optional = optional
        self.skip = skip
        self.binary = binary

    def check(self, value: Any, schema: Any) -> Any:
        if not self.s.validator.is_valid(value, schema):
            raise Unsatisfiable("built value failed validation")
        return value

    # ---------------------------------------------------------------- dispatch

    def gen(self, schema: Any, depth: int, hint: Any) -> Any:
        if depth > _MAX_DEPTH:
            raise Unsatisfiable("schema too deep")
        if schema is True or schema is None:
            return self.free(hint)
        if schema is False:
            raise Unsatisfiable("false schema")
        obj = as_object(schema)
        if obj is None:
            return self.free(hint)
        obj = resolve_ref(self.s.root, obj)
        hard = any(k in obj for k in _HARD)
        node = merge_all_of(self.s.root, obj) if "allOf" in obj else obj
        value = self.gen_node(node, depth, hint)
        return self.check(value, obj) if hard else value

    def free(self, hint: Any) -> Any:
        return "example" if hint is MISSING else hint

    def gen_node(self, obj: dict[str, Any], depth: int, hint: Any) -> Any:
        if "const" in obj:
            return obj["const"]
        if "enum" in obj:
            return enum_value(obj, hint)
        branches = as_list(obj.get("anyOf"))
        if branches is not None:
            return self.any_of(obj, branches, depth, hint)
        kind = pick_type(obj, hint)
        if kind == "object":
            return self.object(obj, depth, hint)
        if kind == "array":
            return self.array(obj, depth, hint)
        if kind in ("number", "integer"):
            return number(obj, kind == "integer", hint, self.rng)
        if kind == "string":
            return string(obj, hint, self.rng, self.seed)
        if kind == "boolean":
            if isinstance(hint, bool):
                return hint
            default = obj.get("default")
            return default if isinstance(default, bool) else False
        if kind == "null":
            return None
        return self.free(hint)

    # ---------------------------------------------------------------- kinds

    def any_of(self, obj: dict[str, Any], branches: list[Any], depth: int, hint: Any) -> Any:
        base = {k: v for k, v in obj.items() if k != "anyOf"}
        order = list(range(len(branches)))

        def rank(i: int) -> tuple[int, int, int]:
            b = branches[i]
            resolved = resolve_ref(self.s.root, as_object(b) or {}) if as_object(b) is not None else {}
            binary_last = 1 if (_is_binary_branch(resolved) and not self.binary) else 0
            null_last = 1 if resolved.get("type") == "null" else 0
            cover = 0
            h = as_object(hint)
            props = as_object(resolved.get("properties"))
            if h is not None and props is not None:
                cover = -sum(1 for k in h if k in props)
            return (binary_last + null_last, cover, i)

        order.sort(key=rank)
        best: Any = MISSING
        best_score = -1
        last_error: Unsatisfiable | None = None
        for i in order:
            branch = branches[i]
            b = as_object(branch)
            if b is None:
                if branch is True:
                    return self.free(hint)
                continue
            try:
                merged = merge_schemas(base, resolve_ref(self.s.root, b)) if base else resolve_ref(self.s.root, b)
                hard = any(k in b for k in _HARD)
                if "allOf" in merged:
                    merged = merge_all_of(self.s.root, merged)
                value = self.gen_node(merged, depth, hint)
                if hard:
                    self.check(value, branch)
            except Unsatisfiable as exc:
                last_error = exc
                continue
            if hint is MISSING:
                return value
            score = _agreement(hint, value)
            if same_json(hint, value):
                return value
            if score > best_score:
                best, best_score = value, score
        if best is MISSING:
            raise last_error or Unsatisfiable("no anyOf branch can be built")
        return best

    def object(self, obj: dict[str, Any], depth: int, hint: Any) -> dict[str, Any]:
        props = as_object(obj.get("properties")) or {}
        required = [r for r in as_list(obj.get("required")) or [] if isinstance(r, str)]
        addl = obj.get("additionalProperties", True)
        addl_schema = as_object(addl)
        patterns = as_object(obj.get("patternProperties")) or {}
        h = as_object(hint)
        out: dict[str, Any] = {}
        for name in dict.fromkeys(required):
            sub: Any = props.get(name, addl_schema if addl_schema is not None else {})
            out[name] = self.gen(sub, depth + 1, h.get(name, MISSING) if h is not None else MISSING)
        if h is not None:
            for key, value in h.items():
                if key in out:
                    continue
                try:
                    if key in props:
                        built = self.gen(props[key], depth + 1, value)
                        if value is None and built is not None:
                            continue  # an optional "null" the schema does not allow is left out, not invented
                        out[key] = built
                    elif any(re.search(p, key) for p in patterns):
                        pat = next(p for p in patterns if re.search(p, key))
                        out[key] = self.gen(patterns[pat], depth + 1, value)
                    elif addl_schema is not None:
                        out[key] = self.gen(addl_schema, depth + 1, value)
                    elif addl is not False and not props:
                        out[key] = value  # a free-form object keeps what it was given
                except Unsatisfiable:
                    continue
        elif depth <= _OPTIONAL_DEPTH and self.optional > 0:
            for name, sub in props.items():
                if name in out or name in self.skip:
                    continue
                if self.rng.random() < self.optional:
                    try:
                        out[name] = self.gen(sub, depth + 1, MISSING)
                    except Unsatisfiable:
                        continue
        low = obj.get("minProperties")
        if isinstance(low, int) and len(out) < low:
            for name, sub in props.items():
                if len(out) >= low:
                    break
                if name not in out:
                    out[name] = self.gen(sub, depth + 1, MISSING)
            n = 0
            while len(out) < low:
                if addl is False:
                    raise Unsatisfiable("minProperties cannot be met")
                out[f"key{n}"] = self.gen(
                    addl_schema if addl_schema is not None else {"type": "string"}, depth + 1, MISSING
                )
                n += 1
        high = obj.get("maxProperties")
        if isinstance(high, int) and len(out) > high:
            for name in [k for k in out if k not in required][::-1]:
                if len(out) <= high:
                    break
                del out[name]
        return out

    def array(self, obj: dict[str, Any], depth: int, hint: Any) -> list[Any]:
        items: Any = obj.get("items", {})
        low = obj.get("minItems")
        high = obj.get("maxItems")
        lo = int(low) if isinstance(low, int) else 0
        hi = int(high) if isinstance(high, int) else None
        h = as_list(hint)
        tuple_items = as_list(items)
        if tuple_items is not None:
            extra: Any = obj.get("additionalItems", {})
            count = max(lo, len(tuple_items)) if h is None else max(lo, len(h))
            if hi is not None:
                count = min(count, hi)
            out: list[Any] = []
            for i in range(count):
                sub = tuple_items[i] if i < len(tuple_items) else extra
                out.append(self.gen(sub, depth + 1, h[i] if h is not None and i < len(h) else MISSING))
            return out
        if h is not None:
            kept = h[:hi] if hi is not None else h
            fast = scalar_list(items, kept)
            if fast is not None:
                out = fast
            else:
                out = []
                for x in kept:
                    try:
                        out.append(self.gen(items, depth + 1, x))
                    except Unsatisfiable:
                        continue
        else:
            out = []
        if h is None:
            want = lo if lo > 0 else (1 if (hi is None or hi >= 1) and depth <= _OPTIONAL_DEPTH + 3 else 0)
        else:
            want = lo
        while len(out) < want:
            out.append(self.gen(items, depth + 1, MISSING))
        if obj.get("uniqueItems") is True:
            seen: list[str] = []
            for v in out:
                key = json.dumps(v, sort_keys=True)
                if key in seen:
                    raise Unsatisfiable("uniqueItems")
                seen.append(key)
        return out


def _flatten(schema: Any, synth: Synthesizer, base: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    obj = as_object(schema)
    if obj is None:
        return
    branches = as_list(obj.get("anyOf"))
    if branches is None:
        merged = merge_schemas(base, obj)
        title = obj.get("title")
        if _is_binary_branch(merged):
            yield "binary", merged
            return
        req = [r for r in as_list(merged.get("required")) or [] if isinstance(r, str)]
        label = title if isinstance(title, str) else ("+".join(req) if req else "input")
        yield label, merged
        return
    rest = {k: v for k, v in obj.items() if k not in ("anyOf", "title", "description")}
    inner_base = merge_schemas(base, rest)
    for branch in branches:
        yield from _flatten(branch, synth, inner_base)


def input_variants(synth: Synthesizer) -> list[tuple[str, Any]]:
    """The input branches of a (relaxed) input schema, nested ``anyOf`` flattened: ``(label, schema)``.

    Binary-body branches are labelled ``"binary"``; the async batch branch is the one requiring ``requests``.
    """
    return list(_flatten(synth.root, synth, {}))
