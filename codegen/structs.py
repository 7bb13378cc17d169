"""Types: every struct, TypedDict twin and alias of one model, named and annotated, from its shaped schema.

Input is the document ``reshape.reshape`` built (``$defs``: the variant roots under their final names plus
the schema's own definitions). Output is a list of frozen :class:`StructPlan` / :class:`AliasPlan`
records: each struct's final name and its fields (Python and wire names, defaults, required-ness and the
type: :meth:`_Builder.ann` decides it once, as annotation text; the TypedDict twin's and the method
arguments' forms are derived from that text, and so is what datamodel-code-generator prints the msgspec
struct from, ``struct_schema.struct_definition``).

Naming: a nested object is named from the property that holds it (``tool_calls`` items ->
``ToolCall``). When two different shapes would get one name, every one of them takes its parent's name
as a prefix (``ChoiceMessage``, ``InputMessage``), and so on up the path; if the whole path is the same,
a key only one of them has tells them apart (``UsageWithA``), else the model is refused (exit 2). Identical
shapes share one struct. Nodes datamodel-code-generator would turn into named aliases (constrained union
members and array items) get titles from their path, so no name is ever a counter.

Fields: a ``required`` property is a plain type with no default. In output structs one that may be
absent is nullable (``T | None = None``, or ``T | None = <schema default>``); in input structs it is left
out of the request when not given (``UNSET``). Structs reachable from an input also get a ``TypedDict``
twin (``Message`` -> ``MessageDict``) so that methods accept plain dict literals.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from .naming import pascal, singular
from .reshape import DEF_PREFIX, canonical, strs
from .schema_walk import as_list, as_map
from .struct_schema import struct_definition
from .views import VIEW_PROPERTIES, list_view_for, view_for

__all__ = [
    "AliasPlan",
    "FieldPlan",
    "NamingError",
    "StructPlan",
    "TwinLayout",
    "TypeSet",
    "build_types",
    "default_code",
    "names_in",
    "twin_layout",
    "twin_with_required",
    "with_none",
]


@dataclass(frozen=True)
class FieldPlan:
    name: str  # Python attribute name (datamodel-code-generator is given it as an alias when it differs)
    wire: str  # JSON key
    annotation: str  # the field's type with its constraints (what the struct declares)
    plain: str  # the same type without constraints
    loose: str  # what a caller may pass: structs or their TypedDict twins, sequences, mappings
    required: bool
    default: str | None  # Python expression of the schema default, when the field has one
    factory: bool  # that default is a list/dict
    description: str
    none_default: bool  # optional and absent means None (outputs); otherwise absent means UNSET (inputs)

    @property
    def declared(self) -> str:
        """The struct attribute's whole annotation, as the struct printer must write it (``render`` checks):
        an optional output field may be None, an optional input field UNSET (left out of the request)."""
        if self.required:
            return self.annotation
        if not self.none_default:
            return f"{self.annotation} | UnsetType"
        return self.annotation if "None" in _split_union(self.annotation) else f"{self.annotation} | None"


@dataclass(frozen=True)
class StructPlan:
    name: str
    fields: tuple[FieldPlan, ...]
    twin: str | None  # TypedDict name, for structs a caller builds (inputs)
    twin_classy: bool  # the twin can use class syntax (all keys are identifiers)
    deps: tuple[str, ...]  # other struct names its annotations use
    schema: str  # what datamodel-code-generator prints it from: its fields spelled as JSON Schema (``struct_schema``)
    alias_names: tuple[str, ...]  # type aliases datamodel-code-generator writes for it (titled by the plan)
    key: str  # structure-only identity, including the structs it uses (for sharing across models)
    view: str | None = None  # the task-family mixin it gets as an extra base (``codegen.views``)
    output: bool = False  # read from replies: an optional field may be absent (None), a field's prose is its doc

    @property
    def twin_required(self) -> tuple[FieldPlan, ...]:
        return tuple(f for f in self.fields if f.required)

    @property
    def twin_optional(self) -> tuple[FieldPlan, ...]:
        return tuple(f for f in self.fields if not f.required)


@dataclass(frozen=True)
class AliasPlan:
    name: str
    annotation: str
    wire: str = ""  # the type decoded from the wire when the annotation is a family's list view


class NamingError(Exception):
    """Two different shapes could not be given distinct names (a bad-input problem, exit 2)."""


@dataclass(frozen=True)
class TypeSet:
    structs: tuple[StructPlan, ...]
    aliases: tuple[AliasPlan, ...]
    roots: dict[str, str]  # variant name -> "struct" | "alias"
    loose_roots: dict[str, str]  # variant name -> what a caller may pass for it (struct | twin)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


@dataclass(frozen=True)
class TwinLayout:
    """How one module prints its TypedDict twins: twins whose optional keys are the same, key for key (name,
    type and comment), four or more, print those keys once, as a base ``_<first twin>Optional`` they extend."""

    bases: tuple[tuple[str, tuple[FieldPlan, ...]], ...] = ()  # (base name, its keys)
    base_of: tuple[tuple[str, str], ...] = ()  # (twin, the optional base it extends)

    def base(self, twin: str) -> str | None:
        return dict(self.base_of).get(twin)


def twin_layout(structs: Iterable[StructPlan]) -> TwinLayout:
    """The layout of the twins a module prints (see :class:`TwinLayout`)."""
    groups: dict[tuple[tuple[str, str, str], ...], list[StructPlan]] = {}
    for s in structs:
        if s.twin and s.twin_classy and len(s.twin_optional) >= 4:
            groups.setdefault(tuple((f.wire, f.loose, f.description) for f in s.twin_optional), []).append(s)
    bases: list[tuple[str, tuple[FieldPlan, ...]]] = []
    base_of: list[tuple[str, str]] = []
    for members in groups.values():
        if len(members) > 1:
            bases.append((f"_{members[0].twin}Optional", members[0].twin_optional))
            base_of += [(m.twin, bases[-1][0]) for m in members if m.twin]
    return TwinLayout(tuple(bases), tuple(base_of))


def twin_with_required(structs: Iterable[StructPlan], params: Iterable[Any], layout: TwinLayout) -> str | None:
    """The TypedDict twin of ``structs`` whose required keys (its ``_<twin>Required`` base) are ``params`` line
    for line (name, type, comment), so a method's keyword TypedDict extends that base instead of repeating it."""
    wanted = [(p.name, p.typed, p.description) for p in params]
    for s in structs:
        if s.twin and s.twin_classy and s.twin_required and (s.twin_optional or layout.base(s.twin)):
            if [(f.wire, f.loose, f.description) for f in s.twin_required] == wanted:
                return s.twin
    return None


