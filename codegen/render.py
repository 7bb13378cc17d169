"""Step 3 of the pipeline: turn plans into file contents.

Structs come from datamodel-code-generator (its Python API, one process for every schema); everything
else comes from the jinja2 templates in ``templates/``. Schema text only ever reaches the output as
escaped literals: ``pylit`` for values and ``doc`` for docstring bodies.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import json
import math
import multiprocessing
import os
import re
import sys
import tokenize
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, cast

import jinja2

from .load import as_obj
from .plan import RESERVED_NAMES, ModelPlan, Param

__all__ = ["RenderError", "fingerprint", "render_package", "struct_codes"]

_HERE = Path(__file__).parent
_TEMPLATES = _HERE / "templates"
RUNTIME = _HERE / "runtime"
_BASE_PLACEHOLDER = "workers_ai_runtime_base"
_RECURSION_LIMIT = 6000


def fingerprint() -> str:
    """Hash of everything besides the schema that shapes a model module."""
    h = hashlib.sha256()
    sources = [_TEMPLATES / "model.py.jinja", RUNTIME / "_handle.py"]
    sources += [_HERE / f for f in ("load.py", "plan.py", "render.py")]
    for path in sorted(sources):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    try:
        from importlib.metadata import version

        h.update(version("datamodel-code-generator").encode())
    except Exception:  # pragma: no cover - only without package metadata
        pass
    return h.hexdigest()[:16]


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
    return env


def pylit(value: Any) -> str:
    """A Python literal for plain JSON data; strings become ``repr`` (never raw text)."""
    if isinstance(value, str):
        return repr(value)
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
        entry = as_obj(raw) or {}
        amount, currency, unit = entry.get("price"), entry.get("currency"), entry.get("unit")
        if amount is None:
            continue
        parts.append(" ".join(str(x) for x in (amount, currency, unit) if x not in (None, "")))
    return "; ".join(parts)


def comment_text(value: Any) -> str:
    """Text safe on a ``#`` comment line: nothing can end the line or declare a source encoding (PEP 263)."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\x85]", " ", str(value or ""))
    return re.sub(r"coding([:=])", r"coding \1", text)


# ----------------------------------------------------------------------------- structs


class _Structs:
    """Runs datamodel-code-generator in this process (first call ~0.4 s, then ~15 ms a schema)."""

    def __init__(self) -> None:
        from datamodel_code_generator import generate
        from datamodel_code_generator.enums import DataModelType, InputFileType
        from datamodel_code_generator.format import Formatter, PythonVersion

        self._generate = generate
        self._options: dict[str, Any] = dict(
            input_file_type=InputFileType.JsonSchema,
            output_model_type=DataModelType.MsgspecStruct,
            target_python_version=PythonVersion.PY_310,
            use_annotated=True,
            use_union_operator=True,
            use_standard_collections=True,
            enum_field_as_literal="all",
            reuse_model=True,
            collapse_reuse_models=True,
            keyword_only=True,
            base_class=f"{_BASE_PLACEHOLDER}.Struct",
            use_exact_imports=True,
            use_double_quotes=True,
            disable_timestamp=True,
            use_schema_description=False,
            formatters=[Formatter.BUILTIN],
            class_name="ModelSchemaRoot",
        )

    def code(self, doc: dict[str, Any]) -> str:
        limit = sys.getrecursionlimit()
        try:
            # Deeply nested schemas recurse deeply in the generator; give it room.
            sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
            with warnings.catch_warnings():
                # It warns about every untagged union; our dispatch rules exist for exactly those.
                warnings.simplefilter("ignore")
                out = self._generate(json.dumps(doc, sort_keys=False), **self._options)
        finally:
            sys.setrecursionlimit(limit)
        assert isinstance(out, str)
        return out


