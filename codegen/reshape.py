"""Schema shaping: keep only the typing keywords and make every nested union one msgspec can decode."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .schema_walk import as_list, as_map

__all__ = ["DEF_PREFIX", "canonical", "reshape", "strs", "value_type"]


# Keywords handed on to datamodel-code-generator, by the JSON type they apply to. Everything else is
# dropped: schema text is data, and some generator extensions (``x-python-import``, ``customTypePath``,
# ``default_factory``...) would otherwise turn a schema into imports or code in the output.
_NUMBER_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_BY_TYPE: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "integer": _NUMBER_KEYS,
    "number": _NUMBER_KEYS,
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "boolean": frozenset[str](),
    "null": frozenset[str](),
}
_TYPED_KEYS = frozenset(k for keys in _BY_TYPE.values() for k in keys)
_ANNOTATIONS = ("description", "default")
_COUNT_KEYS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})
_COMBINATORS = ("anyOf", "oneOf")
_BAD_FIELD = re.compile(r'["\\\x00-\x1f]')
DEF_PREFIX = "#/$defs/"
_MAX_FLATTEN = 32


def reshape(
    defs: dict[str, Any],
    variant_names: list[str],
    warnings: list[str] | None = None,
    file: str = "",
) -> dict[str, Any]:
    """Build the generator document: keep only typing keywords and make every union decodable.

    msgspec refuses unions holding two object-like (struct/dict), two array-like, two str-like or two
    int-like members. Nested alternatives like that are merged into one looser member; the variants at
    the root are never merged: they are told apart by the generated dispatch rules instead.
    """
    variant_names = list(dict.fromkeys(variant_names))
    shaper = _Shaper(defs, variant_names)
    fixed = {name: shaper.shape_def(name) for name in defs}
    if warnings is not None:
        for name in sorted(shaper.dropped):
            warnings.append(
                f"{file}: property {name!r} cannot be a struct field (quotes, backslashes and control characters "
                "are not allowed in msgspec field names); it is left out of the typed structs"
            )
    return {"$defs": fixed, "oneOf": [{"$ref": f"{DEF_PREFIX}{n}"} for n in variant_names] or [{"type": "object"}]}


def _members(node: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The schema objects of a combinator list (anything else in the list is skipped)."""
    return [m for m in (as_map(x) for x in as_list(node.get(key)) or []) if m is not None]


def strs(value: Any) -> list[str]:
    return [v for v in as_list(value) or [] if isinstance(v, str)]