def names_in(text: str) -> set[str]:
    """Identifiers an annotation or expression uses (string literals left out)."""
    return set(_IDENT.findall(_STRING.sub("", text)))


def with_none(annotation: str) -> str:
    parts = _split_union(annotation)
    if "None" in parts or "Any" in parts:
        return annotation
    return f"{annotation} | None"


def _split_union(annotation: str) -> list[str]:
    """Top-level ``|`` members of an annotation."""
    out: list[str] = []
    depth, start = 0, 0
    quote: str | None = None
    for i, ch in enumerate(annotation):
        if quote:
            if ch == "\\":
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(annotation[start:i].strip())
            start = i + 1
    out.append(annotation[start:].strip())
    return out


def _union(members: list[str]) -> str:
    flat: list[str] = []
    for m in members:
        for part in _split_union(m):
            if part not in flat:
                flat.append(part)
    if "Any" in flat or not flat:
        return "Any"
    if "None" in flat:
        flat = [p for p in flat if p != "None"] + ["None"]
    return " | ".join(flat)


def plain_of(annotation: str) -> str:
    """``annotation`` without its constraints (``Annotated[X, Meta(...)]`` -> ``X``), as a binary helper takes it."""
    return _union([ast.unparse(_strip(m)) for m in _members(annotation)])


