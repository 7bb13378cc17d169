"""Step 3 of the pipeline: print the package plan, module by module.

``render`` decides nothing: every name, type, module and overload is the plan's (``records.PackagePlan``).
A module's msgspec structs are datamodel-code-generator's output, included verbatim (``struct_printer``),
printed from the document the plan built (``struct_schema``); everything else comes from the jinja2
templates in ``templates/``, fed with the frozen plan records. Schema text only ever reaches the output
through ``literals`` (values, docstring bodies, comment lines). Each module is compiled and checked for
undefined names before it is returned, so a generator bug is reported (exit 2 naming the file), never
written; every printed module then goes through ``tidy`` (one header, imports at the top, ruff).
"""

from __future__ import annotations

import ast
import builtins
import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import jinja2

from .literals import all_names, comment_text, doc_text, price_text, pylit
from .records import ModelPlan, PackagePlan, ShapeModule, SharedPlan
from .runtime_source import runtime_files
from .struct_cache import stamp, with_key
from .struct_printer import StructPrinter
from .structs import shared_optional_keys, twin_with_required
from .tidy import format_modules, tidy_module

__all__ = ["RenderError", "render_package", "undefined_names"]

_TEMPLATES = Path(__file__).parent / "templates"


class RenderError(Exception):
    """A module failed to render or would not import (reported as a bad-input problem naming the file)."""

    def __init__(self, file: str, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.message = message


def render_package(
    plan: PackagePlan,
    *,
    with_testing: bool = True,
    with_ray: bool = True,
    cached: Mapping[str, str] | None = None,
) -> dict[str, bytes]:
    """All files of the output package, keyed by path relative to the package folder.

    ``with_testing`` adds the emulator (``testing/``) and the schema JSON files it serves
    (``_schemas/``); without it the package holds the runtime and the selected models only. ``cached``
    maps module paths to their text on disk (see ``struct_printer``).
    """
    printer = _Printer(plan.package, StructPrinter(cached))
    for shape in plan.shapes:
        printer.shape(shape)
    for shared in plan.shared:
        printer.shared(shared)
    files: dict[str, bytes] = {}
    for model in plan.models:
        printer.model(model)
        if with_testing:
            files.update(_schema_file(model))
    for folder, children in plan.folders.items():
        printer.module(
            folder.replace(".", "/") + "/__init__.py", "folder_init.py.jinja", "", folder=folder, children=children
        )
    common: dict[str, Any] = {"package": plan.package, "plans": plan.listed}
    printer.module("_registry.py", "registry.py.jinja", "", **common)
    printer.module("_listing.py", "listing.py.jinja", "", **common)
    for rel, aio in (("_client.py", False), ("_aio_client.py", True)):
        printer.module(rel, "client.py.jinja", "", aio=aio, client=plan.client, **common)
    printer.module("__init__.py", "package_init.py.jinja", "", **common)
    # The formatter's last: one ruff run over every printed module, then each struct cache hash.
    files.update({rel: stamp(text).encode() for rel, text in format_modules(printer.printed).items()})
    files["py.typed"] = b""
    files.update(runtime_files(with_testing=with_testing, with_ray=with_ray))
    return files


def _schema_file(model: ModelPlan) -> dict[str, bytes]:
    """The catalog entry the emulator serves: compact and gzipped (mtime 0, so the bytes are reproducible;
    as indented JSON these were a seventh of the installed package)."""
    rel = "_schemas/" + model.module.replace(".", "/") + ".json.gz"
    text = json.dumps(model.source.catalog, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return {rel: gzip.compress((text + "\n").encode(), compresslevel=9, mtime=0)}


class _Printer:
    """Prints modules through the templates into ``printed`` (path -> tidied text, formatted at the end)."""

    def __init__(self, package: str, structs: StructPrinter) -> None:
        self.package = package
        self.structs = structs
        self.printed: dict[str, str] = {}
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
            autoescape=False,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            undefined=jinja2.StrictUndefined,
        )
        self.env.filters.update(pylit=pylit, doc=doc_text, comment=comment_text, price=price_text, all_names=all_names)
        template_globals = cast("dict[str, Any]", self.env.globals)
        template_globals["shared_optional_keys"] = shared_optional_keys  # _types.jinja's twins()
        template_globals["twin_with_required"] = twin_with_required  # shape.py.jinja's keyword TypedDicts

    def module(self, rel: str, template: str, file: str, header: str = "# generated by codegen", **data: Any) -> None:
        """Print one module from ``template``; ``file`` is the schema file a problem with it names."""
        try:
            text = self.env.get_template(template).render(**data)
            missing = undefined_names(text, rel)
        except Exception as exc:  # name the schema instead of crashing the whole run
            message = f"rendering {rel} failed ({type(exc).__name__}: {str(exc)[:300]})"
            raise RenderError(file, message) from None
        if missing:
            names = ", ".join(missing[:5])
            raise RenderError(file, f"the generated {rel} would fail on import: {names} not defined (generator bug)")
        self.printed[rel] = tidy_module(text, rel, self.package, header)

    def _struct_code(self, doc: str, structs: Any, rel: str, file: str) -> tuple[str, str]:
        try:
            return self.structs.code(doc, structs, rel)
        except Exception as exc:  # a struct generator failure names the schema (bad input, exit 2)
            message = f"the struct generator failed on {rel} ({type(exc).__name__}: {str(exc)[:300]})"
            raise RenderError(file, message) from None

    def shape(self, shape: ShapeModule) -> None:
        rel = shape.module.replace(".", "/") + ".py"
        code, key = self._struct_code(shape.struct_doc, shape.structs, rel, shape.file)
        header = with_key(f"# generated by codegen: one {comment_text(shape.shape.task or 'model')} shape", key)
        self.module(rel, "shape.py.jinja", shape.file, header, plan=shape, struct_code=code)

    def shared(self, shared: SharedPlan) -> None:
        rel = shared.module.replace(".", "/") + ".py"
        code, key = self._struct_code(shared.struct_doc, shared.structs, rel, "")
        header = with_key(f"# generated by codegen from the {comment_text(shared.task)} schemas", key)
        self.module(rel, "shared.py.jinja", "", header, shared=shared, struct_code=code)

    def model(self, model: ModelPlan) -> None:
        file = model.source.file
        live = model.realtime
        if live is not None:  # its ``*_live`` module: the plan made it for the ``x-realtime`` section
            rel = live.module.replace(".", "/") + ".py"
            code, key = self._struct_code(live.struct_doc, live.structs, rel, file)
            header = with_key(f"# generated by codegen from {comment_text(live.label)} (x-realtime)", key)
            self.module(rel, "live.py.jinja", file, header, plan=live, struct_code=code)
        rel = model.module.replace(".", "/") + ".py"
        header = f"# generated by codegen from {comment_text(model.source.label)}"
        self.module(rel, "model.py.jinja", file, header, plan=model, realtime=live)


def undefined_names(text: str, filename: str) -> list[str]:
    """Names a module uses but never binds (it would raise NameError); raises SyntaxError if it does not compile.

    A safety net after rendering: the template refers to struct classes by the names the plan chose,
    and a struct generator that merged or renamed one would otherwise leave a module that fails on import.
    """
    tree = ast.parse(text, filename)
    compile(tree, filename, "exec", dont_inherit=True)
    allowed = set(dir(builtins))
    for node in tree.body:
        allowed.update(_bound_names(node))
    for found in ast.walk(tree):
        if isinstance(found, ast.comprehension):
            allowed.update(n.id for n in ast.walk(found.target) if isinstance(n, ast.Name))
    missing: set[str] = set()

    def check(node: ast.AST, scope: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
            outer: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            outer += [a.annotation for a in every if a.annotation is not None]
            if not isinstance(node, ast.Lambda):
                outer += [*node.decorator_list, *([node.returns] if node.returns else [])]
            for sub in outer:
                check(sub, scope)
            inner = scope | {a.arg for a in every}
            inner |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            inner |= {  # names a function imports for itself (a lazy import)
                (a.asname or a.name).split(".")[0]
                for n in ast.walk(node)
                if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names
            }
            for stmt in node.body if isinstance(node.body, list) else [node.body]:
                check(stmt, inner)
            return
        if isinstance(node, ast.ClassDef):
            for sub in [*node.bases, *node.keywords, *node.decorator_list]:
                check(sub, scope)
            inner = set(scope)
            for stmt in node.body:
                check(stmt, inner)
                inner.update(_bound_names(stmt))
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in scope:
            missing.add(node.id)
        for child in ast.iter_child_nodes(node):
            check(child, scope)

    for node in tree.body:
        check(node, allowed)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                for elt in node.value.elts:
                    if isinstance(elt, ast.Constant) and isinstance(elt.value, str) and elt.value not in allowed:
                        missing.add(elt.value)
    return sorted(missing)


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.AnnAssign):
        return {node.target.id} if isinstance(node.target, ast.Name) else set()
    if isinstance(node, ast.Assign):
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
        # Imports for annotations only (the modules print ``from __future__ import annotations``).
        return {name for stmt in node.body for name in _bound_names(stmt)}
    return set()
