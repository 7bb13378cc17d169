"""Step 3 of the pipeline: turn plans into file contents.

Rendering only prints plans. The msgspec structs of a module are datamodel-code-generator's output,
included verbatim, for the document the plan built (every struct a ``$defs`` entry titled with its final
name, each field its planned type spelled as JSON Schema: ``struct_schema``; Python field names given as
scoped aliases, shared structs as ``customTypePath``). Everything else comes
from the jinja2 templates in ``templates/`` fed with the frozen plan; nothing here decides a name or a type. Schema
text only ever reaches the output as escaped literals: ``pylit`` for values, ``doc`` for docstring
bodies and ``comment`` for comment lines. Each module is compiled and checked for undefined names
before it is returned, so a generator bug is reported (exit 2 naming the file), never written.
"""

from __future__ import annotations

import ast
import builtins
import gzip
import json
import math
import re
import sys
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import jinja2

from .naming import client_aliases, snake
from .plan import ModelPlan, SharedPlan, letters, shape_plan
from .realtime import RealtimePlan
from .runtime_source import runtime_files
from .schema_walk import as_map
from .struct_cache import reusable_code, sha, stamp, with_key
from .structs import StructPlan, shared_optional_keys, twin_with_required
from .tidy import format_modules, tidy_module

__all__ = ["RenderError", "render_package", "struct_code", "undefined_names"]

_HERE = Path(__file__).parent
_TEMPLATES = _HERE / "templates"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["pylit"] = pylit
    env.filters["doc"] = doc_text
    env.filters["comment"] = comment_text
    env.filters["price"] = price_text
    env.filters["all_names"] = all_names
    template_globals = cast("dict[str, Any]", env.globals)
    template_globals["shared_optional_keys"] = shared_optional_keys  # _types.jinja's twins()
    template_globals["twin_with_required"] = twin_with_required  # shape.py.jinja's keyword TypedDicts
    return env


def all_names(names: Iterable[str], width: int = 116) -> str:
    """``__all__`` for ``names``, a few to a line that the formatter keeps (``__all__ += [...]`` after the
    first line, a form mypy and pyright read): a module listing 40 names takes 6 lines, not 42."""
    lines: list[list[str]] = [[]]
    for name in names:
        lead = len("__all__ = [" if len(lines) == 1 else "__all__ += [")
        if lines[-1] and lead + sum(len(n) + 4 for n in [*lines[-1], name]) > width:
            lines.append([])
        lines[-1].append(pylit(name))
    return "\n".join(f"__all__ {'=' if i == 0 else '+='} [{', '.join(items)}]" for i, items in enumerate(lines))


def pylit(value: Any) -> str:
    """A Python literal for plain JSON data; strings become ``repr`` (never raw text), in double quotes
    where that needs no escape (as ruff writes them: the listing's rows are printed unformatted)."""
    if isinstance(value, str):
        text = repr(value)
        return f'"{text[1:-1]}"' if text[0] == "'" and '"' not in value else text
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        items = list(cast("Iterable[Any]", value))
        inner = ", ".join(pylit(v) for v in items)
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    if isinstance(value, Mapping):
        pairs = cast("Iterable[tuple[Any, Any]]", value.items())  # pyright: ignore[reportUnknownMemberType]
        return "{" + ", ".join(f"{pylit(k)}: {pylit(v)}" for k, v in pairs) + "}"
    return repr(str(value))


def doc_text(value: Any, width: int = 96) -> str:
    """Text safe inside a triple-quoted docstring: no backslashes, quotes runs or control characters."""
    text = str(value or "")
    text = text.replace("\\", "/").replace('"""', "'''").replace('"', "'")
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > 600:
        text = text[:597] + "..."
    return text


def price_text(entries: Iterable[Any]) -> str:
    """``[{unit, price, currency}]`` from the catalog as words: ``0.051 USD per M input tokens; ...``."""
    parts: list[str] = []
    for raw in entries:
        entry = as_map(raw) or {}
        amount, currency, unit = entry.get("price"), entry.get("currency"), entry.get("unit")
        if amount is None:
            continue
        parts.append(" ".join(str(x) for x in (amount, currency, unit) if x not in (None, "")))
    return "; ".join(parts)