def loose_of(annotation: str, twins: AbstractSet[str]) -> str:
    """What a caller may pass where a struct holds ``annotation``: ``list`` -> ``Sequence``, ``dict`` ->
    ``Mapping``, a struct with a TypedDict twin -> either, constraints dropped (checked on the way out)."""
    return _union([_loose(m, twins) for m in _members(annotation)])


def _members(annotation: str) -> list[ast.expr]:
    node = ast.parse(annotation, mode="eval").body
    out: list[ast.expr] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
            todo += [n.right, n.left]
        else:
            out.append(n)
    return out


def _strip(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if node.value.id == "Annotated":
            return _strip(args[0])
        inner = [_strip(a) for a in args]
        return ast.Subscript(node.value, ast.Tuple(inner) if len(inner) > 1 else inner[0])
    if isinstance(node, ast.BinOp):
        return ast.BinOp(_strip(node.left), node.op, _strip(node.right))
    return node


def _loose(node: ast.expr, twins: AbstractSet[str]) -> str:
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]

        def inner(arg: ast.expr) -> str:
            return _union([_loose(m, twins) for m in _members(ast.unparse(arg))])

        if node.value.id == "Annotated":
            return inner(args[0])
        if node.value.id == "list":
            return f"Sequence[{inner(args[0])}]"
        if node.value.id == "dict":
            return f"Mapping[{ast.unparse(args[0])}, {inner(args[1])}]"
        return ast.unparse(_strip(node))
    if isinstance(node, ast.Name) and node.id in twins:
        return f"{node.id} | {node.id}Dict"
    return ast.unparse(node)


def default_code(value: Any) -> str:
    """A Python expression for a JSON default (lists as lists, never tuples)."""
    if isinstance(value, str):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    arr, obj = as_list(value), as_map(value)
    if arr is not None:
        return "[" + ", ".join(default_code(v) for v in arr) + "]"
    if obj is not None:
        return "{" + ", ".join(f"{k!r}: {default_code(v)}" for k, v in obj.items()) + "}"
    return repr(str(value))


def _is_struct_node(node: dict[str, Any]) -> bool:
    props = as_map(node.get("properties"))
    return bool(props) and "$ref" not in node


def _meta(node: dict[str, Any], kind: str, floats: bool = False) -> str:
    """``Meta(...)`` as the struct printer writes it: keywords in alphabetical order, a ``number``'s bounds
    as floats (``ge=0.0``), so the plan's annotation is the printed one, character for character."""
    keys = {
        "string": (("minLength", "min_length"), ("maxLength", "max_length"), ("pattern", "pattern")),
        "number": (
            ("minimum", "ge"),
            ("maximum", "le"),
            ("exclusiveMinimum", "gt"),
            ("exclusiveMaximum", "lt"),
            ("multipleOf", "multiple_of"),
        ),
        "array": (("minItems", "min_length"), ("maxItems", "max_length")),
    }[kind]

    def value(raw: Any) -> str:
        number = isinstance(raw, (int, float)) and not isinstance(raw, bool)
        return repr(float(raw)) if floats and number else repr(raw)

    args = sorted(f"{arg}={value(node[key])}" for key, arg in keys if key in node)
    return f"Meta({', '.join(args)})" if args else ""