class RenderError(Exception):
    """The struct generator failed on one model's schema (reported as a bad-input problem)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def _code_or_error(structs: _Structs, doc: dict[str, Any]) -> str | RenderError:
    try:
        return structs.code(doc)
    except Exception as exc:  # a generator bug must name the schema, not crash the whole run
        return RenderError(-1, f"the struct generator failed on this schema ({type(exc).__name__}: {str(exc)[:300]})")


TEMPLATE_NAMES = RESERVED_NAMES | {"__all__"}
FIELD_ALIAS = "_msgspec_field"


def _sanitise_structs(code: str, reserved: set[str]) -> tuple[str, bool]:
    """Make generated struct code safe next to the template's names, and clean under mypy.

    Two things the generator leaves behind are fixed here, from the syntax tree and tokens (never by
    text search, so strings stay untouched): a struct named like something the template binds
    (``ModelHandle``, the handle class, ...) is renamed, and a field whose name shadows a type its
    class uses (properties ``Usage`` and ``usage`` in one object) gets a Python name with a trailing
    underscore, its wire name kept with ``field(name=...)``. Returns the code and whether it now
    needs ``msgspec.field`` imported as ``FIELD_ALIAS``.
    """
    tree = ast.parse(code)
    defined: set[str] = set()
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    renames: dict[str, str] = {}
    for name in sorted(defined & reserved):
        new, i = f"{name}Model", 2
        while new in defined or new in bound or new in reserved or new in renames.values():
            new, i = f"{name}Model{i}", i + 1
        renames[name] = new
    if renames:
        code = _rename_names(code, renames)
        tree = ast.parse(code)
    field_name = next(
        (
            a.asname or a.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module == "msgspec"
            for a in node.names
            if a.name == "field"
        ),
        None,
    )
    needs_alias = False
    starts = _line_starts(code)
    edits: list[tuple[int, int, str]] = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        fields = [st for st in cls.body if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)]
        names = {st.target.id for st in fields if isinstance(st.target, ast.Name)}
        used: set[str] = set()
        for st in fields:
            for part in (st.annotation, st.value):
                if part is not None:
                    used.update(n.id for n in ast.walk(part) if isinstance(n, ast.Name))
        for st in fields:
            target = st.target
            assert isinstance(target, ast.Name)
            if target.id not in used:
                continue
            new = target.id + "_"
            while new in names or new in used:
                new += "_"
            names.add(new)
            fn = field_name or FIELD_ALIAS
            needs_alias = needs_alias or field_name is None
            wire = repr(target.id)
            t0 = _offset(code, starts, target.lineno, target.col_offset)
            t1 = _offset(code, starts, target.end_lineno or target.lineno, target.end_col_offset or 0)
            value = st.value
            if value is None:
                end = _offset(code, starts, st.end_lineno or st.lineno, st.end_col_offset or 0)
                edits.append((end, end, f" = {fn}(name={wire})"))
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == field_name:
                if not any(k.arg == "name" for k in value.keywords):
                    at = (
                        _offset(code, starts, value.func.end_lineno or value.lineno, value.func.end_col_offset or 0) + 1
                    )
                    edits.append((at, at, f"name={wire}, "))
            else:
                v0 = _offset(code, starts, value.lineno, value.col_offset)
                v1 = _offset(code, starts, value.end_lineno or value.lineno, value.end_col_offset or 0)
                edits.append((v0, v1, f"{fn}(name={wire}, default={code[v0:v1]})"))
            edits.append((t0, t1, new))
    for start, end, text in sorted(edits, reverse=True):
        code = code[:start] + text + code[end:]
    return code, needs_alias


def _line_starts(code: str) -> list[int]:
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _offset(code: str, starts: list[int], lineno: int, byte_col: int) -> int:
    """Character offset in ``code`` of an AST position (AST columns count UTF-8 bytes)."""
    line = code[starts[lineno - 1] : starts[lineno]]
    return starts[lineno - 1] + len(line.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))


def _rename_names(code: str, renames: Mapping[str, str]) -> str:
    """Rename references to top-level names; attributes, keyword arguments and fields are left alone."""
    toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    starts = _line_starts(code)
    edits: list[tuple[int, int, str]] = []
    depth = 0
    significant = [t for t in toks if t.type not in (tokenize.NL, tokenize.COMMENT)]
    for i, tok in enumerate(significant):
        if tok.type == tokenize.OP:
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
        if tok.type != tokenize.NAME or tok.string not in renames:
            continue
        prev = significant[i - 1] if i else None
        nxt = significant[i + 1] if i + 1 < len(significant) else None
        if prev is not None and prev.string == ".":
            continue
        if depth > 0 and nxt is not None and nxt.string == "=":
            continue
        if depth == 0 and tok.start[1] > 0 and nxt is not None and nxt.string == ":":
            continue  # a field of a class body
        row, col = tok.start
        at = starts[row - 1] + col
        edits.append((at, at + len(tok.string), renames[tok.string]))
    for start, end, text in sorted(edits, reverse=True):
        code = code[:start] + text + code[end:]
    return code


_worker_structs: list[_Structs] = []  # one per worker process, made on its first document


def _code_in_worker(doc: dict[str, Any]) -> str | RenderError:
    if not _worker_structs:
        _worker_structs.append(_Structs())
    return _code_or_error(_worker_structs[0], doc)


def _jobs(count: int) -> int:
    """Worker processes for ``count`` struct modules: ``CODEGEN_JOBS`` (default 1, all in-process).

    Measured on the 2-core reference machine, the whole catalog took 6.6-7.2 s in one process and
    7.3-8.5 s with two spawned workers (each pays about a second to start and import the generator),
    so workers are opt-in for machines with more cores to spare.
    """
    raw = os.environ.get("CODEGEN_JOBS", "").strip()
    jobs = int(raw) if raw.isdigit() else 1
    return max(1, min(jobs, count))


def struct_codes(docs: Sequence[dict[str, Any]]) -> list[str]:
    """datamodel-code-generator's output for each document, in order (worker processes when it pays).

    Each document is generated independently, so the result does not depend on how the work is
    split: the output stays byte-identical whatever the number of workers.
    """
    jobs = _jobs(len(docs))
    results: list[str | RenderError]
    if jobs <= 1:
        structs = _Structs() if docs else None
        results = [_code_or_error(structs, doc) for doc in docs] if structs else []
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            results = list(pool.map(_code_in_worker, docs, chunksize=2))
    codes: list[str] = []
    for i, result in enumerate(results):
        if isinstance(result, RenderError):
            raise RenderError(i, result.message)
        codes.append(result)
    return codes


def _split_structs(code: str) -> tuple[dict[str, set[str]], str, dict[str, ast.ClassDef]]:
    """Split generated struct code into (imports, body without the root alias, class nodes)."""
    tree = ast.parse(code)
    imports: dict[str, set[str]] = {}
    body_lines: list[str] = []
    lines = code.splitlines()
    classes: dict[str, ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "__future__":
                continue
            imports.setdefault(node.module, set()).update(
                a.name if not a.asname else f"{a.name} as {a.asname}" for a in node.names
            )
            continue
        if isinstance(node, ast.Import):
            continue
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "ModelSchemaRoot"
        ):
            continue
        if isinstance(node, ast.ClassDef):
            classes[node.name] = node
        start = node.lineno - 1
        if getattr(node, "decorator_list", None):
            start = min(d.lineno for d in node.decorator_list) - 1  # type: ignore[attr-defined]
        end = node.end_lineno or node.lineno
        body_lines.append("\n".join(lines[start:end]))
    return imports, "\n\n\n".join(body_lines), classes


class _StripAnnotated(ast.NodeTransformer):
    """``Annotated[X, Meta(...)]`` -> ``X``: constraints are checked when the request is validated."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "Annotated" and isinstance(node.slice, ast.Tuple):
            inner: ast.AST = self.visit(node.slice.elts[0])
            return inner
        self.generic_visit(node)
        return node