def comment_text(value: Any) -> str:
    """Text safe on a ``#`` comment line: nothing can end the line or declare a source encoding (PEP 263)."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\x85]", " ", str(value or ""))
    return re.sub(r"coding([:=])", r"coding \1", text)


class _Structs:
    """datamodel-code-generator's Python API, in this process (first call ~0.4 s, then ~15 ms a schema)."""

    def __init__(self) -> None:
        self._ready = False
        self._generate: Any = None
        self._options: dict[str, Any] = {}

    def _load(self) -> None:
        from datamodel_code_generator import generate
        from datamodel_code_generator.enums import DataModelType, InputFileType
        from datamodel_code_generator.format import Formatter, PythonVersion

        self._generate = generate
        self._options = dict(
            input_file_type=InputFileType.JsonSchema,
            output_model_type=DataModelType.MsgspecStruct,
            target_python_version=PythonVersion.PY_310,
            use_annotated=True,
            use_union_operator=True,
            use_standard_collections=True,
            enum_field_as_literal="all",
            use_title_as_name=True,
            strict_nullable=True,  # `nullable: true` on an optional output field -> `T | None = None`
            reuse_model=False,
            keyword_only=True,
            base_class="msgspec.Struct",
            extra_template_data={"#all#": {"base_class_kwargs": {"omit_defaults": True}}},
            use_exact_imports=True,
            use_double_quotes=True,
            disable_timestamp=True,
            use_schema_description=False,
            formatters=[Formatter.BUILTIN],
        )
        self._ready = True

    def code(self, doc: str, aliases: dict[str, str]) -> str:
        if not self._ready:
            self._load()  # importing the generator costs ~0.4 s: only when a module needs it
        limit = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(max(limit, 6000))  # deeply nested schemas recurse deeply in the generator
            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore"
                )  # it warns about every untagged union; our dispatch rules exist for those
                out = self._generate(doc, aliases=aliases or None, **self._options)
        finally:
            sys.setrecursionlimit(limit)
        assert isinstance(out, str)
        return out


def _aliases(structs: Iterable[StructPlan]) -> dict[str, str]:
    return {f"{s.name}.{f.wire}": f.name for s in structs for f in s.fields if f.name != f.wire}


def _generator_key() -> str:
    """What besides the schema shapes datamodel-code-generator's output: its version and our options (this file)."""
    try:
        from importlib.metadata import version

        dcg = version("datamodel-code-generator")
    except Exception:  # pragma: no cover - only without package metadata
        dcg = "?"
    return sha(dcg + Path(__file__).read_text(encoding="utf-8") + (_HERE / "tidy.py").read_text(encoding="utf-8"))


def struct_key(doc: str, structs: tuple[StructPlan, ...], generator: str) -> str:
    """What the struct block of a module is printed from, as a key (see :mod:`.struct_cache`)."""
    return sha(f"{generator}\0{doc}\0{json.dumps(_aliases(structs), sort_keys=True)}")[:24]


def struct_code(
    structs_api: _Structs,
    doc: str,
    structs: tuple[StructPlan, ...],
    where: str,
    old: str | None = None,
    generator: str = "",
) -> tuple[str, str]:
    """The struct block of one module: datamodel-code-generator's code, verbatim.

    Returns the code and its key (see :mod:`.struct_cache`): a module already on disk with the same key,
    unedited, gives its struct classes back without running the generator.
    """
    aliases = _aliases(structs)
    key = struct_key(doc, structs, generator)
    names = {s.name for s in structs} | {a for s in structs for a in s.alias_names}
    code = reusable_code(old, key, names)
    if code is None:
        code = structs_api.code(doc, aliases) if doc else "from __future__ import annotations"
        code = code if code.endswith("\n") else code + "\n"  # verbatim, ending its last line
    return code, key


class RenderError(Exception):
    """A module failed to render or would not import (reported as a bad-input problem naming the file)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


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


def _live_module(
    env: jinja2.Environment,
    api: _Structs,
    live: RealtimePlan,
    index: int,
    old: Mapping[str, str],
    generator: str,
    files: dict[str, str],
    package: str,
) -> None:
    """Print the ``*_live`` module the plan made for a model's ``x-realtime`` section (see :mod:`.realtime`)."""
    rel = live.module.replace(".", "/") + ".py"
    structs, key = struct_code(api, live.struct_doc, live.structs, rel, old.get(rel), generator)
    text = env.get_template("live.py.jinja").render(plan=live, struct_code=structs)
    missing = undefined_names(text, rel)
    if missing:
        raise RenderError(index, f"the generated {rel} would fail on import: {', '.join(missing[:5])} not defined")
    header = with_key(f"# generated by codegen from {comment_text(live.label)} (x-realtime)", key)
    files[rel] = tidy_module(text, rel, package, header)