class _Builder:
    def __init__(self, defs: dict[str, Any], variants: list[str], inputs: set[str], reserved: set[str]) -> None:
        self.defs = defs
        self.variants = variants
        self.inputs = inputs
        self.reserved = reserved
        self.def_struct: dict[str, str] = {}  # def name -> struct name (defs that are objects)
        self.key_name: dict[str, str] = {}  # canonical shape -> struct name (inline objects)
        self.nodes: dict[str, dict[str, Any]] = {}  # struct name -> schema node
        self.twins: set[str] = set()
        self.busy: set[str] = set()
        self._first: dict[str, dict[str, Any]] = {}  # shape key -> the first node of that shape

    # ------------------------------------------------------------------ naming

    def name_everything(self) -> None:
        claims: dict[str, list[str]] = {}  # shape key -> path segments of its first place
        order: list[str] = []
        fixed = set(self.variants)
        for name in self.variants:
            node = as_map(self.defs.get(name)) or {}
            if _is_struct_node(node):
                self.def_struct[name] = name
                self.nodes[name] = node
        for name, raw in self.defs.items():
            node = as_map(raw) or {}
            direction = "Input" if name.startswith("input_") or name in self.inputs else "Output"
            if name in self.variants:
                stem = re.sub(r"(Input|Output)$", "", name) or name
                self._walk(node, [direction, stem], claims, order, root=True)
            else:
                tail = pascal(name.split("_", 1)[1] if "_" in name else name)
                if _is_struct_node(node):
                    key = f"def:{name}"
                    claims[key] = [direction, tail]
                    order.append(key)
                self._walk(node, [direction, tail], claims, order, root=True)
        cands = {key: _candidates(claims[key]) for key in order}
        level = dict.fromkeys(order, 0)
        taken = set(self.reserved) | fixed | {f"{v}Dict" for v in fixed}
        while True:
            names = {key: cands[key][level[key]] for key in order}
            groups: dict[str, list[str]] = {}
            for key in order:
                groups.setdefault(names[key], []).append(key)
            twin_names = {f"{n}Dict" for n in names.values()}
            bumped = False
            for name, keys in groups.items():
                clash = name in taken or name in twin_names
                if len(keys) == 1 and not clash:
                    continue
                movable = [k for k in keys if level[k] + 1 < len(cands[k])]
                if not movable:
                    if len(keys) > 1:
                        # Same path, different shapes (`Usage` and `usage` in one object): tell them apart
                        # by a property only one of them has, else refuse the schema.
                        for k in keys:
                            cands[k].append(self._with_own_key(k, [o for o in keys if o != k], cands[k][0], name))
                    else:
                        cands[keys[0]].append(f"{name}Type")
                    movable = keys
                for k in movable:
                    level[k] += 1
                bumped = True
            if not bumped:
                break
        for key in order:
            name = names[key]
            if key.startswith("def:"):
                def_name = key[4:]
                self.def_struct[def_name] = name
                self.nodes[name] = as_map(self.defs[def_name]) or {}
            else:
                self.key_name[key] = name
                self.nodes.setdefault(name, self._first[key])

    def _with_own_key(self, key: str, others: list[str], base: str, name: str) -> str:
        mine = as_map(self._node_of(key).get("properties")) or {}
        theirs = [set(as_map(self._node_of(o).get("properties")) or {}) for o in others]
        own = [p for p in mine if all(p not in t for t in theirs)]
        if not own:
            raise NamingError(f"two different object shapes would both be named {name!r} (same path, same keys)")
        return f"{base}With{pascal(own[0])}"

    def _node_of(self, key: str) -> dict[str, Any]:
        if key.startswith("def:"):
            return as_map(self.defs.get(key[4:])) or {}
        return self._first[key]

    def _walk(
        self, node: dict[str, Any], segs: list[str], claims: dict[str, list[str]], order: list[str], root: bool = False
    ) -> None:
        if not root and _is_struct_node(node):
            key = canonical(node)
            if key not in claims:
                claims[key] = segs
                order.append(key)
                self._first[key] = node
        for prop, sub in (as_map(node.get("properties")) or {}).items():
            child = as_map(sub)
            if child is not None:
                self._walk(child, [*segs, pascal(prop)], claims, order)
        items = as_map(node.get("items"))
        if items is not None:
            self._walk(items, [*segs[:-1], singular(segs[-1])], claims, order)
        extra = as_map(node.get("additionalProperties"))
        if extra is not None:
            self._walk(extra, [*segs[:-1], singular(segs[-1])], claims, order)
        for comb in ("anyOf", "oneOf"):
            for member in as_list(node.get(comb)) or []:
                m = as_map(member)
                if m is not None:
                    self._walk(m, segs, claims, order)

    # ------------------------------------------------------------------ annotations

    def struct_for(self, node: dict[str, Any]) -> str | None:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(DEF_PREFIX):
            return self.def_struct.get(ref[len(DEF_PREFIX) :])
        if _is_struct_node(node):
            return self.key_name.get(canonical(node))
        return None

    def ann(self, raw: Any) -> str:
        """The type of a schema node, with its constraints: the one decision the struct, its TypedDict
        twin and the method arguments all print (the last two through :func:`plain_of` and :func:`loose_of`)."""
        node = as_map(raw)
        if not node:
            return "Any"
        name = self.struct_for(node)
        if name is not None:
            return name
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = ref[len(DEF_PREFIX) :] if ref.startswith(DEF_PREFIX) else ""
            if target in self.busy or target not in self.defs:
                return "Any"
            self.busy.add(target)
            try:
                return self.ann(self.defs[target])
            finally:
                self.busy.discard(target)
        members = [m for m in (as_map(x) for c in ("anyOf", "oneOf") for x in as_list(node.get(c)) or []) if m]
        if members:
            return _union([self.ann(m) for m in members])
        if "enum" in node:
            values = [
                v for v in as_list(node.get("enum")) or [] if isinstance(v, (str, int)) and not isinstance(v, bool)
            ]
            if values:
                return f"Literal[{', '.join(repr(v) for v in values)}]"
        kinds = [k for k in (as_list(node.get("type")) or [node.get("type")]) if isinstance(k, str)]
        if not kinds:
            if "properties" in node or "additionalProperties" in node:
                kinds = ["object"]
            elif "items" in node:
                kinds = ["array"]
            else:
                return "Any"
        return _union([self._typed(node, k) for k in kinds])

    def _typed(self, node: dict[str, Any], kind: str) -> str:
        meta = ""
        if kind == "string":
            base = "bytes" if node.get("format") == "binary" else "str"
            meta = _meta(node, "string") if base == "str" else ""
        elif kind in ("integer", "number"):
            base = "int" if kind == "integer" else "float"
            meta = _meta(node, "number", floats=kind == "number")
        elif kind == "boolean":
            base = "bool"
        elif kind == "null":
            return "None"
        elif kind == "array":
            base = f"list[{self.ann(node.get('items'))}]"
            meta = _meta(node, "array")
        elif kind == "object":
            extra = node.get("additionalProperties")
            value = self.ann(extra) if as_map(extra) else "Any"
            base = f"dict[str, {value}]"
        else:
            return "Any"
        if meta:
            return f"Annotated[{base}, {meta}]"
        return base

    # ------------------------------------------------------------------ structs

    def reachable(self, roots: list[str]) -> set[str]:
        """Structs a set of variants uses (struct variants themselves, and what alias variants hold)."""
        seen: set[str] = set()
        todo = [self.def_struct[r] for r in roots if r in self.def_struct]
        for r in roots:
            if r not in self.def_struct:
                todo.extend(self.deps_of(as_map(self.defs.get(r)) or {}))
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(self.deps_of(self.nodes[name]))
        return seen

    def deps_of(self, node: dict[str, Any]) -> list[str]:
        found: list[str] = []

        def visit(raw: Any, top: bool, guard: frozenset[str]) -> None:
            n = as_map(raw)
            if n is None:
                return
            name = None if top else self.struct_for(n)
            if name is not None:
                found.append(name)
                return
            ref = n.get("$ref")
            if isinstance(ref, str):
                target = ref[len(DEF_PREFIX) :]
                if target in self.defs and target not in guard:
                    visit(self.defs[target], False, guard | {target})
                return
            for sub in (as_map(n.get("properties")) or {}).values():
                visit(sub, False, guard)
            for key in ("items", "additionalProperties"):
                visit(n.get(key), False, guard)
            for c in ("anyOf", "oneOf"):
                for m in as_list(n.get(c)) or []:
                    visit(m, False, guard)

        visit(node, True, frozenset())
        return found

    def fields(self, node: dict[str, Any], none_default: bool, pynames: dict[str, str]) -> tuple[FieldPlan, ...]:
        props = as_map(node.get("properties")) or {}
        required = set(strs(node.get("required")))
        out: list[FieldPlan] = []
        for wire, raw in props.items():
            sub = as_map(raw) or {}
            has_default = "default" in sub and wire not in required
            value = sub.get("default") if has_default else None
            desc = sub.get("description")
            out.append(
                FieldPlan(
                    name=pynames[wire],
                    wire=wire,
                    annotation=(annotation := self.ann(sub)),
                    plain=plain_of(annotation),
                    loose=loose_of(annotation, self.twins),
                    required=wire in required,
                    default=default_code(value) if has_default and value is not None else None,
                    factory=has_default and isinstance(value, (list, dict)),
                    description=desc if isinstance(desc, str) else "",
                    none_default=none_default and wire not in required,
                )
            )
        return tuple(out)