def _params(cls: ast.ClassDef, descriptions: Mapping[str, str]) -> list[Param]:
    """Keyword parameters mirroring a struct's fields (python name, plain annotation, wire name)."""
    params: list[Param] = []
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        name = stmt.target.id
        annotation = ast.unparse(_StripAnnotated().visit(ast.parse(ast.unparse(stmt.annotation), mode="eval")))
        wire = name
        default: str | None
        value = stmt.value
        if value is None:
            default = None
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "field":
            kw = {k.arg: k.value for k in value.keywords if k.arg}
            name_node = kw.get("name")
            if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
                wire = name_node.value
            default = "UNSET" if ("default" in kw or "default_factory" in kw) else None
        else:
            default = "UNSET"
        if default == "UNSET" and "UnsetType" not in annotation:
            annotation = f"{annotation} | UnsetType"
        params.append(Param(name, annotation, default, wire, descriptions.get(wire, "")))
    return params


def _list_item(annotation: str) -> str:
    """The item type of the first ``list[...]`` inside an annotation (``Any`` when there is none)."""
    try:
        tree = ast.parse(annotation, mode="eval")
    except SyntaxError:
        return "Any"
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "list":
            return ast.get_source_segment(annotation, node.slice) or "Any"
    return "Any"


# ----------------------------------------------------------------------------- imports


