"""What datamodel-code-generator prints the structs from: the plan's types, spelled as JSON Schema.

A field's type is decided once, by ``structs`` (``FieldPlan.annotation``, with its constraints). The struct
printer reads no schema of the model's: each struct is handed to it as a definition whose every property is
that annotation written back in the JSON Schema the printer turns into exactly it (``str`` -> ``{"type":
"string"}``, a struct -> a ``$ref``, ``Annotated[list[X], Meta(max_length=3)]`` -> an array with
``maxItems``). Required-ness, defaults and ``None`` for an absent output field come from the same
``FieldPlan``. The printer names some parts itself (a constrained union member or list item becomes a type
alias): those parts get a title from their place (``EmbeddingInputTextString``), so no name is a counter.
An output field's description goes along as ``x-doc``, which our struct template
(``templates/structs/msgspec.jinja2``) prints as the field's docstring.

``tests/codegen/test_one_type_decision.py`` holds what was printed against the plan for every field.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from typing import Any, Protocol

from .literals import doc_text
from .naming import pascal
from .reshape import DEF_PREFIX
from .schema_walk import as_list, as_map

__all__ = ["Defined", "struct_definition", "struct_document"]

# Meta(...) keywords as JSON Schema keywords, by what they constrain.
_STRING_KEYS = {"min_length": "minLength", "max_length": "maxLength", "pattern": "pattern"}
_NUMBER_KEYS = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
    "multiple_of": "multipleOf",
}
_ARRAY_KEYS = {"min_length": "minItems", "max_length": "maxItems"}
_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
# How a union member or list item the printer names is titled, by its kind (``...TextString``).
_KINDS = {"str": "String", "list": "List", "int": "Integer", "float": "Number", "bool": "Boolean"}


def struct_definition(name: str, fields: Iterable[Any], none_default: bool) -> tuple[dict[str, Any], tuple[str, ...]]:
    """One struct's definition for the printer, and the titles it gives the parts the printer names.

    ``fields`` are ``structs.FieldPlan`` records: their annotations, required-ness and defaults. In an output
    struct (``none_default``) an optional field may be absent: ``nullable``, so the printer writes ``T | None``
    and defaults it to None (or to its schema default); an optional input field is left out when unset
    (``UNSET``), never defaulted to the schema's value: ``omit_defaults`` would then leave out that value
    when a caller gives it (``truncate_inputs=False``), and the request would not be sent as given.
    """
    titles: list[str] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in fields:
        node = _spell(_parse(f.annotation), f"{name}{pascal(f.wire)}", titles)
        if f.required:
            required.append(f.wire)
        else:
            if none_default:
                if f.default is not None:
                    node["default"] = _value(f.default)
                node = _nullable(node)
        if none_default and f.description:  # an output field's prose, its docstring (``templates/structs``)
            node["x-doc"] = doc_text(f.description)
        properties[f.wire] = node
    body: dict[str, Any] = {"type": "object", "properties": properties, "title": name}
    if required:
        body["required"] = required
    return body, tuple(sorted(titles))


class Defined(Protocol):
    """A struct as the plan holds it (``structs.StructPlan``): its name, definition and family view."""

    @property
    def name(self) -> str: ...
    @property
    def schema(self) -> str: ...
    @property
    def view(self) -> str | None: ...


def struct_document(structs: Iterable[Defined], imported: dict[str, str], package: str) -> str:
    """The JSON schema one module's structs are printed from (empty: no structs).

    Each struct the module declares is a ``$defs`` entry, its definition (:func:`struct_definition`); a struct
    another module holds (``imported``: name -> module) is a ``customTypePath`` to it, so it is imported, not
    redeclared; a struct with a family view names it in ``customBasePath``, so the view is its first base.
    """
    defs: dict[str, Any] = {}
    used: set[str] = set()
    for s in structs:
        defs[s.name] = _imported(json.loads(s.schema), imported, package, used)
        if s.view:  # the family view is a first base of its own (``codegen.views``); the printer adds it
            defs[s.name]["customBasePath"] = [f"{package}.families.{s.view}", "msgspec.Struct"]
    if not defs:
        return ""
    # The root is a struct nothing else refers to, written in place (a root `$ref` would also get an alias).
    root = next((n for n in defs if n not in used), None)
    if root is None:
        return json.dumps({"$defs": defs, "$ref": f"{DEF_PREFIX}{next(iter(defs))}"}, ensure_ascii=False)
    body = defs.pop(root)
    return json.dumps({**body, "$defs": defs}, ensure_ascii=False)


def _imported(node: Any, imported: dict[str, str], package: str, used: set[str]) -> Any:
    if isinstance(node, list):
        items: list[Any] = node  # pyright: ignore[reportUnknownVariableType]
        return [_imported(v, imported, package, used) for v in items]
    if not isinstance(node, dict):
        return node
    obj: dict[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
    ref = obj.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix(DEF_PREFIX)
        if name in imported:
            rest = {k: v for k, v in obj.items() if k != "$ref"}
            return {"customTypePath": f"{package}.{imported[name]}.{name}", **rest}
        used.add(name)
        return obj
    return {
        k: (v if k in ("enum", "default", "required") else _imported(v, imported, package, used))
        for k, v in obj.items()
    }


def _parse(annotation: str) -> ast.expr:
    return ast.parse(annotation, mode="eval").body


def _members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_members(node.left), *_members(node.right)]
    return [node]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _subscript(node: ast.expr) -> tuple[str, list[ast.expr]] | None:
    """``Name[args]`` as (name, args)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return node.value.id, list(args)
    return None