class _Shaper:
    def __init__(self, defs: dict[str, Any], variant_names: list[str]) -> None:
        self.raw = defs
        self.variants = set(variant_names)
        self.canon = {canonical(defs[n]): n for n in variant_names}
        self.done: dict[str, dict[str, Any]] = {}
        self.busy: set[str] = set()
        self.dropped: set[str] = set()

    # -- definitions

    def shape_def(self, name: str) -> dict[str, Any]:
        if name not in self.done:
            if name in self.busy:
                return {}
            self.busy.add(name)
            try:
                self.done[name] = self.shape(self.raw.get(name, {}), top=name in self.variants)
            finally:
                self.busy.discard(name)
        return self.done[name]

    def target(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        """(def name, shaped definition) for a ``$ref`` node; the definition is None while it is being shaped."""
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith(DEF_PREFIX):
            return None, None
        name = ref[len(DEF_PREFIX) :]
        if name in self.busy or name not in self.raw:
            return name, None
        return name, self.shape_def(name)

    # -- one schema node

    def shape(self, raw: Any, top: bool = False) -> dict[str, Any]:
        node = as_map(raw)
        if node is None:
            return {}  # `true`, `false` and junk: anything goes
        if not top:
            key = canonical(node)
            if key in self.canon:
                return {"$ref": f"{DEF_PREFIX}{self.canon[key]}"}
        out = self._clean(node)
        out = self._fold(out)
        out = self._enum(out)
        out = self._types(out)
        out = self._union(out)
        self._check_default(out)
        return out

    def _clean(self, node: dict[str, Any]) -> dict[str, Any]:
        node = self._merge_all_of(node)
        pattern_props = as_map(node.get("patternProperties"))
        if pattern_props and "additionalProperties" not in node and not node.get("properties"):
            values = [v for v in (as_map(x) for x in pattern_props.values()) if v is not None]
            if values:
                node = {**node, "additionalProperties": values[0] if len(values) == 1 else {"anyOf": values}}
        seq = as_list(node.get("items"))
        if seq is None and "items" not in node:
            seq = as_list(node.get("prefixItems"))
        if seq is not None:
            node = {**node, "items": {"anyOf": seq} if seq else {}}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                props: dict[str, Any] = {}
                for name, sub in (as_map(value) or {}).items():
                    if _BAD_FIELD.search(name):
                        self.dropped.add(name)
                    else:
                        props[name] = self.shape(sub)
                out[key] = props
            elif key == "items" and isinstance(value, (dict, bool)):
                out[key] = self.shape(value)
            elif key == "additionalProperties":
                if isinstance(value, bool):
                    out[key] = value
                elif as_map(value) is not None:
                    out[key] = self.shape(value)
            elif key in _COMBINATORS and as_list(value) is not None:
                out[key] = [self.shape(m) for m in as_list(value) or []]
            elif key == "$ref":
                if isinstance(value, str) and value.startswith(DEF_PREFIX) and value[len(DEF_PREFIX) :] in self.raw:
                    out[key] = value
            elif key == "required":
                out[key] = list(dict.fromkeys(r for r in strs(value) if not _BAD_FIELD.search(r)))
            elif key == "enum":
                if as_list(value) is not None:
                    out[key] = value
            elif key in ("const", "default"):
                out[key] = value
            elif key == "type" and (isinstance(value, str) or as_list(value) is not None):
                out[key] = value
            elif key == "description" and isinstance(value, str):
                out[key] = value
            elif key == "pattern" and isinstance(value, str) and _compiles(value):
                out[key] = value
            elif key == "format" and value == "binary":
                out[key] = value
            elif key in _NUMBER_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = value
            elif key in _COUNT_KEYS and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                out[key] = value
        props_out = as_map(out.get("properties"))
        if props_out is not None:
            # A required field must always be sent; with a default, `omit_defaults` would leave it out.
            for name in strs(out.get("required")):
                sub = as_map(props_out.get(name))
                if sub is not None and "default" in sub:
                    props_out[name] = {k: v for k, v in sub.items() if k != "default"}
        if "$ref" in out:
            # A reference stands for its target; keep only what describes the field.
            return {k: v for k, v in out.items() if k in ("$ref", *_ANNOTATIONS)}
        return out

    def _merge_all_of(self, node: dict[str, Any]) -> dict[str, Any]:
        if as_list(node.get("allOf")) is None:
            return node
        rest = {k: v for k, v in node.items() if k != "allOf"}
        parts = _members(node, "allOf")
        if len(parts) == 1 and "$ref" in parts[0] and all(k in _ANNOTATIONS for k in rest):
            return {**parts[0], **rest}
        merged: dict[str, Any] = dict(rest)
        for part in parts:
            ref = part.get("$ref")
            if isinstance(ref, str):
                name = ref[len(DEF_PREFIX) :] if ref.startswith(DEF_PREFIX) else ""
                base = as_map(self.raw.get(name))
                if name in self.busy or base is None:
                    continue  # a recursive or unknown base adds no keywords we could inline
                self.busy.add(name)
                try:
                    part = self._merge_all_of(base)
                finally:
                    self.busy.discard(name)
                part = {k: v for k, v in part.items() if k not in ("$defs", "definitions")}
            else:
                part = self._merge_all_of(part)
            merged = _merge_keywords(merged, part)
        return merged

    def _fold(self, node: dict[str, Any]) -> dict[str, Any]:
        """Drop combinators that only add constraints to a typed node (properties fold into objects)."""
        if "type" not in node and "properties" not in node:
            return node
        for comb in _COMBINATORS:
            if as_list(node.get(comb)) is None:
                continue
            members = _members(node, comb)
            if len(members) != len(as_list(node.get(comb)) or []) or not all(_constraint_only(m) for m in members):
                continue
            node = {k: v for k, v in node.items() if k != comb}
            if node.get("type") == "object" or "properties" in node:
                props = dict(as_map(node.get("properties")) or {})
                for m in members:
                    for name, sub in (as_map(m.get("properties")) or {}).items():
                        if name not in props:
                            props[name] = sub
                        elif canonical(props[name]) != canonical(sub):
                            props[name] = self.shape({"anyOf": [props[name], sub]})
                if props:
                    node["properties"] = props
        return node

    def _enum(self, node: dict[str, Any]) -> dict[str, Any]:
        if "const" in node:
            node = {**{k: v for k, v in node.items() if k != "const"}, "enum": [node["const"]]}
        values = as_list(node.get("enum"))
        if values is None:
            return node
        kinds = _type_set(node.get("type"))
        seen: set[str] = set()
        strs: list[str] = []
        ints: list[int] = []
        extra: list[str] = []
        for v in values:
            key = json.dumps(v, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            jt = value_type(v)
            if kinds and jt not in kinds and not (jt == "integer" and "number" in kinds):
                continue
            if isinstance(v, str):
                strs.append(v)
            elif jt == "integer" and isinstance(v, int):
                ints.append(v)
            elif jt not in extra:
                extra.append(jt)
        base = {k: v for k, v in node.items() if k not in ("enum", "type")}
        members: list[dict[str, Any]] = []
        if strs:
            members.append({"type": "string", "enum": strs})
        if ints:
            members.append({"type": "integer", "enum": ints})
        for jt in extra:
            members.append({"type": jt})
        if not members:
            return {k: v for k, v in node.items() if k != "enum"}
        if len(members) == 1:
            only = members[0]
            typed = {k: v for k, v in base.items() if k not in _TYPED_KEYS or k in _BY_TYPE[str(only["type"])]}
            if "enum" in only:
                typed = {k: v for k, v in typed.items() if k not in _TYPED_KEYS}
            return {**typed, **only}
        return {**{k: v for k, v in base.items() if k in _ANNOTATIONS}, "anyOf": members}

    def _types(self, node: dict[str, Any]) -> dict[str, Any]:
        t = node.get("type")
        if isinstance(t, str):
            if t in _BY_TYPE:
                return _fit_bounds({k: v for k, v in node.items() if k not in _TYPED_KEYS or k in _BY_TYPE[t]}, t)
            return node
        listed = as_list(t)
        if listed is None:
            return node
        types = list(dict.fromkeys(x for x in listed if isinstance(x, str) and x in _BY_TYPE))
        if "integer" in types and "number" in types:
            types.remove("integer")
        non_null = [x for x in types if x != "null"]
        if not types:
            return {k: v for k, v in node.items() if k != "type"}
        if len(non_null) <= 1 and "anyOf" not in node and "oneOf" not in node:
            keep = _BY_TYPE[non_null[0]] if non_null else frozenset[str]()
            out = {k: v for k, v in node.items() if k not in _TYPED_KEYS or k in keep}
            out["type"] = types if len(types) > 1 else types[0]
            return _fit_bounds(out, non_null[0]) if non_null else out
        if any(c in node for c in _COMBINATORS):
            return {k: v for k, v in node.items() if k != "type"}  # the alternatives say more than the types
        members = [_fit_bounds({"type": x, **{k: v for k, v in node.items() if k in _BY_TYPE[x]}}, x) for x in types]
        rest = {k: v for k, v in node.items() if k in _ANNOTATIONS}
        return {**rest, "anyOf": members}

    # -- unions

    def _union(self, node: dict[str, Any]) -> dict[str, Any]:
        if not any(as_list(node.get(c)) is not None for c in _COMBINATORS):
            return node
        members: list[dict[str, Any]] = []
        for comb in _COMBINATORS:
            for m in _members(node, comb):
                self._flatten(m, members, 0)
        annotations = {k: v for k, v in node.items() if k in _ANNOTATIONS}
        kinds = [self._kind(m) for m in members]
        if not members or "any" in kinds:
            return annotations
        if all(k == "variant" for k in kinds):
            return {**annotations, "anyOf": members}  # batch items: whole request variants, checked one by one
        groups: dict[str, list[int]] = {}
        for i, k in enumerate(kinds):
            groups.setdefault(k, []).append(i)
        merged: list[dict[str, Any]] = []
        done: set[str] = set()
        for i, m in enumerate(members):
            k = kinds[i]
            if k in done:
                continue
            if len(groups[k]) == 1 or k == "variant":
                merged.append(m)
                continue
            done.add(k)
            merged.append(self._merge([members[j] for j in groups[k]], k))
        unique: list[dict[str, Any]] = []
        keys: set[str] = set()
        for m in merged:
            key = canonical(m)
            if key not in keys:
                keys.add(key)
                unique.append(m)
        if len(unique) == 1:
            return {**unique[0], **annotations}
        return {**annotations, "anyOf": unique}

    def _flatten(self, node: dict[str, Any], into: list[dict[str, Any]], depth: int) -> None:
        pure = all(k in _ANNOTATIONS or k in _COMBINATORS for k in node)
        if pure and any(as_list(node.get(c)) is not None for c in _COMBINATORS) and depth < _MAX_FLATTEN:
            for comb in _COMBINATORS:
                for m in _members(node, comb):
                    self._flatten(m, into, depth + 1)
            return
        if "$ref" in node and depth < _MAX_FLATTEN:
            name, target = self.target(node)
            if name not in self.variants and target is not None and any(c in target for c in _COMBINATORS):
                if all(k in _ANNOTATIONS or k in _COMBINATORS for k in target):
                    self._flatten(target, into, depth + 1)
                    return
        listed = as_list(node.get("type"))
        if listed is not None and len(listed) > 1:
            for x in listed:
                if isinstance(x, str) and x in _BY_TYPE:
                    into.append({"type": x, **{k: v for k, v in node.items() if k in _BY_TYPE[x]}})
            return
        into.append(node)

    def _kind(self, node: dict[str, Any]) -> str:
        if "$ref" in node:
            name, target = self.target(node)
            if name in self.variants:
                return "variant"
            if target is None:
                return "obj"  # a recursive reference: always a struct
            node = target
        t: Any = node.get("type")
        listed = as_list(t)
        if listed is not None:
            t = next((x for x in listed if x != "null"), "null")
        if "enum" in node:
            return {"string": "strlit", "integer": "intlit"}.get(str(t), "any")
        if t == "string":
            return "str"
        if t in ("integer", "number", "boolean", "null"):
            return str(t)
        if t == "object" or "properties" in node or "additionalProperties" in node:
            return "obj"
        if t == "array" or "items" in node:
            return "arr"
        if any(c in node for c in _COMBINATORS):
            return "union"
        return "any"

    def _merge(self, members: list[dict[str, Any]], kind: str) -> dict[str, Any]:
        nodes: list[dict[str, Any]] = []
        for m in members:
            if "$ref" in m:
                _, target = self.target(m)
                nodes.append(target if target is not None else {"type": "object"})
            else:
                nodes.append(m)
        if kind in ("strlit", "intlit"):
            values = [v for n in nodes for v in as_list(n.get("enum")) or []]
            unique = list({json.dumps(v): v for v in values}.values())
            return {"type": "string" if kind == "strlit" else "integer", "enum": unique}
        if kind in ("str", "integer", "number", "boolean", "null"):
            return {"type": "string" if kind == "str" else kind}
        if kind == "union":
            return {}
        if kind == "arr":
            items = [as_map(n.get("items")) for n in nodes]
            if any(not i for i in items):
                return {"type": "array"}
            return {"type": "array", "items": self.shape({"anyOf": items})}
        props_of = [as_map(n.get("properties")) for n in nodes]
        if all(props_of):
            props: dict[str, list[Any]] = {}
            for n_props in props_of:
                for name, sub in (n_props or {}).items():
                    props.setdefault(name, []).append(sub)
            merged_props = {
                name: subs[0] if len({canonical(s) for s in subs}) == 1 else self.shape({"anyOf": subs})
                for name, subs in props.items()
            }
            first = strs(nodes[0].get("required"))
            required = [r for r in first if all(r in strs(n.get("required")) for n in nodes)]
            out: dict[str, Any] = {"type": "object", "properties": merged_props}
            if required:
                out["required"] = required
            return out
        if not any(props_of):
            values = [as_map(n.get("additionalProperties")) for n in nodes]
            if all(values):
                return {"type": "object", "additionalProperties": self.shape({"anyOf": values})}
        return {"type": "object"}

    # -- defaults

    def _check_default(self, node: dict[str, Any]) -> None:
        if "default" in node and not (_finite(node["default"]) and self._fits(node["default"], node, 0)):
            del node["default"]

    def _fits(self, value: Any, raw: Any, depth: int) -> bool:
        node = as_map(raw)
        if node is None or depth > 16:
            return True
        if "$ref" in node:
            _, target = self.target(node)
            return target is None or self._fits(value, target, depth + 1)
        members = [m for c in _COMBINATORS for m in _members(node, c)]
        if members:
            return any(self._fits(value, m, depth + 1) for m in members)
        allowed = as_list(node.get("enum"))
        if allowed is not None and value not in allowed:
            return False
        if node.get("format") == "binary":
            return False
        kinds = _type_set(node.get("type"))
        jt = value_type(value)
        if kinds and jt not in kinds and not (jt == "integer" and "number" in kinds):
            return False
        if as_map(value) is not None:
            return not node.get("properties")  # a struct field cannot default to a plain dict
        items = as_list(value)
        if items is not None:
            return all(not isinstance(v, (dict, list)) and self._fits(v, node.get("items"), depth + 1) for v in items)
        return True


_INT64 = 2**63 - 1
_MAX_LENGTH = 2**62


def _fit_bounds(node: dict[str, Any], json_type: str) -> dict[str, Any]:
    """Drop numeric constraints msgspec cannot express (it would fail when the module is imported).

    Integers take integral bounds inside int64 (``1.0`` becomes ``1``), numbers finite ones, lengths
    sizes a machine can hold; a ``multipleOf`` must be positive. A dropped bound only makes the
    client-side check looser: the server still enforces the schema.
    """
    out = dict(node)
    for key in (*_NUMBER_KEYS, *_COUNT_KEYS):
        if key not in out:
            continue
        value = out[key]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and key in _COUNT_KEYS:
            ok = isinstance(value, int) and 0 <= value <= _MAX_LENGTH
        elif ok and json_type == "integer":
            ok = float(value).is_integer() and -_INT64 < value < _INT64
            if ok:
                out[key] = int(value)
        elif ok:
            ok = abs(value) <= 1e300
        if ok and key == "multipleOf":
            ok = out[key] > 0
        if not ok:
            del out[key]
    return out


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (``1e400`` in JSON reads as infinity)."""
    if isinstance(value, float):
        return math.isfinite(value)
    obj, arr = as_map(value), as_list(value)
    if obj is not None:
        return all(_finite(v) for v in obj.values())
    return all(_finite(v) for v in arr or [])


def _merge_keywords(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Both sets of keywords at once (allOf): properties and required lists add up, else ``a`` wins."""
    out = {**b, **a}
    a_props, b_props = as_map(a.get("properties")), as_map(b.get("properties"))
    if a_props is not None or b_props is not None:
        out["properties"] = {**(b_props or {}), **(a_props or {})}
    req = [*strs(a.get("required")), *strs(b.get("required"))]
    if req:
        out["required"] = list(dict.fromkeys(req))
    if "type" not in a and "type" in b:
        out["type"] = b["type"]
    return out


def _constraint_only(node: dict[str, Any]) -> bool:
    """A combinator member that narrows its parent instead of offering an alternative type."""
    if any(k in node for k in ("$ref", "enum", "const", "items", *_COMBINATORS)):
        return False
    t = node.get("type")
    return t is None or t == "object"


def _type_set(t: Any) -> set[str]:
    if isinstance(t, str):
        return {t}
    return set(strs(t))


def value_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def canonical(node: Any) -> str:
    """Structure-only JSON of a schema: wording (title, description) and ``contentType`` left out."""

    def strip(n: Any) -> Any:
        arr = as_list(n)
        if arr is not None:
            return [strip(v) for v in arr]
        obj = as_map(n)
        if obj is None:
            return n
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if k in ("title", "description", "contentType"):
                continue
            mapping = as_map(v)
            if k in ("properties", "patternProperties") and mapping is not None:
                out[k] = {name: strip(sub) for name, sub in mapping.items()}
            elif k in ("enum", "const", "default", "examples", "required"):
                out[k] = v
            else:
                out[k] = strip(v)
        if "properties" in out and "type" not in out:
            out["type"] = "object"
        return out

    return json.dumps(strip(node), sort_keys=True)