def _relative(module_depth: int, target: str) -> str:
    return "." * (module_depth + 1) + target


def _merge_imports(*groups: Mapping[str, Iterable[str]]) -> list[str]:
    merged: dict[str, set[str]] = {}
    for group in groups:
        for mod, names in group.items():
            merged.setdefault(mod, set()).update(names)
    plain = sorted(merged.pop("", set()))  # ``import msgspec``
    std = sorted((m, n) for m, n in merged.items() if not m.startswith(".") and m not in ("msgspec",))
    third = sorted((m, n) for m, n in merged.items() if m == "msgspec")
    local = sorted(((m, n) for m, n in merged.items() if m.startswith(".")), key=lambda x: (-x[0].count("."), x[0]))
    lines: list[str] = []
    for block in (std, third, local):
        if block is third and plain:
            if lines:
                lines.append("")
            lines.extend(f"import {name}" for name in plain)
            if not block:
                continue
        elif not block:
            continue
        elif lines and not (block is third and plain):
            lines.append("")
        for mod, names in block:
            lines.append(f"from {mod} import {', '.join(sorted(names, key=lambda s: (not s.isupper(), s)))}")
    return lines


# ----------------------------------------------------------------------------- package


def render_model(plan: ModelPlan, code: str, env: jinja2.Environment, source_label: str) -> str:
    """One model module, from its plan and the struct code datamodel-code-generator wrote for it."""
    code, field_alias = _sanitise_structs(
        code, set(TEMPLATE_NAMES) | {plan.handle, plan.input_alias, plan.output_alias}
    )
    imports, body, classes = _split_structs(code)
    if field_alias:
        imports.setdefault("msgspec", set()).add(f"field as {FIELD_ALIAS}")
    depth = plan.module.count(".") + 1  # models.cf.baai.bge_m3 sits 4 levels below the package
    if _BASE_PLACEHOLDER in imports:
        imports[_relative(depth - 1, "_base")] = imports.pop(_BASE_PLACEHOLDER)
    reserved = {"self", "cls", "data", "headers"}
    for var in plan.inputs:
        if var.class_name and var.class_name in classes:
            variant_schema = as_obj((as_obj(plan.doc.get("$defs")) or {}).get(var.class_name))
            props = as_obj(variant_schema.get("properties")) if variant_schema else None
            descriptions: dict[str, str] = {}
            for k, v in (props or {}).items():
                sub = as_obj(v)
                if sub is not None:
                    descriptions[k] = str(sub.get("description") or "")
            params = _params(classes[var.class_name], descriptions)
            if var.streams:
                # The two methods pass `stream` themselves (False / True); it is never a parameter.
                stream = next((p for p in params if p.wire == "stream"), None)
                var.stream_required = stream is not None and stream.default is None
                params = [p for p in params if p is not stream]
            names = {p.name for p in params}
            # The method body binds `_request`/`_result` and calls `_as_bytes`...; the struct classes
            # are called by name: a parameter with any of those names would shadow them.
            if names & reserved or names & set(classes) or any(n.startswith("_") for n in names):
                var.kwargs = False
            else:
                for p in params:
                    p.binary = var.binary_fields.get(p.name)
                var.params = params
                if var.kind == "requests":
                    var.batch_item = _list_item(next((p.annotation for p in params if p.name == "requests"), ""))
    for out in plan.outputs:
        out.alias = bool(out.class_name) and out.class_name not in classes
    for var in plan.inputs:
        if var.kind == "object" and var.class_name and var.class_name not in classes:
            var.kind = "json"
        target = var.output
        if target is not None and target.class_name:
            var.expect = f"_{target.class_name}_TYPE" if target.alias else target.class_name
            var.typed_result = not target.alias
        else:
            var.expect, var.typed_result = "None", False
    need: dict[str, set[str]] = {
        "typing": {"ClassVar", "TypeAlias", "Any"},
        _relative(depth - 1, "_handle"): {"ModelHandle", "ModelInfo", "OutputDecoder"},
    }
    if any(v.kind == "requests" for v in plan.inputs):
        need.setdefault("collections.abc", set()).add("Sequence")
        need[_relative(depth - 1, "_batch")] = {"BatchJob", "BatchRequest"}
    if plan.streamable:
        need[_relative(depth - 1, "_stream")] = {"EventStream"}
    if any(v.kind == "json" for v in plan.inputs):
        need.setdefault("", set()).add("msgspec")
    if any(v.kind == "binary" for v in plan.inputs) or any(p.binary for v in plan.inputs for p in v.params):
        need[_relative(depth - 1, "_binary")] = {"BinaryInput"}
        for v in plan.inputs:
            for p in v.params:
                if p.binary:
                    helper = {"bytes": "as_bytes", "base64": "as_base64", "uint8": "as_uint8"}[p.binary]
                    need[_relative(depth - 1, "_binary")].add(f"{helper} as _{helper}")
    if plan.binary_outputs:
        need.setdefault(_relative(depth - 1, "_binary"), set()).add("BinaryOutput")
    if any(p.default == "UNSET" for v in plan.inputs for p in v.params):
        need.setdefault("msgspec", set()).update({"UNSET", "UnsetType"})
    import_lines = _merge_imports(imports, need)
    exported = [v.class_name for v in plan.inputs if v.class_name]
    exported += [o.class_name for o in plan.json_outputs if o.class_name]
    exported += list(classes)  # every struct a caller may build (Message, Tool, ...), in source order
    exported = [n for n in dict.fromkeys(exported) if n not in (plan.handle, plan.input_alias, plan.output_alias)]
    template = env.get_template("model.py.jinja")
    return template.render(
        plan=plan,
        source_label=source_label,
        import_lines=import_lines,
        structs=body,
        fingerprint=plan.fingerprint,
        exported=exported,
    )


