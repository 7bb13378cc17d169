"""Each field's type is decided once, in the plan, and every printed form of it agrees.

A field is printed three times: in its msgspec struct (by datamodel-code-generator), in the struct's
TypedDict twin and in the keyword arguments of the methods that fill it (by the templates). This test
reads what was printed in ``generated/`` and holds the three against each other and against the plan,
field by field, whole annotations (not just names): the struct's annotation is the plan's
``FieldPlan.declared``; the twin's is the struct's loosened by one rule stated here (``list`` ->
``Sequence``, ``dict`` -> ``Mapping``, a struct -> the struct or its TypedDict, constraints and
``UnsetType`` dropped); a method's argument is the twin's, widened only where the plan says (binary
fields also take bytes, a path or a file; ``tools`` also Python functions).
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from codegen.load import load_schemas
from codegen.plan import ModelPlan, SharedPlan, plan_models
from codegen.struct_printer import StructPrinter
from codegen.struct_schema import struct_definition, struct_document
from codegen.structs import FieldPlan, StructPlan
from tests._codegen_util import ROOT

PACKAGE = ROOT / "generated" / "workers_ai"


@cache
def _plans() -> tuple[list[ModelPlan], list[SharedPlan]]:
    loaded = load_schemas(ROOT / "schemas")
    return plan_models(loaded.models, [], "workers_ai")


@cache
def _module(dotted: str) -> ast.Module:
    return ast.parse((PACKAGE / (dotted.replace(".", "/") + ".py")).read_text(encoding="utf-8"))


def _imports(dotted: str) -> dict[str, str]:
    """Names a module imports from the package's own modules -> the dotted module they come from."""
    parts = dotted.split(".")
    out: dict[str, str] = {}
    for node in ast.walk(_module(dotted)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = parts[: len(parts) - node.level]
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                out[alias.asname or alias.name] = target
    return out


def _aliases(tree: ast.Module) -> dict[str, ast.expr]:
    return {
        n.target.id: n.value
        for n in tree.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and ast.unparse(n.annotation) == "TypeAlias"
        and n.value is not None
    }


def _expand(node: ast.expr, aliases: dict[str, ast.expr]) -> ast.expr:
    """The printer's alias names replaced by what they stand for; ``Meta``'s ``title`` is wording."""

    class Expand(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            target = aliases.get(node.id)
            return self.visit(copy.deepcopy(target)) if target is not None else node

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            node.keywords = [kw for kw in node.keywords if kw.arg != "title"]
            return node

    out = Expand().visit(copy.deepcopy(node))
    assert isinstance(out, ast.expr)
    return out


def _members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_members(node.left), *_members(node.right)]
    return [node]


def _union(parts: list[str]) -> str:
    flat: list[str] = []
    for part in parts:
        for member in _members(ast.parse(part, mode="eval").body):
            text = ast.unparse(member)
            if text not in flat:
                flat.append(text)
    if "None" in flat:  # the plan writes None last
        flat = [p for p in flat if p != "None"] + ["None"]
    return " | ".join(flat)


def loosen(node: ast.expr, twins: set[str]) -> str:
    """What a caller may pass for a struct annotation (the rule the TypedDict twins follow)."""
    members = _members(node)
    if len(members) > 1:
        return _union([loosen(m, twins) for m in members if ast.unparse(m) != "UnsetType"])
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if node.value.id == "Annotated":
            return loosen(args[0], twins)
        if node.value.id == "list":
            return f"Sequence[{loosen(args[0], twins)}]"
        if node.value.id == "dict":
            return f"Mapping[{ast.unparse(args[0])}, {loosen(args[1], twins)}]"
    if isinstance(node, ast.Name) and node.id in twins:
        return f"{node.id} | {node.id}Dict"
    return ast.unparse(node)


def _plain(node: ast.expr) -> str:
    """The annotation without its constraints (what a binary helper takes besides bytes)."""

    class Strip(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and node.value.id == "Annotated" and isinstance(node.slice, ast.Tuple):
                return node.slice.elts[0]
            return node

    return _union(
        [ast.unparse(m) for m in _members(Strip().visit(copy.deepcopy(node))) if ast.unparse(m) != "UnsetType"]
    )


def _where(
    plan_structs: tuple[StructPlan, ...], shared: tuple[tuple[str, tuple[str, ...]], ...], module: str
) -> dict[str, str]:
    """Struct name -> the module that prints it."""
    out = {s.name: module for s in plan_structs}
    for mod, names in shared:
        out.update(dict.fromkeys(names, mod))
    return out


def _classes(dotted: str) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in _module(dotted).body if isinstance(n, ast.ClassDef)}


def _typeddict_keys(dotted: str, name: str) -> dict[str, str]:
    """Every key of a TypedDict printed in ``dotted`` (class syntax with bases, or the functional form)."""
    tree = _module(dotted)
    cls = _classes(dotted).get(name)
    if cls is None:
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                assert isinstance(node.value, ast.Call) and isinstance(node.value.args[1], ast.Dict)
                d = node.value.args[1]
                return {
                    ast.literal_eval(k): ast.literal_eval(v)
                    for k, v in zip(d.keys, d.values, strict=True)
                    if k is not None
                }
        source = _imports(dotted).get(name)
        assert source is not None, f"{dotted}: {name} is neither printed nor imported"
        return _typeddict_keys(source, name)
    keys: dict[str, str] = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id != "TypedDict":
            keys.update(_typeddict_keys(dotted, base.id))
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            keys[st.target.id] = ast.unparse(st.annotation)
    return keys


def _home(plan: ModelPlan) -> str:
    """The shape module that prints a model's structs, TypedDicts and handle methods (its module re-exports it)."""
    text = (PACKAGE / (plan.module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    found = re.search(r"^from \.+(models\._shapes\.\w+) import \*", text, re.M)
    assert found is not None, plan.module
    return found.group(1)


def _struct_modules() -> Iterator[tuple[str, tuple[StructPlan, ...]]]:
    plans, shared = _plans()
    for p in plans:
        yield _home(p), p.structs
        if p.realtime is not None:
            yield p.realtime.module, p.realtime.structs
    for s in shared:
        yield s.module, s.structs


def test_every_struct_field_is_the_plans_type_and_its_twin_the_same_type_loosened() -> None:
    checked = 0
    twins = {s.name for _, structs in _struct_modules() for s in structs if s.twin}
    for module, structs in _struct_modules():
        aliases = _aliases(_module(module))
        classes = _classes(module)
        for s in structs:
            assert [ast.unparse(b) for b in classes[s.name].bases] == [*([s.view] if s.view else []), "Struct"]
            printed = {
                st.target.id: _expand(st.annotation, aliases)
                for st in classes[s.name].body
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
            }
            twin = _typeddict_keys(module, s.twin) if s.twin else {}
            for f in s.fields:
                planned = ast.unparse(_expand(ast.parse(f.declared, mode="eval").body, {}))
                assert ast.unparse(printed[f.name]) == planned, (module, s.name, f.name)
                if s.twin:
                    want = loosen(printed[f.name], twins)
                    if f.none_default and not f.required and "None" not in _members_text(f.annotation):
                        # Absent is None on a struct read from a reply; in the twin it is a key left out.
                        want = _union([t for t in _members_text(want) if t != "None"])
                    assert twin[f.wire] == want, (module, s.twin, f.wire)
                    assert twin[f.wire] == f.loose
                checked += 1
    assert checked > 1000


def _signature(cls: ast.ClassDef, method: str) -> dict[str, str]:
    """The annotations a method's arguments take: its own parameters and the keys of ``**params: Unpack[P]``;
    with JSON-mode overloads, the overload taking a ``response_format`` value (not a type)."""
    defs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method]
    out: dict[str, str] = {}
    for fn in defs:
        for arg in [*fn.args.args[1:], *fn.args.kwonlyargs]:
            text = ast.unparse(arg.annotation) if arg.annotation else "Any"
            if text not in ("Any",) and not text.startswith("type["):
                out[arg.arg] = text
        kw = fn.args.kwarg
        if kw is not None and kw.annotation is not None:
            out["**"] = ast.unparse(kw.annotation)
    return out


def test_every_method_argument_is_its_fields_type_as_the_twin_takes_it() -> None:
    plans, _ = _plans()
    twins = {s.name for _, structs in _struct_modules() for s in structs if s.twin}
    checked = 0
    for p in plans:
        home = _home(p)
        where = _where(p.structs, p.shared, home)
        cls = _classes(home)["ShapeHandle"]
        for m in p.methods:
            if not (m.params and m.params_name):
                continue  # a raw body, or a batch (its request forms are the typing tests')
            struct_module = where[str(m.class_name)]
            aliases = _aliases(_module(struct_module))
            fields = {
                st.target.id: _expand(st.annotation, aliases)
                for st in _classes(struct_module)[str(m.class_name)].body
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
            }
            sig = _signature(cls, m.name)
            unpacked = sig.pop("**", "")
            assert unpacked == f"Unpack[{m.params_name}]", (p.model_id, m.name)
            keys = _typeddict_keys(home, m.params_name)
            for prm in m.params:
                field = fields[prm.field]
                if prm.binary:
                    want = f"BinaryInput | {_plain(field)}"
                else:
                    want = loosen(field, twins)
                if prm.kind == "tools":
                    assert want.startswith("Sequence[") and want.endswith("]")
                    want = f"{want[:-1]} | ToolLike]"
                printed = sig.get(prm.name, keys.get(prm.name))
                assert printed is not None, (p.model_id, m.name, prm.name)
                printed = _union([t for t in _members_text(printed) if t != "UnsetType"])
                if prm.kind == "response_format":
                    assert printed == want, (p.model_id, m.name, prm.name)
                else:
                    assert printed in (want, _union([want, "None"])), (p.model_id, m.name, prm.name, printed, want)
                checked += 1
    assert checked > 500


def _members_text(text: str) -> list[str]:
    return [ast.unparse(m) for m in _members(ast.parse(text, mode="eval").body)]


def _field(wire: str, annotation: str, required: bool, default: str | None, output: bool) -> FieldPlan:
    name = wire.replace("-", "_")
    return FieldPlan(name, wire, annotation, annotation, annotation, required, default, False, "", output)


ONE = "Annotated[str, Meta(min_length=1)]"
FORMS = [  # (wire name, annotation, required, default)
    ("text", f"{ONE} | Annotated[list[{ONE}], Meta(max_length=100)]", True, None),
    ("n", "Annotated[int, Meta(ge=1, le=9999999999)]", False, "5"),
    ("x", "Annotated[float, Meta(ge=-2.0, lt=2.5)]", False, None),
    ("kind", "Literal['mean', 'cls']", False, "'mean'"),
    ("level", "Literal[1, 2]", False, None),
    ("image", "list[float] | bytes", False, None),
    ("raw", "bytes", False, None),
    ("content", "str | None", True, None),
    ("maybe", "Annotated[str, Meta(max_length=3)] | None", False, None),
    ("parts", "list[Part] | Part | None", False, None),
    ("tags", "dict[str, Annotated[str, Meta(pattern='^[a-z]+$')]]", False, None),
    ("extra", "dict[str, Any]", False, None),
    ("anything", "Any", False, None),
    ("list-of-lists", "list[list[float]]", False, "[]"),
    ("part", "Part", False, None),
]


@pytest.mark.parametrize("output", [False, True])
def test_the_printer_prints_the_planned_type_of_every_kind_of_field(output: bool) -> None:
    """The struct printer is handed the plan's types spelled as JSON Schema (``struct_schema``): what it prints
    is each field's planned annotation, for every form an annotation takes, inputs and outputs alike."""
    structs: list[StructPlan] = []
    for name, fields in (
        ("Part", (_field("name", "str", True, None, output),)),
        ("Thing", tuple(_field(*form, output) for form in FORMS)),
    ):
        definition, titles = struct_definition(name, fields, output)
        deps = ("Part",) if name == "Thing" else ()
        structs.append(StructPlan(name, fields, None, True, deps, json.dumps(definition), titles, name))
    doc = struct_document(structs, {}, "pkg")
    code, _ = StructPrinter().code(doc, tuple(structs), "m.py")
    tree = ast.parse(code)
    aliases = _aliases(tree)
    assert set(aliases) == {a for s in structs for a in s.alias_names}  # every alias it wrote is one the plan titled
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for s in structs:
        printed = {
            st.target.id: ast.unparse(_expand(st.annotation, aliases))
            for st in classes[s.name].body
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
        }
        assert printed == {f.name: ast.unparse(ast.parse(f.declared, mode="eval").body) for f in s.fields}


def test_shared_modules_are_planned_once() -> None:
    _, shared = _plans()
    assert len({s.module for s in shared}) == len(shared)
    assert all(Path(PACKAGE / (s.module.replace(".", "/") + ".py")).is_file() for s in shared)