def _spell(node: ast.expr, path: str, titles: list[str]) -> dict[str, Any]:
    """The schema the printer turns into ``node`` (see the module docstring)."""
    members = _members(node)
    if len(members) > 1:
        values = [m for m in members if not _is_none(m)]
        if len(values) == 1 and len(members) == 2:
            only = _spell(values[0], path, [])
            kind = only.get("type")
            if isinstance(kind, str) and kind != "object":
                # `X | None` for one typed X (not an object) is written in place: ``Annotated[X, Meta(...)] | None``.
                return {**_spell(values[0], path, titles), "type": [kind, "null"]}
        return {"anyOf": [_titled(m, f"{path}{_kind(m)}", titles) for m in members]}
    if _is_none(node):
        return {"type": "null"}
    if isinstance(node, ast.Name):
        if node.id == "Any":
            return {}
        if node.id == "bytes":
            return {"type": "string", "format": "binary"}
        if node.id in _SCALARS:
            return {"type": _SCALARS[node.id]}
        return {"$ref": f"{DEF_PREFIX}{node.id}"}  # a struct
    sub = _subscript(node)
    if sub is None:
        raise ValueError(f"cannot spell the type {ast.unparse(node)!r}")
    name, args = sub
    if name == "Annotated":
        out = _spell(args[0], path, titles)
        keys = (
            _ARRAY_KEYS if out.get("type") == "array" else _STRING_KEYS if out.get("type") == "string" else _NUMBER_KEYS
        )
        return {**out, **{keys[k]: v for k, v in _meta(args[1]).items()}}
    if name == "list":
        return {"type": "array", "items": _titled(args[0], f"{path}Item", titles)}
    if name == "dict":
        value = args[1]
        if isinstance(value, ast.Name) and value.id == "Any":
            return {"type": "object"}
        return {"type": "object", "additionalProperties": _titled(value, f"{path}Value", titles)}
    if name == "Literal":
        literals: list[Any] = [ast.literal_eval(a) for a in args]
        kind = (
            "string"
            if all(isinstance(v, str) for v in literals)
            else "integer"
            if all(isinstance(v, int) for v in literals)
            else None
        )
        return {**({"type": kind} if kind else {}), "enum": literals}
    raise ValueError(f"cannot spell the type {ast.unparse(node)!r}")


def _titled(node: ast.expr, title: str, titles: list[str]) -> dict[str, Any]:
    """A union member or list item: the printer makes a named alias of a constrained one, titled here."""
    out = _spell(node, title, titles)
    if "$ref" in out or "anyOf" in out or not _constrained(out):
        return out
    titles.append(title)
    return {**out, "title": title}


def _constrained(node: dict[str, Any]) -> bool:
    return any(k in node for keys in (_STRING_KEYS, _NUMBER_KEYS, _ARRAY_KEYS) for k in keys.values())


def _kind(node: ast.expr) -> str:
    sub = _subscript(node)
    if sub is not None and sub[0] == "Annotated":
        node = sub[1][0]
        sub = _subscript(node)
    name = sub[0] if sub is not None else node.id if isinstance(node, ast.Name) else ""
    return _KINDS.get(name, "Value")


def _meta(node: ast.expr) -> dict[str, Any]:
    """``Meta(ge=1, le=5)`` as its keywords."""
    if not isinstance(node, ast.Call):
        return {}
    return {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}


def _value(code: str) -> Any:
    """A default's JSON value from the Python expression the plan wrote for it."""
    return ast.literal_eval(code)


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with null taken out of its own types and ``nullable: true`` instead (printed ``T | None``)."""
    out = dict(node)
    kinds = as_list(out.get("type"))
    if kinds is not None and "null" in kinds:
        rest = [k for k in kinds if k != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
    members = as_list(out.get("anyOf"))
    if members is not None and {"type": "null"} in members:
        rest_members = [m for m in members if m != {"type": "null"}]
        only = as_map(rest_members[0]) if len(rest_members) == 1 else None
        if only is not None:
            del out["anyOf"]
            out = {**only, **out}
        else:
            out["anyOf"] = rest_members
    out["nullable"] = True
    return out