def _seal(text: str, key: str) -> str:
    """Put a hash of the module's text on its fingerprint line (line 2), after the cache key."""
    head, line, rest = text.split("\n", 2)
    assert line == f"# fingerprint: {key}", line
    return f"{head}\n# fingerprint: {key} {_body_hash(head, rest)}\n{rest}"


def _body_hash(head: str, rest: str) -> str:
    return hashlib.sha256(f"{head}\n{rest}".encode()).hexdigest()[:16]


def _reusable(old: str, key: str) -> bool:
    """Whether a module on disk is exactly what rendering with ``key`` wrote (not edited since)."""
    parts = old.split("\n", 2)
    return len(parts) == 3 and parts[1] == f"# fingerprint: {key} {_body_hash(parts[0], parts[2])}"


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
    return set()


def render_package(
    plans: list[ModelPlan],
    package: str,
    cached: Mapping[str, str],
) -> dict[str, bytes]:
    """All files of the output package, keyed by path relative to the package folder.

    ``cached`` maps a module's relative path to its current text; a module whose header carries this
    run's cache key (schema digest, generator fingerprint, module path, source label) and the hash of
    its own text is reused as it is. ``--check`` passes no cache at all.
    """
    env = _env()
    files: dict[str, bytes] = {}
    fp = fingerprint()
    registry: list[tuple[str, str, str]] = []
    seen_ids: set[str] = set()
    reused: dict[int, str] = {}
    for i, plan in enumerate(plans):
        # Everything the module text depends on: the schema bytes, the generator, where it lands and
        # the source label printed in its header.
        key = f"{plan.source.digest}\0{fp}\0{plan.module}\0{plan.source.label}"
        plan.fingerprint = hashlib.sha256(key.encode()).hexdigest()[:24]
        old = cached.get(plan.module.replace(".", "/") + ".py")
        if old is not None and _reusable(old, plan.fingerprint):
            reused[i] = old
    todo = [i for i in range(len(plans)) if i not in reused]
    try:
        codes = dict(zip(todo, struct_codes([plans[i].doc for i in todo]), strict=True))
    except RenderError as exc:
        raise RenderError(todo[exc.index], exc.message) from None
    for i, plan in enumerate(plans):
        rel = plan.module.replace(".", "/") + ".py"
        if i in reused:
            text = reused[i]
            _restore_plan_from_cache(plan)
        else:
            try:
                text = _seal(render_model(plan, codes[i], env, plan.source.label), plan.fingerprint)
                missing = undefined_names(text, rel)
            except Exception as exc:  # name the schema instead of crashing the whole run
                message = f"rendering the model module failed ({type(exc).__name__}: {str(exc)[:300]})"
                raise RenderError(i, message) from None
            if missing:
                names = ", ".join(missing[:5])
                raise RenderError(i, f"the generated {rel} would fail on import: {names} not defined (generator bug)")
        files[rel] = text.encode()
        schema_rel = "_schemas/" + plan.module.replace(".", "/") + ".json"
        files[schema_rel] = (
            json.dumps(plan.source.catalog, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        ).encode()
        if plan.model_id not in seen_ids:
            seen_ids.add(plan.model_id)
            registry.append((plan.model_id, plan.module, plan.handle))
    # Package __init__ files for every folder under models/.
    folders = {"models"}
    for plan in plans:
        parts = plan.module.split(".")
        for i in range(1, len(parts)):
            folders.add(".".join(parts[:i]))
    for folder in sorted(folders):
        children = sorted(
            {p.module.split(".")[folder.count(".") + 1] for p in plans if p.module.startswith(folder + ".")}
        )
        files[folder.replace(".", "/") + "/__init__.py"] = (
            env.get_template("folder_init.py.jinja").render(folder=folder, children=children).encode()
        )
    by_id = [p for p in plans if (p.model_id, p.module, p.handle) in registry]
    common = dict(package=package, plans=by_id, registry=registry)
    files["_registry.py"] = env.get_template("registry.py.jinja").render(**common).encode()
    files["_client.py"] = env.get_template("client.py.jinja").render(**common).encode()
    files["__init__.py"] = env.get_template("package_init.py.jinja").render(**common).encode()
    files["py.typed"] = b""
    for path in sorted(RUNTIME.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed", ".json"):
            files[path.relative_to(RUNTIME).as_posix()] = path.read_bytes()
    return files


def _restore_plan_from_cache(plan: ModelPlan) -> None:
    """Cached modules skip struct generation; the package-level templates only need the plan."""
    for var in plan.inputs:
        var.params = []