# Names an annotation datamodel-code-generator writes may use: a field with one of them would shadow it.
_ANNOTATION_NAMES = frozenset(
    {"str", "int", "float", "bool", "bytes", "list", "dict", "None", "Any", "Literal", "Annotated", "Meta"}
    | {"Struct", "UNSET", "UnsetType", "field", "TypeAlias", "msgspec"}
)


def _python_names(wires: list[str], reserved: set[str]) -> dict[str, str]:
    """One Python name per wire name for the whole module (the alias map datamodel-code-generator gets).

    A plain identifier keeps its name unless it would shadow a type name; anything else is cleaned up
    (``a-b`` -> ``a_b``, ``class`` -> ``class_``, ``123`` -> ``f_123``) and given a trailing ``_`` until it
    is unique among the module's field names.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    plain = [w for w in wires if _field_name(w) == w and w not in reserved]
    for w in plain:
        out[w] = w
        taken.add(w)
    for w in wires:
        if w in out:
            continue
        py = _field_name(w)
        while py in taken or py in reserved:
            py += "_"
        out[w] = py
        taken.add(py)
    return out


def _candidates(segs: list[str]) -> list[str]:
    """Names for a path, most local first: ``Message``, ``ChoiceMessage``, ``OutputChoiceMessage``..."""
    out: list[str] = []
    for k in range(1, len(segs) + 1):
        tail = segs[-k:]
        kept = [
            s for i, s in enumerate(tail) if i + 1 == len(tail) or (singular(s) != tail[i + 1] and s != tail[i + 1])
        ]
        name = "".join(kept)
        if name and name not in out:
            out.append(name)
    return out or ["Object"]


def _field_name(wire: str) -> str:
    name = re.sub(r"\W", "_", wire, flags=re.ASCII).lstrip("_")
    if not name:
        name = "field"
    if name[0].isdigit():
        name = f"f_{name}"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return name


def _clear_of_view(fields: tuple[FieldPlan, ...], view: str | None) -> tuple[FieldPlan, ...]:
    """``fields`` with any Python name the view's properties use moved aside (``tool_calls_``; wire name kept)."""
    hidden = VIEW_PROPERTIES.get(view or "", frozenset())
    if not hidden & {f.name for f in fields}:
        return fields
    from dataclasses import replace

    taken = {f.name for f in fields} | hidden
    out: list[FieldPlan] = []
    for f in fields:
        if f.name in hidden:
            name = f.name + "_"
            while name in taken:
                name += "_"
            taken.add(name)
            f = replace(f, name=name)
        out.append(f)
    return tuple(out)