def _shape_module(
    env: jinja2.Environment,
    api: _Structs,
    plan: ModelPlan,
    index: int,
    old: Mapping[str, str],
    generator: str,
    shapes: dict[str, str],
    files: dict[str, str],
    package: str,
) -> str:
    """Print the shape module of ``plan`` (see :func:`.plan.shape_plan`) unless a model printed it
    before; returns its dotted module. Its name is its task and a hash of its text: models of one shape
    share it, and adding, removing or renaming a model never renames another model's shape."""
    shape = shape_plan(plan, package)
    key = struct_key(shape.struct_doc, shape.structs, "")  # what its structs are printed from (never the generator)
    try:
        text = env.get_template("shape.py.jinja").render(plan=shape, struct_code=f"# structs {key}\n")
    except Exception as exc:
        message = f"rendering the shape module failed ({type(exc).__name__}: {str(exc)[:300]})"
        raise RenderError(index, message) from None
    known = shapes.get(text)
    if known is not None:
        return known
    module = f"models._shapes.{snake(plan.task or 'other')}_{letters(sha(text))}"
    if module in shapes.values():  # pragma: no cover - six letters of two different texts alike
        raise RenderError(index, f"two shape modules would be named {module}")
    shapes[text] = module
    rel = module.replace(".", "/") + ".py"
    try:
        structs, key = struct_code(api, shape.struct_doc, shape.structs, rel, old.get(rel), generator)
    except Exception as exc:  # a struct generator failure names the schema (bad input, exit 2)
        message = f"the struct generator failed on this schema ({type(exc).__name__}: {str(exc)[:300]})"
        raise RenderError(index, message) from None
    text = env.get_template("shape.py.jinja").render(plan=shape, struct_code=structs)
    missing = undefined_names(text, rel)
    if missing:
        names = ", ".join(missing[:5])
        raise RenderError(index, f"the generated {rel} would fail on import: {names} not defined (generator bug)")
    header = with_key(f"# generated by codegen: one {comment_text(plan.task or 'model')} shape", key)
    files[rel] = tidy_module(text, rel, package, header)
    return module


# Names the client modules bind besides the handle classes they import for model()'s overloads.
_CLIENT_NAMES = frozenset(
    {"Any", "Literal", "Mapping", "TYPE_CHECKING", "overload", "Coroutine", "Unpack", "annotations"}
    | {"BaseClient", "AsyncBaseClient", "ModelHandle", "AsyncModelHandle", "WorkersAI", "AsyncWorkersAI"}
    | {"BatchJob", "AsyncBatchJob", "EventStream", "AsyncStreamRequest", "AnyRun", "DecodedRun", "RunOptions"}
)


