"""``python -m codegen.reference --out DIR``: the per-model reference, as Markdown, printed from the plan.

One page per model (``DIR/cf/baai/bge-m3.md``: its task, price as people read it, each method with its
parameters, what it returns, streaming and batches, the runtime's ``run_tools``/``batch_many``/``embed_many``
where the model has them, and the struct types those name) and ``DIR/index.md`` listing them all.
``make docs`` runs it into the site's build folder; the pages are never committed, and nothing here is
part of ``python -m codegen``'s package output. It reads only the plan's public fields.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .load import load_schemas
from .plan import MethodPlan, ModelPlan, SharedPlan, plan_models
from .structs import StructPlan

__all__ = ["main", "reference_pages"]

_TEMPLATES = Path(__file__).parent / "templates" / "reference"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
# Meta(...) keywords that constrain a value (titles and descriptions are prose, not constraints).
_DEFAULT = re.compile(r"\s*\(default [^()]*\)$")  # a default the description repeats
_CONSTRAINTS = ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length", "pattern")


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    required: bool
    default: str | None
    constraint: str
    description: str
    wire: str = ""  # a struct field's JSON key (shown when the Python name differs: ``words_`` for ``words``)


@dataclass(frozen=True)
class Method:
    name: str
    call: str  # how it is called, e.g. ``embed(**params)`` or ``transcribe(audio)``
    returns: str
    params: tuple[Param, ...]
    streams: bool
    batch: bool
    description: str
    guide: tuple[str, str] = ("", "")  # a runtime method's topic page: title, path under docs/


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Param, ...]
    view: str | None  # the task family's view it carries (``docs/families.md``)


def _close(text: str, start: int) -> tuple[int, list[int]]:
    """Index of the bracket closing the one opened just before ``start``, and its top-level commas."""
    depth, i = 1, start
    commas: list[int] = []
    while i < len(text):
        ch = text[i]
        if ch in "'\"":  # a string literal (an enum value) may hold brackets and commas
            literal = _STRING.match(text, i)
            i = literal.end() - 1 if literal else len(text)
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0:
                return i, commas
        elif ch == "," and depth == 1:
            commas.append(i)
        i += 1
    return len(text), commas


def split_annotation(text: str) -> tuple[str, list[str]]:
    """``Annotated[int, Meta(ge=1)] | UnsetType`` -> ``("int", ["ge=1"])``: the type without its metadata
    (and without ``UnsetType``), and the value constraints that metadata states, each prefixed with the type
    it constrains when that is only part of the whole (``str: min_length=1``)."""
    out: list[str] = []
    found: list[str] = []
    i = 0
    while (j := text.find("Annotated[", i)) >= 0:
        out.append(text[i:j])
        start = j + len("Annotated[")
        end, commas = _close(text, start)
        cut = commas[0] if commas else end
        inner, more = split_annotation(text[start:cut])
        out.append(inner)
        meta = ", ".join(_meta(text[cut + 1 : end]))
        found += [f"{inner}: {c}" if ": " not in c else c for c in more]
        if meta:
            found.append(f"{inner}: {meta}")
        i = end + 1
    out.append(text[i:])
    plain = "".join(out).replace(" | UnsetType", "").replace("UnsetType | ", "")
    return plain, [c.removeprefix(f"{plain}: ") for c in found]


def _meta(text: str) -> list[str]:
    at = text.find("Meta(")
    if at < 0:
        return []
    start = at + len("Meta(")
    end, commas = _close(text, start)
    bounds = [start - 1, *commas, end]
    parts = [text[a + 1 : b].strip() for a, b in pairwise(bounds)]
    return [p for p in parts if p.split("=", 1)[0].strip() in _CONSTRAINTS]


def _param(
    name: str, annotation: str, required: bool, default: str | None, description: str, aliases: dict[str, str]
) -> Param:
    plain, found = split_annotation(annotation)
    for alias in _IDENT.findall(plain):  # a named alias keeps its constraints in its own annotation
        if alias in aliases:
            found += [c if ": " in c else f"{alias}: {c}" for c in split_annotation(aliases[alias])[1]]
    if default in ("UNSET", "msgspec.UNSET"):
        default = None
    return Param(name, plain, required, default, "; ".join(dict.fromkeys(found)), _DEFAULT.sub("", description))


def _call(m: MethodPlan) -> str:
    if m.kind == "binary":
        return f"{m.name}({m.data_name})"
    if m.kind == "request":
        return f"{m.name}(request: {m.class_name})"
    if m.kind == "json":
        return f"{m.name}(payload)"
    if m.kind == "requests":
        return f"{m.name}(requests)"
    lead = [p.name for p in m.leading]
    return f"{m.name}({', '.join([*lead, '**params'])})"


def _takes_texts(struct: StructPlan | None) -> bool:
    """A batch request that takes a list of ``text``: what ``embed_many()`` needs (``_batch/embed_plan.py``)."""
    fields = struct.fields if struct is not None else ()
    return any(f.wire == "text" and "list[str]" in split_annotation(f.annotation)[0] for f in fields)


# The methods the runtime's handle bases give a model (``_handles/typed_bases.py``, ``ModelHandle``), as the
# reference shows them: how each is called, what it does, and the topic page that tells the rest.
_RUN_TOOLS = 'run_tools(messages, tools, max_rounds=8, on_tool_error="report", options=None)'
_EMBED_MANY = (
    "embed_many(texts, batch_size=None, options=None, on_progress=None, timeout=3600.0, poll_interval=1.0, "
    "as_numpy=False)"
)
_RUNS_TOOLS = (
    "Calls `{}()` with Python functions as `tools`, runs the calls the model makes and sends their results "
    "back until it answers in text."
)
_MANY = (
    "Any number of requests through the async queue: split under 10 MB, polled, failed items retried; one "
    "item per request, in input order (`journal=PATH` resumes after a crash)."
)
_EMBEDS = (
    "Any number of texts through the async queue, one vector per text in input order; `as_numpy=True` gives "
    "a float32 array."
)


def _runtime_methods(plan: ModelPlan, structs: dict[str, StructPlan]) -> list[Method]:
    """``run_tools()`` over the method that takes ``messages`` and ``tools``, ``batch_many()`` beside
    ``batch()``, and ``embed_many()`` where a batch request takes a list of texts."""
    out: list[Method] = []
    for m in plan.methods:
        if m.runs_tools:
            what, tools = _RUNS_TOOLS.format(m.name), ("Tools", "structured-tools.md#tools")
            out.append(Method("run_tools", _RUN_TOOLS, f"ToolRun[{m.returns}]", (), False, False, what, tools))
        if m.kind != "requests":
            continue
        name, returns = f"{m.name}_many", f"list[BatchItem[{m.returns}]]"
        guide = ("batch_many", "bulk-queue.md#batch_many")
        out.append(Method(name, f"{name}(requests, **options)", returns, (), False, True, _MANY, guide))
        if any(_takes_texts(structs.get(n)) for n in _IDENT.findall(m.batch_item)):
            guide = ("embed_many", "bulk-queue.md#embed_many")
            out.append(Method("embed_many", _EMBED_MANY, "list[list[float]]", (), False, True, _EMBEDS, guide))
    return out


def _model(plan: ModelPlan, shared: dict[str, dict[str, StructPlan]]) -> dict[str, Any]:
    # A struct of the runtime (``share.RUNTIME_STRUCTS``) is in no shared module: it has no page of its own.
    structs = {n: shared[mod][n] for mod, names in plan.shared if mod in shared for n in names if n in shared[mod]}
    structs |= {s.name: s for s in plan.structs}
    aliases = {a.name: a.annotation for a in plan.aliases}
    methods: list[Method] = []
    wanted: list[str] = []
    for m in plan.methods:
        request = structs.get(m.class_name or "")
        by_name = {f.name: f for f in request.fields} if request is not None else {}
        params: tuple[Param, ...] = ()
        for p in m.params:  # the type a caller passes; constraints and default from the request's field
            field = by_name.get(p.field)
            param = _param(p.name, p.typed, p.wire in m.required, p.default, p.description, aliases)
            if field is not None:
                wire = _param(p.name, field.annotation, field.required, field.default, "", aliases)
                param = replace(param, default=wire.default, constraint=wire.constraint)
            params += (param,)
        returns = f"BatchJob[{m.returns}]" if m.kind == "requests" else m.returns
        methods.append(Method(m.name, _call(m), returns, params, m.streams, m.kind == "requests", m.description))
        wanted += _IDENT.findall(returns) + [n for p in params for n in _IDENT.findall(p.type)]
    seen: dict[str, Struct] = {}
    seen_aliases: set[str] = set()
    while wanted:  # every struct a method names, and the structs those name
        name = wanted.pop(0)
        if name in aliases and name not in seen_aliases:  # a list or union alias: the structs it names
            seen_aliases.add(name)
            wanted += _IDENT.findall(aliases[name])
        struct = structs.get(name)
        if struct is None or name in seen:
            continue
        fields = tuple(
            replace(_param(f.name, f.annotation, f.required, f.default, f.description, aliases), wire=f.wire)
            for f in struct.fields
        )
        seen[name] = Struct(name, fields, struct.view)
        wanted += [n for f in fields for n in _IDENT.findall(f.type)]  # a field's type: the structs it names
    methods += _runtime_methods(plan, structs)
    named = [n for s in seen.values() for f in s.fields for n in _IDENT.findall(f.type)]
    named += [n for method in methods for n in _IDENT.findall(method.returns)]
    used_aliases = {n: aliases[n] for n in named if n in aliases}
    return {
        "id": plan.model_id,
        "task": plan.task,
        "description": plan.source.description,
        "module": plan.module,
        "handle": plan.handle,
        "async_handle": plan.async_handle,
        "price": _price(plan.price),
        "methods": methods,
        "streams": [m.name + "_stream" for m in methods if m.streams],
        "realtime": str(plan.source.properties.get("realtime", "")).lower() == "true",
        "batch": [m.name for m in methods if m.batch],
        "structs": sorted(seen.values(), key=lambda s: s.name),
        "aliases": {n: split_annotation(a)[0] for n, a in sorted(used_aliases.items())},
    }


def _price(entries: Iterable[Any]) -> list[str]:
    rows: list[str] = []
    for raw in entries:
        entry = cast("dict[str, object]", raw) if isinstance(raw, dict) else {}
        amount = entry.get("price")
        if isinstance(amount, (int, float)) and not isinstance(amount, bool):
            currency, unit = str(entry.get("currency") or "USD"), str(entry.get("unit") or "")
            rows.append(price_words(float(amount), currency, unit))
    return rows


_SCALES = {"": 1.0, "1,000": 1e3, "million": 1e6}  # how a price may be read: per one, a thousand or a million
_COUNTS = {"M": "million", "1k": "1,000"}  # a catalog unit's own leading count: "per M input tokens"
_SAID = {"inference request": "request"}  # a catalog unit as people say it


def _digits(value: float) -> str:
    """``value`` written out in full (no exponent), to ten decimal places at most."""
    return f"{value:.10f}".rstrip("0").rstrip(".")


def price_words(amount: float, currency: str, unit: str) -> str:
    """A catalog price as people read it: ``2.51e-06`` per inference request is ``$2.51 per million
    requests``, ``0.00011`` per step ``$0.11 per 1,000 steps``; ``0.0052`` per audio minute stays so. The unit
    is read per a thousand or a million of itself until the amount needs at most four decimal places."""
    noun = unit.removeprefix("per ").strip()
    head, _, rest = noun.partition(" ")
    said = _COUNTS.get(head, "") if rest else ""
    if said:
        noun = rest
    noun = _SAID.get(noun, noun)
    one = amount / _SCALES[said]  # per single unit
    for words, scale in _SCALES.items():
        if scale >= _SCALES[said] and (len(_digits(one * scale).partition(".")[2]) <= 4 or words == "million"):
            said = words
            break
    first, comma, tail = noun.partition(",")
    if said and not first.endswith("s"):
        noun = f"{first}s{comma}{tail}"  # "inference request" -> "inference requests"
    text = _digits(one * _SCALES[said])
    if len(text.partition(".")[2]) == 1:
        text += "0"  # $5.20, not $5.2
    money = f"${text}" if currency == "USD" else f"{text} {currency}"
    per = " ".join(w for w in (said, noun) if w)
    return f"{money} per {per}" if per else money


def page_path(model_id: str) -> str:
    """``@cf/baai/bge-m3`` -> ``cf/baai/bge-m3.md``."""
    return model_id.removeprefix("@") + ".md"


def _md(value: object) -> str:
    """Prose safe in Markdown: no raw HTML, one line."""
    return " ".join(str(value or "").replace("&", "&amp;").replace("<", "&lt;").split())


def reference_pages(plans: Sequence[ModelPlan], shared: Sequence[SharedPlan]) -> dict[str, str]:
    """Relative path -> Markdown: ``index.md`` and one page per model."""
    env = Environment(
        loader=FileSystemLoader(_TEMPLATES),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["md"] = _md
    shared_structs = {sp.module: {s.name: s for s in sp.structs} for sp in shared}
    models = [_model(p, shared_structs) for p in sorted(plans, key=lambda p: (p.task, p.model_id))]
    pages: dict[str, str] = {}
    for model in models:
        path = page_path(model["id"])
        up = "../" * path.count("/")
        # The site keeps the reference in reference/ beside docs/: the topic pages are one level further up.
        pages[path] = env.get_template("model.md.jinja").render(
            m=model,
            index=f"{up}index.md",
            realtime=f"{up}../docs/realtime.md",
            families=f"{up}../docs/families.md",
            docs=f"{up}../docs/",
        )
    pages["index.md"] = env.get_template("index.md.jinja").render(models=models, page_path=page_path)
    return pages


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.reference", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--schemas", type=Path, default=Path("schemas"), help="folder of model schema files")
    parser.add_argument("--out", type=Path, required=True, help="folder that receives the Markdown pages")
    args = parser.parse_args(argv)
    loaded = load_schemas(args.schemas)
    if loaded.problems or not loaded.models:
        for problem in loaded.problems:
            print(problem, file=sys.stderr)
        print(f"codegen.reference: no models loaded from {args.schemas}", file=sys.stderr)
        return 2
    plans, shared = plan_models(loaded.models, [])
    pages = reference_pages(plans, shared)
    for rel, text in pages.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"codegen.reference: {len(pages) - 1} model pages and an index -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