def build_types(
    defs: dict[str, Any], variants: list[str], input_variants: list[str], reserved: set[str], task: str = ""
) -> TypeSet:
    """Every type one model module declares, from the shaped ``$defs`` (see the module docstring)."""
    b = _Builder(defs, variants, set(input_variants), reserved)
    b.name_everything()
    b.twins = b.reachable(input_variants)
    output_side = b.reachable([v for v in variants if v not in input_variants])
    order = list(dict.fromkeys([*(b.def_struct[v] for v in variants if v in b.def_struct), *b.nodes]))
    wires = list(dict.fromkeys(w for n in order for w in as_map(b.nodes[n].get("properties")) or {}))
    pynames = _python_names(wires, set(_ANNOTATION_NAMES) | set(order) | reserved)
    structs: dict[str, StructPlan] = {}
    for name in order:
        node = b.nodes[name]
        none_default = name in output_side
        fields = b.fields(node, none_default, pynames)
        view = None
        if none_default and name not in b.twins:
            root = name in variants and name not in input_variants
            view = view_for(task, frozenset(f.wire for f in fields), root)
            fields = _clear_of_view(fields, view)
        twin = name in b.twins
        classy = all(f.wire.isidentifier() and not keyword.iskeyword(f.wire) for f in fields)
        if twin and classy:
            uses = {n for f in fields for n in names_in(f.loose)}
            classy = not any(f.wire in uses for f in fields)
        deps = tuple(dict.fromkeys(d for d in b.deps_of(node) if d != name))
        definition, titles = struct_definition(name, fields, none_default)
        schema = json.dumps(definition, sort_keys=True, ensure_ascii=False)
        structs[name] = StructPlan(
            name, fields, f"{name}Dict" if twin else None, classy, deps, schema, titles, "", view, none_default
        )
    keyed = _keys(structs)
    roots: dict[str, str] = {}
    loose_roots: dict[str, str] = {}
    aliases: list[AliasPlan] = []
    for v in variants:
        if v in b.def_struct:
            roots[v] = "struct"
            loose_roots[v] = f"{v} | {v}Dict" if v in b.twins else v
        else:
            roots[v] = "alias"
            ann = b.ann(defs.get(v))
            listed = re.fullmatch(r"list\[(\w+)\]", ann)
            view = list_view_for(task)
            if listed and view and v not in input_variants and _fits_list_view(view, listed.group(1), structs):
                aliases.append(AliasPlan(v, f"{view}[{listed.group(1)}]", ann))
            else:
                aliases.append(AliasPlan(v, ann))
            loose_roots[v] = v
    return TypeSet(tuple(keyed[n] for n in order), tuple(aliases), roots, loose_roots)