def render_package(
    plans: list[ModelPlan],
    shared: list[SharedPlan],
    package: str,
    *,
    with_testing: bool = True,
    with_ray: bool = True,
    cached: Mapping[str, str] | None = None,
) -> dict[str, bytes]:
    """All files of the output package, keyed by path relative to the package folder.

    ``with_testing`` adds the emulator (``testing/``) and the schema JSON files it serves
    (``_schemas/``); without it the package holds the runtime and the selected models only. ``cached``
    maps module paths to their text on disk (see :func:`struct_code`).
    """
    env = _env()
    api = _Structs()
    generator = _generator_key()
    old = cached or {}
    files: dict[str, bytes] = {}
    printed: dict[str, str] = {}  # modules printed from templates, tidied; formatted together at the end
    registry: list[tuple[str, str, str]] = []
    seen_ids: set[str] = set()
    live_methods: dict[str, tuple[str, ...]] = {}  # model id -> its realtime method, when it has one
    shapes: dict[str, str] = {}  # shape module text (before the struct block) -> its module
    shape_of: dict[str, str] = {}  # model id -> its shape module
    for i, plan in enumerate(plans):
        rel = plan.module.replace(".", "/") + ".py"
        live = plan.realtime
        if live is not None:
            _live_module(env, api, live, i, old, generator, printed, package)
            live_methods[plan.model_id] = (live.method,)
        shape_module = _shape_module(env, api, plan, i, old, generator, shapes, printed, package)
        shape_of.setdefault(plan.model_id, shape_module)
        try:
            text = env.get_template("model.py.jinja").render(plan=plan, shape=shape_module, realtime=live)
            missing = undefined_names(text, rel)
        except Exception as exc:  # name the schema instead of crashing the whole run
            message = f"rendering the model module failed ({type(exc).__name__}: {str(exc)[:300]})"
            raise RenderError(i, message) from None
        if missing:
            names = ", ".join(missing[:5])
            raise RenderError(i, f"the generated {rel} would fail on import: {names} not defined (generator bug)")
        printed[rel] = tidy_module(text, rel, package, f"# generated by codegen from {comment_text(plan.source.label)}")
        if with_testing:
            schema_rel = "_schemas/" + plan.module.replace(".", "/") + ".json.gz"
            # Compact and gzipped (mtime 0, so the bytes are reproducible): only the emulator reads these,
            # and as indented JSON they were a seventh of the installed package.
            text = json.dumps(plan.source.catalog, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
            files[schema_rel] = gzip.compress((text + "\n").encode(), compresslevel=9, mtime=0)
        if plan.model_id not in seen_ids:
            seen_ids.add(plan.model_id)
            registry.append((plan.model_id, plan.module, plan.handle))
    for sp in shared:
        rel = sp.module.replace(".", "/") + ".py"
        structs, key = struct_code(api, sp.struct_doc, sp.structs, rel, old.get(rel), generator)
        text = env.get_template("shared.py.jinja").render(shared=sp, struct_code=structs)
        missing = undefined_names(text, rel)
        if missing:
            raise RenderError(-1, f"the generated {rel} would fail on import: {', '.join(missing[:5])} not defined")
        printed[rel] = tidy_module(
            text, rel, package, with_key(f"# generated by codegen from the {comment_text(sp.task)} schemas", key)
        )
    # Package __init__ files for every folder under models/.
    modules = [p.module for p in plans] + [s.module for s in shared] + sorted(set(shapes.values()))
    folders = {"models"}
    for module in modules:
        parts = module.split(".")
        for i in range(1, len(parts)):
            folders.add(".".join(parts[:i]))
    for folder in sorted(folders):
        children = sorted({m.split(".")[folder.count(".") + 1] for m in modules if m.startswith(folder + ".")})
        folder_rel = folder.replace(".", "/") + "/__init__.py"
        text = env.get_template("folder_init.py.jinja").render(folder=folder, children=children)
        printed[folder_rel] = tidy_module(text, folder_rel, package, "# generated by codegen")
    by_id = [p for p in plans if (p.model_id, p.module, p.handle) in registry]
    common = dict(package=package, plans=by_id, registry=registry, aliases=client_aliases([p.module for p in by_id]))
    # ``run()`` takes and gives the same types for every model of one shape: one overload per shape.
    by_shape: dict[str, list[str]] = {}
    for p in by_id:
        by_shape.setdefault(shape_of[p.model_id], []).append(p.model_id)
    runs = [("_shape_" + module.rpartition(".")[2], module, ids) for module, ids in sorted(by_shape.items())]
    # model()'s overloads return the handle classes, imported by name; under the module's alias where two
    # models share a name or it is one the clients import besides.
    counts = {h: sum(p.handle == h for p in by_id) for h in {p.handle for p in by_id}}
    aliased = {p.module for p in by_id if counts[p.handle] > 1 or {p.handle, p.async_handle} & _CLIENT_NAMES}
    top = {
        "_registry.py": env.get_template("registry.py.jinja").render(**common),
        "_listing.py": env.get_template("listing.py.jinja").render(live_methods=live_methods, **common),
        "_client.py": env.get_template("client.py.jinja").render(aio=False, runs=runs, aliased=aliased, **common),
        "_aio_client.py": env.get_template("client.py.jinja").render(aio=True, runs=runs, aliased=aliased, **common),
        "__init__.py": env.get_template("package_init.py.jinja").render(**common),
    }
    for rel, text in top.items():
        printed[rel] = tidy_module(text, rel, package, "# generated by codegen")
    # The formatter's last: one ruff run over every printed module, then each struct cache hash.
    files.update({rel: stamp(text).encode() for rel, text in format_modules(printed).items()})
    files["py.typed"] = b""
    files.update(runtime_files(with_testing=with_testing, with_ray=with_ray))
    return files