# What each list view reads from its items: required fields with these exact annotations.
_LIST_ITEM_FIELDS: dict[str, dict[str, str]] = {
    "Classifications": {"label": "str", "score": "float"},
    "Detections": {"label": "str", "score": "float"},
}
_BOX_FIELDS = {"xmin": "float", "ymin": "float", "xmax": "float", "ymax": "float"}


def _has_fields(struct: StructPlan | None, wanted: dict[str, str]) -> bool:
    fields = {f.name: f for f in struct.fields} if struct is not None else {}
    return all(n in fields and fields[n].required and fields[n].plain == t for n, t in wanted.items())


def _fits_list_view(view: str, item: str, structs: dict[str, StructPlan]) -> bool:
    """Whether the list's item struct offers what the view's Protocol reads (a detector's box needs all four
    float coordinates, required); a schema that does not say so keeps a plain ``list``."""
    struct = structs.get(item)
    if not _has_fields(struct, _LIST_ITEM_FIELDS.get(view, {})):
        return False
    if view != "Detections" or struct is None:
        return True
    box = next((f for f in struct.fields if f.name == "box"), None)
    return box is not None and box.required and _has_fields(structs.get(box.plain), _BOX_FIELDS)


def _keys(structs: dict[str, StructPlan]) -> dict[str, StructPlan]:
    """Each struct with its identity key: its own text plus the keys of the structs it uses."""
    import hashlib

    done: dict[str, str] = {}

    def key(name: str, busy: frozenset[str]) -> str:
        if name in done:
            return done[name]
        s = structs[name]
        own = repr((s.name, s.fields, s.twin, s.twin_classy, s.schema, s.view))
        deps = [key(d, busy | {name}) if d not in busy and d in structs else f"<{d}>" for d in s.deps]
        value = hashlib.sha256("\0".join([own, *deps]).encode()).hexdigest()[:20]
        if not busy:
            done[name] = value
        return value

    from dataclasses import replace

    return {n: replace(s, key=key(n, frozenset())) for n, s in structs.items()}
