"""Step 2 of the pipeline: decide everything about each generated module.

A :class:`ModelPlan` is the complete, immutable description of one model module: its path, handle and
alias names, every struct (final name, fields with annotation text and defaults), TypedDict twins,
aliases, methods with their parameters and return types, output variants and dispatch rules, the
imports, and what it takes from a shared module. ``render`` only prints plans through templates.

The work is split by job: ``naming`` (module paths, handle and method names), ``reshape`` (schema
normalisation msgspec can decode), ``variants`` (alternatives, method names, pairing, dispatch rules)
and ``structs`` (named types and annotations). This module ties them together and decides which
structs several models of one task share (``models/_shared/<task>.py``).
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, is_dataclass, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from .arguments import family_argument
from .load import ModelSource
from .naming import (
    RESERVED_METHODS,
    RESERVED_NAMES,
    assign_modules,
    clean_title,
    handle_name,
    pascal,
    snake,
    title_words,
)
from .plan_base import PlanError, merge_imports
from .realtime import RealtimePlan, plan_realtime
from .reshape import canonical, reshape
from .schema_walk import as_list, as_map
from .struct_schema import struct_document
from .structs import AliasPlan, FieldPlan, NamingError, StructPlan, build_types, names_in, with_none
from .variants import (
    JSON_TYPES,
    STREAM_TYPE,
    InputDraft,
    OutputDraft,
    binary_kind,
    branches,
    dispatch_rules,
    drop_unused,
    inline_ref,
    is_binary,
    json_type,
    method_name,
    pair,
    tool_form,
    variant_schemas,
)

__all__ = [
    "ALWAYS_RETURNED",
    "SHAPE_NAMES",
    "RESERVED_METHODS",
    "RESERVED_NAMES",
    "MethodPlan",
    "ModelPlan",
    "OutputPlan",
    "ParamPlan",
    "PlanError",
    "SharedPlan",
    "always_returned",
    "output_rule",
    "fingerprint",
    "letters",
    "plan_models",
    "shape_plan",
    "variant_schemas",
]

_HERE = Path(__file__).parent

# The fallback rule for output schemas that do not say which keys are always returned (no `required`
# list on the output object): per task, these top-level keys are required when the object declares them.
# Schema files that state `required` themselves are taken as they are.
ALWAYS_RETURNED: dict[str, tuple[str, ...]] = {
    "text generation": ("response", "choices"),
    "text embeddings": ("shape", "data", "response", "response[].id", "response[].score"),
    "text classification": ("[].label", "[].score"),
    "image classification": ("[].label", "[].score"),
    "automatic speech recognition": ("text",),
    "translation": ("translated_text",),
    "summarization": ("summary",),
    "text-to-image": ("image",),
    "text-to-speech": ("audio",),
    "image-to-text": ("description",),
}


def output_rule(task: str, branch: dict[str, Any]) -> tuple[str, ...]:
    """The keys ``ALWAYS_RETURNED`` makes required for one output alternative (an async reply: its id)."""
    if sorted(as_map(branch.get("properties")) or {}) == ["request_id"]:
        return ("request_id",)
    return ALWAYS_RETURNED.get(task.lower(), ())


def always_returned(node: dict[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """``node`` with ``required`` set from ``paths`` where the schema states none (see ``ALWAYS_RETURNED``).

    A path is a key (``response``), the items of an array key (``response[].id``) or the items of the
    node itself when it is an array (``[].label``); only keys the object declares are made required.
    """
    if not paths:
        return node
    own = [p for p in paths if "[]" not in p]
    nested: dict[str, list[str]] = {}
    for p in paths:
        if "[]." in p:
            head, _, rest = p.partition("[].")
            nested.setdefault(head, []).append(rest)
    out = dict(node)
    props = as_map(out.get("properties"))
    if props is not None:
        if "required" not in out:
            always = [k for k in own if k in props]
            if always:
                out["required"] = always
        new_props = dict(props)
        for key, tails in nested.items():
            sub = as_map(props.get(key))
            items = as_map(sub.get("items")) if sub is not None else None
            if sub is not None and items is not None:
                new_props[key] = {**sub, "items": always_returned(items, tuple(tails))}
        out["properties"] = new_props
    items = as_map(out.get("items"))
    if items is not None and "" in nested:
        out["items"] = always_returned(items, tuple(nested[""]))
    return out


# Names the method body binds or calls: a parameter with one of them would shadow it.
_BODY_NAMES = frozenset({"self", "cls", "data", "headers", "cast"})


@dataclass(frozen=True)
class ParamPlan:
    name: str  # the keyword argument: the wire name when it is a plain identifier
    field: str  # the struct attribute it fills
    wire: str
    annotation: str
    default: str | None
    description: str
    binary: str | None  # "bytes" | "base64" | "uint8": accepts raw bytes, a path or a file too
    loose: bool  # the parameter accepts more than the struct field declares (dicts, sequences)
    # "field": passed to the struct as is; "response_format": also a type to parse the reply into
    # (JSON mode; left out of *_stream methods); "tools": also functions/Struct types/dicts, sent in tool_form
    kind: str = "field"

    @property
    def typed(self) -> str:
        """The annotation of this key in the method's ``Params`` TypedDict: left out, nothing is sent, so
        ``UnsetType`` is not needed; binary fields also take bytes, a path or a binary file."""
        annotation = self.annotation.removesuffix(" | UnsetType")
        return f"BinaryInput | {annotation}" if self.binary else annotation


@dataclass(frozen=True)
class OutputPlan:
    index: int
    class_name: str | None  # None for binary/stream variants
    kind: str  # "json", "binary", "stream"
    content_type: str
    json_type: str | None
    is_async: bool
    alias: bool  # a type alias (list, union...), handed to the runtime as ``_<name>_TYPE``


@dataclass(frozen=True)
class MethodPlan:
    index: int
    name: str
    kind: str  # "object" (keyword params), "request" (one struct), "json", "binary", "requests"
    class_name: str | None
    required: tuple[str, ...]
    description: str
    params: tuple[ParamPlan, ...]
    streams: bool
    stream_required: bool
    batch_item: str
    returns: str
    returns_doc: str
    expect: str
    typed_result: bool
    positional: int = 0  # how many leading parameters are also positional (a family's first argument)
    data_name: str = "data"  # the raw body parameter's name (``audio`` on speech recognition)
    media_bytes: bool = False  # raw media or base64 media JSON on the wire: the JSON is turned into bytes
    tool_form: str | None = None  # how `tools` go out: "flat" ({name, parameters}) or "openai" ({type, function})
    runs_tools: bool = False  # the handle's `run_tools()` drives this method (it takes `messages` and `tools`)
    params_name: str = ""  # the TypedDict of its keyword arguments (``ChatParams``), for ``**params: Unpack[...]``
    params_own: bool = True  # printed for this method (False: it is the request struct's TypedDict twin)
    # a batch method: (what one request may be, what its result decodes into) per variant the batch takes
    batch_variants: tuple[tuple[str, str, bool], ...] = ()  # (..., whether it overlaps a later one)

    @property
    def binaries(self) -> dict[str, str]:
        return {p.name: p.binary for p in self.params if p.binary}

    @property
    def op_name(self) -> str:
        """The module constant holding this method's recipe (``_CHAT``: see ``_handles.ops.Op``)."""
        return f"_{self.name.upper()}"

    @property
    def leading(self) -> tuple[ParamPlan, ...]:
        """Parameters written out in the signature: the family's first argument (also positional)."""
        return self.params[: self.positional]

    @property
    def keywords(self) -> tuple[ParamPlan, ...]:
        """The keys of :attr:`params_name`: every parameter but the leading ones and ``response_format``
        (JSON mode's overloads write that one out)."""
        return tuple(p for p in self.params[self.positional :] if p.kind != "response_format")

    @property
    def response_format(self) -> ParamPlan | None:
        return next((p for p in self.params if p.kind == "response_format"), None)

    @property
    def renames(self) -> dict[str, str]:
        return {p.name: p.field for p in self.params if p.name != p.field}

    @property
    def structured(self) -> bool:
        """Takes ``response_format=`` (JSON mode): the call method gets overloads returning ``Parsed``."""
        return any(p.kind == "response_format" for p in self.params)

    @property
    def messages_param(self) -> ParamPlan | None:
        return next((p for p in self.params if p.name == "messages"), None)

    @property
    def runtime_batch(self) -> bool:
        """``batch()``/``batch_many()`` of one request variant: the runtime's ``BatchHandle`` writes them (a
        batch of several variants keeps its overloads, which type a job by what was sent)."""
        return self.kind == "requests" and self.name == "batch" and len(self.batch_variants) <= 1


@dataclass(frozen=True)
class ModelPlan:
    source: ModelSource
    model_id: str
    module: str  # dotted, relative to the package, e.g. "models.cf.baai.bge_m3"
    handle: str
    input_alias: str
    output_alias: str
    input_members: tuple[str, ...]
    output_members: tuple[str, ...]
    structs: tuple[StructPlan, ...]  # declared in this module
    aliases: tuple[AliasPlan, ...]
    shared: tuple[tuple[str, tuple[str, ...]], ...]  # (shared module, names) imported from it
    methods: tuple[MethodPlan, ...]
    outputs: tuple[OutputPlan, ...]
    input_types: tuple[tuple[str, tuple[str, ...]], ...]
    batch_input: str | None
    rules: tuple[tuple[Any, ...], ...]
    streamable: bool
    raw_body: str | None  # input field sent as the raw request body (``x-raw-body``; the rest as query)
    form_body: str | None  # input struct sent as a multipart/form-data body (a branch with that contentType)
    price: tuple[Any, ...]
    imports: tuple[str, ...]
    exported: tuple[str, ...]
    fingerprint: str
    struct_doc: str  # what datamodel-code-generator prints the structs from (shared ones imported)
    realtime: RealtimePlan | None = None  # its ``*_live`` module, when its file has an ``x-realtime`` section

    @property
    def info_properties(self) -> dict[str, Any]:
        """The catalog's properties as ``INFO`` prints them: less ``price`` when ``INFO.price`` holds it
        (``ModelInfo`` puts it back, so ``INFO.properties["price"]`` reads as before)."""
        props = self.source.properties
        return {k: v for k, v in props.items() if k != "price"} if self.price else dict(props)

    @property
    def alias_key(self) -> str:
        """A stable identifier for this model in ``_client.py`` (segments never hold ``__``)."""
        return self.module.removeprefix("models.").replace(".", "__")

    @property
    def json_outputs(self) -> tuple[OutputPlan, ...]:
        return tuple(o for o in self.outputs if o.kind == "json")

    @property
    def common_params(self) -> tuple[ParamPlan, ...]:
        """Optional keyword arguments every method with its own ``Params`` TypedDict takes alike (name, type
        and description): printed once as ``_CommonParams``, a base of each (a chat model's ``generate``
        and ``chat`` differ only in ``prompt`` and ``messages``)."""
        own = [m for m in self.methods if m.params_name and m.params_own]
        if len(own) < 2:
            return ()

        def same(p: ParamPlan, q: ParamPlan) -> bool:
            return (p.name, p.typed, p.description) == (q.name, q.typed, q.description) and q.default is not None

        shared = [
            p
            for p in own[0].keywords
            if p.default is not None and all(any(same(p, q) for q in m.keywords) for m in own[1:])
        ]
        return tuple(shared) if len(shared) >= 4 else ()

    @property
    def decoder_variants(self) -> list[str]:
        """What the output decoder is given per JSON output: the struct, or ``_<alias>_TYPE`` for an alias."""
        return [f"_{o.class_name}_TYPE" if o.alias else str(o.class_name) for o in self.json_outputs]

    def wire_type(self, name: str) -> str:
        """What the runtime decodes the alias ``name`` from (a family list view decodes from its plain list)."""
        return next((a.wire for a in self.aliases if a.name == name and a.wire), name)

    @property
    def binary_outputs(self) -> tuple[OutputPlan, ...]:
        return tuple(o for o in self.outputs if o.kind == "binary")

    @property
    def inputs(self) -> tuple[MethodPlan, ...]:
        return self.methods

    @property
    def task(self) -> str:
        return self.source.task

    @property
    def async_handle(self) -> str:
        """The async twin of :attr:`handle` (same methods, awaited), printed in the same module."""
        return f"Async{self.handle}"

    @property
    def type_only_imports(self) -> tuple[str, ...]:
        """Imports only annotations need (under ``TYPE_CHECKING``: never loaded at run time): ``Unpack``, the
        batch and stream types (they load with the first batch or stream, not with the model module) and
        the tool and JSON-mode result types."""
        up = "." * (self.module.count(".") + 1)
        lines: list[str] = []
        own_batch = any(m.kind == "requests" and not m.runtime_batch for m in self.methods)
        if own_batch or any(m.params_name for m in self.methods):
            lines.append("from typing_extensions import Unpack")
        if own_batch:
            lines.append(f"from {up}_batch.jobs import AsyncBatchJob, BatchItem, BatchJob, BatchRequest")
            lines.append(f"from {up}_batch.many import BatchManyOptions")
        if any(m.streams for m in self.methods):
            lines.append(f"from {up}_aio.stream import AsyncStreamRequest")
            lines.append(f"from {up}_sync.stream import EventStream")
        if any(m.structured for m in self.methods):
            lines.append(f"from {up}_tools.structured import Parsed")
        if any(m.tool_form for m in self.methods):
            lines.append(f"from {up}_tools.tooldefs import ToolLike")
        return tuple(lines)

    @property
    def batch_types(self) -> tuple[str, str] | None:
        """``(request, reply)`` of a batch the runtime's methods serve (:attr:`MethodPlan.runtime_batch`): the
        handles' base is then ``BatchHandle[..., request, reply]``."""
        return next(((m.batch_item, m.returns) for m in self.methods if m.runtime_batch), None)

    @property
    def handle_bases(self) -> list[tuple[str, str]]:
        """The sync handle's bases and their type arguments (the async one's are ``Async`` + each name):
        ``ToolsHandle``/``BatchHandle`` where the runtime writes ``run_tools()`` or the batch methods."""
        io = f"{self.input_alias}, {self.output_alias}"
        bases = [("ToolsHandle", f"{io}, {self.tool_loop[0]}, {self.tool_loop[1]}")] if self.tool_loop else []
        if self.batch_types:
            bases.append(("BatchHandle", f"{io}, {self.batch_types[0]}, {self.batch_types[1]}"))
        return bases or [("ModelHandle", io)]

    @property
    def tool_loop(self) -> tuple[str, str, str] | None:
        """``(message type, reply type, Op)`` of the method ``run_tools()`` loops over: the handles' base is
        then ``ToolsHandle[..., message, reply]`` with ``tools=<Op>``, whose ``run_tools()`` is the runtime's."""
        for m in self.methods:
            if m.runs_tools:
                typed = m.messages_param.typed if m.messages_param else ""
                if not (typed.startswith("Sequence[") and typed.endswith("]")):
                    raise PlanError(self.source.file, f"run_tools() needs a list of messages, not {typed!r}")
                return typed[len("Sequence[") : -1], m.returns, m.op_name
        return None

    @property
    def field_kinds(self) -> tuple[tuple[str, str], ...]:
        """``(wire name, kind)`` of every top-level input field over all variants, for the command line:
        kind is ``bytes``/``base64``/``uint8`` for binary fields, ``int``/``float``/``bool``/``str`` for
        scalars and ``json`` for anything else (or fields whose variants disagree)."""
        kinds: dict[str, str] = {}
        for method in self.methods:
            for prm in method.params:
                kind = prm.binary or _scalar_kind(prm.annotation)
                kinds[prm.wire] = kind if kinds.get(prm.wire, kind) == kind else "json"
        return tuple(sorted(kinds.items()))

    @property
    def binary_body(self) -> bool:
        """Whether one input variant is the raw bytes of the request body (audio, an image)."""
        return any(m.kind == "binary" for m in self.methods)

    @property
    def method_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for m in self.methods:
            names.append(m.name)
            if m.streams:
                names.append(f"{m.name}_stream")
            if m.runs_tools:
                names.append("run_tools")
            if m.kind == "requests":
                names.append(f"{m.name}_many")
        return tuple(names)


@dataclass(frozen=True)
class SharedPlan:
    module: str  # e.g. "models._shared.text_generation"
    task: str
    structs: tuple[StructPlan, ...]
    imports: tuple[str, ...]
    exported: tuple[str, ...]
    struct_doc: str  # what datamodel-code-generator prints the structs from


def fingerprint() -> str:
    """Hash of the generator itself (its code and templates): part of each module's header."""
    h = hashlib.sha256()
    steps = ("load", "naming", "reshape", "variants", "structs", "plan_base", "realtime", "plan", "render")
    pipeline = [_HERE / f"{name}.py" for name in steps]
    for path in sorted([*pipeline, *(_HERE / "templates").glob("*.jinja")]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def plan_models(
    sources: Iterable[ModelSource], warnings: list[str], package: str = "workers_ai"
) -> tuple[list[ModelPlan], list[SharedPlan]]:
    """Plans for every model (sorted by id) and the shared modules they import from.

    Raises :class:`PlanError` for a schema that cannot be planned.
    """
    ordered = sorted(sources, key=lambda s: (s.model_id, s.rel))
    modules = assign_modules(ordered, warnings)
    gen = fingerprint()
    drafts = [_plan_one(src, modules[id(src)], warnings, gen, package) for src in ordered]
    taken = {p.module for p in drafts}
    for p in drafts:
        if p.realtime is not None and p.realtime.module in taken:
            raise PlanError(p.source.file, f"{p.realtime.module} would be written twice (a model has that module name)")
    return _share(drafts, package)


# ----------------------------------------------------------------------------- one model


def _plan_one(src: ModelSource, module: str, warnings: list[str], gen: str, package: str) -> ModelPlan:
    try:
        plan = _plan_model(src, module, warnings, gen)
        return replace(plan, realtime=plan_realtime(src, module + "_live", plan.handle, package))
    except NamingError as exc:
        raise PlanError(src.file, str(exc)) from None


RAW_BODY_KEY = "x-raw-body"


def raw_body_field(inp: dict[str, Any]) -> str | None:
    """The input field the REST API takes as the raw request body, when the schema states one
    (``"x-raw-body": "audio"`` at the input's root, naming a ``format: binary`` property; set by an
    override, since the published schemas describe the Workers binding's form instead)."""
    name = inp.get(RAW_BODY_KEY)
    prop = as_map((as_map(inp.get("properties")) or {}).get(name)) if isinstance(name, str) else None
    if prop is None or prop.get("format") != "binary":
        return None
    return str(name)


FORM_TYPE = "multipart/form-data"


def form_body_class(branches: Sequence[dict[str, Any]], inputs: Sequence[InputDraft]) -> str | None:
    """The struct of the input branch the REST API takes as a ``multipart/form-data`` body (an object
    branch whose ``contentType`` says so: FLUX.2, by override), each field a form part."""
    for branch, draft in zip(branches, inputs, strict=True):
        if str(branch.get("contentType") or "").startswith(FORM_TYPE) and draft.class_name:
            return draft.class_name
    return None


def _plan_model(src: ModelSource, module: str, warnings: list[str], gen: str) -> ModelPlan:
    mid = src.model_id
    task = src.task.lower()
    defs: dict[str, Any] = dict(src.definitions)
    handle = handle_name(mid)
    used_names: set[str] = set(defs) | set(RESERVED_NAMES)
    if handle in used_names:
        handle = f"{handle}Model"
    used_names.add(handle)
    input_alias, output_alias = f"{handle}Input", f"{handle}Output"
    used_names |= {input_alias, output_alias}

    def unique(candidates: list[str]) -> str:
        for name in candidates:
            if name and name not in used_names and f"{name}Dict" not in used_names:
                used_names.update({name, f"{name}Dict"})
                return name
        raise NamingError(f"two different variants would both be named {candidates[0]!r}")

    # Outputs first, so input methods can be paired with them.
    inlined: set[str] = set()
    output_root = inline_ref(src.output, defs, inlined)
    root_ct = str(output_root.get("contentType") or JSON_TYPES)
    outputs: list[OutputDraft] = []
    seen_outputs: set[str] = set()
    for i, raw_branch in enumerate(branches(output_root)):
        branch = inline_ref(raw_branch, defs, inlined)
        ct = str(branch.get("contentType") or root_ct)
        title = str(branch.get("title") or "")
        if is_binary(branch) or (ct != JSON_TYPES and branch.get("type") == "string"):
            kind = "stream" if ct == STREAM_TYPE else "binary"
            outputs.append(OutputDraft(i, None, kind, ct if ct != JSON_TYPES else "application/octet-stream", None))
            continue
        keys = sorted(as_map(branch.get("properties")) or {})
        is_async = keys == ["request_id"]
        base = "AsyncResponse" if is_async else (clean_title(title, mid) if title else "")
        if not base or base == "Model":
            base = pascal("_".join(keys[:2])) if keys and len(outputs) else pascal(src.task) if src.task else ""
        body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
        body = always_returned(body, output_rule(task, branch))
        canon = canonical(body)
        if canon in seen_outputs:
            continue  # two identical alternatives are one answer
        seen_outputs.add(canon)
        stem = base if is_async else f"{base}Output" if base else "Output"
        name = unique([stem, f"{pascal('_'.join(keys))}Output" if keys else "", f"{stem}Alternative"])
        defs[name] = body
        outputs.append(OutputDraft(i, name, "json", JSON_TYPES, json_type(branch), title_words(title, mid), is_async))

    inputs: list[InputDraft] = []
    taken_methods: set[str] = set()
    openai_output = any(
        "choices" in (as_map(inline_ref(b, defs, set()).get("properties")) or {}) for b in branches(output_root)
    )
    input_root = inline_ref(src.input, defs, inlined)
    input_branches = [inline_ref(b, defs, inlined) for b in branches(input_root)]
    classes: dict[str, str] = {canonical(defs[o.class_name]): o.class_name for o in outputs if o.class_name}
    streamable = any(o.kind == "stream" for o in outputs)
    for i, branch in enumerate(input_branches):
        title = str(branch.get("title") or "")
        desc = str(branch.get("description") or input_root.get("description") or "")
        props = as_map(branch.get("properties")) or {}
        required = [r for r in as_list(branch.get("required")) or [] if isinstance(r, str)]
        keys = sorted(props)
        class_name: str | None
        if is_binary(branch):
            kind, class_name = "binary", None
        else:
            kind = "requests" if "requests" in required or keys == ["requests"] else "object"
            base = clean_title(title, mid) if title else ""
            if not base or base == "Model":
                base = pascal("_".join(required[:2] or keys[:1] or ["body"]))
            body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
            if body:  # an empty input schema stays "any JSON"
                body.setdefault("type", "object")
            canon = canonical(body)
            if canon in classes:
                class_name = classes[canon]  # identical alternatives share one type
            else:
                class_name = classes[canon] = unique(
                    [f"{base}Input", f"{pascal('_'.join(required or keys))}Input", f"{base}AlternativeInput"]
                )
                defs[class_name] = body
        streams = streamable and "stream" in props
        method = method_name(kind, required, task, title, taken_methods, streams, keys)
        taken_methods.add(method)
        if streams:
            taken_methods.add(f"{method}_stream")
        binary_fields = {name: b for name, sub in props.items() if (b := binary_kind(sub))}
        tools_form = tool_form(props.get("tools"), defs, openai_output) if "tools" in props else None
        inputs.append(
            InputDraft(
                i,
                class_name,
                method,
                kind,
                required,
                desc,
                title_words(title, mid),
                streams=streams,
                binary_fields=binary_fields,
                tool_form=tools_form,
            )
        )

    drop_unused(defs, inlined)
    pair(inputs, outputs)
    variant_names = [v.class_name for v in inputs if v.class_name] + [o.class_name for o in outputs if o.class_name]
    doc = reshape(defs, variant_names, warnings, src.file)
    shaped: dict[str, Any] = as_map(doc["$defs"]) or {}
    rules = dispatch_rules(outputs, shaped)
    input_names = [v.class_name for v in inputs if v.class_name]
    types = build_types(shaped, list(dict.fromkeys(variant_names)), input_names, used_names, src.task)
    structs = {s.name: s for s in types.structs}

    out_plans = tuple(
        OutputPlan(
            o.index,
            o.class_name,
            o.kind,
            o.content_type,
            o.json_type,
            o.is_async,
            bool(o.class_name) and types.roots.get(o.class_name or "") == "alias",
        )
        for o in outputs
    )
    by_index = {o.index: o for o in out_plans}
    methods = _tool_runner(
        tuple(
            _family_arguments(
                src.task, _method(v, structs, types.roots, types.loose_roots, by_index, out_plans, output_alias)
            )
            for v in inputs
        )
    )
    if websocket_only(src):
        methods = ()  # REST does not serve it: a method would send what the API never answers
    taken = {*structs, *(st.twin for st in types.structs if st.twin), *(a.name for a in types.aliases)}
    methods = _batch_variants(_params_names(methods, taken, structs), types.loose_roots)
    json_members: list[str] = [o.class_name for o in out_plans if o.kind == "json" and o.class_name]
    if any(o.kind == "binary" for o in out_plans):
        json_members.append("BinaryOutput")
    in_list: list[str] = list(dict.fromkeys(v.class_name for v in inputs if v.class_name))
    if any(v.kind == "binary" for v in inputs):
        in_list.append("BinaryInput")
    out_members, in_members = tuple(json_members), tuple(in_list)
    input_types = tuple((m.class_name, m.required) for m in methods if m.class_name and m.kind in ("object", "request"))
    batch_input = next((m.class_name for m in methods if m.kind == "requests" and m.class_name), None)
    price = tuple(as_list(src.properties.get("price")) or [])
    digest = hashlib.sha256(f"{src.digest}\0{gen}\0{module}\0{src.label}".encode()).hexdigest()[:24]
    plan = ModelPlan(
        source=src,
        model_id=mid,
        module=module,
        handle=handle,
        input_alias=input_alias,
        output_alias=output_alias,
        input_members=in_members,
        output_members=out_members,
        structs=types.structs,
        aliases=types.aliases,
        shared=(),
        methods=methods,
        outputs=out_plans,
        input_types=input_types,
        batch_input=batch_input,
        rules=tuple(rules),
        streamable=streamable,
        raw_body=raw_body_field(src.input),
        form_body=form_body_class(input_branches, inputs),
        price=price,
        imports=(),
        exported=(),
        fingerprint=digest,
        struct_doc="",
    )
    return plan


def _media_as_bytes(outputs: tuple[OutputPlan, ...], structs: dict[str, StructPlan]) -> bool:
    """A model answering either raw media or base64 media JSON: its JSON answer is handed back as bytes
    (``families.media.as_binary`` at run time), so its methods return ``BinaryOutput`` alone."""
    jsons = [o for o in outputs if o.kind == "json"]
    return (
        any(o.kind == "binary" for o in outputs)
        and bool(jsons)
        and all(o.class_name and getattr(structs.get(o.class_name), "view", None) == "MediaView" for o in jsons)
    )


def _method(
    v: InputDraft,
    structs: dict[str, StructPlan],
    roots: dict[str, str],
    loose_roots: dict[str, str],
    by_index: dict[int, OutputPlan],
    outputs: tuple[OutputPlan, ...],
    output_alias: str,
) -> MethodPlan:
    target = by_index.get(v.output.index) if v.output is not None else None
    returns = (target.class_name or "BinaryOutput") if target is not None else output_alias
    media_bytes = target is None and _media_as_bytes(outputs, structs)
    if media_bytes:
        returns = "BinaryOutput"  # melotts: bytes or base64 JSON on the wire, bytes to the caller (one type)
    if target is not None and target.class_name:
        expect = f"_{target.class_name}_TYPE" if target.alias else target.class_name
        typed = not target.alias
    else:
        expect, typed = "None", False
    kind = v.kind
    struct = structs.get(v.class_name or "")
    if kind in ("object", "requests") and struct is None:
        kind = "json"
    params: list[ParamPlan] = []
    stream_required = False
    batch_item = "Any"
    if struct is not None and kind in ("object", "requests"):
        fields = list(struct.fields)
        if v.streams:
            stream = next((f for f in fields if f.wire == "stream"), None)
            stream_required = stream is not None and stream.required
            fields = [f for f in fields if f is not stream]
        candidates = [_param(f, v.binary_fields.get(f.wire)) for f in fields]
        names = [p.name for p in candidates]
        clash = set(names) & (_BODY_NAMES | set(structs))
        if clash or len(set(names)) != len(names) or any(n.startswith("_") for n in names):
            kind = "request"  # keyword parameters would shadow names the method body uses
        else:
            params = [_with_kind(p, v.tool_form) for p in candidates]
        if v.kind == "requests":
            kind = "requests"
            req = next((f for f in struct.fields if f.wire == "requests"), None)
            batch_item = _item_of(req.loose) if req is not None else "Any"
    sync = [o.class_name for o in outputs if o.kind == "json" and not o.is_async and o.class_name]
    if kind == "requests":
        returns = " | ".join(sync) if sync and not any(o.kind == "binary" for o in outputs) else output_alias
    return MethodPlan(
        index=v.index,
        name=v.method,
        kind=kind,
        class_name=v.class_name,
        required=tuple(v.required),
        description=v.description,
        params=tuple(params),
        streams=v.streams and kind == "object",
        stream_required=stream_required,
        batch_item=batch_item,
        returns=returns,
        returns_doc=(target.class_name or "BinaryOutput") if target is not None else "",
        expect=expect,
        typed_result=typed,
        tool_form=v.tool_form if any(p.kind == "tools" for p in params) else None,
        media_bytes=media_bytes,
    )


def _family_arguments(task: str, m: MethodPlan) -> MethodPlan:
    """``m`` with its family's shared argument (``codegen.arguments``) under the family's name, first."""
    rule = family_argument(task, m.name)
    if rule is None:
        return m
    if m.kind == "binary":
        return replace(m, data_name=rule.name) if "data" in rule.wires else m
    if m.kind != "object":
        return m
    at = next((i for i, p in enumerate(m.params) if p.wire in rule.wires and p.name in (p.wire, rule.name)), None)
    if at is None or any(p.name == rule.name for i, p in enumerate(m.params) if i != at):
        return m
    param = replace(m.params[at], name=rule.name)
    if not (rule.positional and param.default is None):
        return replace(m, params=tuple(param if i == at else p for i, p in enumerate(m.params)))
    rest = [p for i, p in enumerate(m.params) if i != at]
    return replace(m, params=(param, *rest), positional=1)


def _with_kind(p: ParamPlan, tools_form: str | None) -> ParamPlan:
    """Mark the parameters the runtime widens: ``response_format`` (a type to parse into) and ``tools``
    (functions, Struct types and dicts, sent in the model's form)."""
    if p.wire == "response_format":
        return replace(p, kind="response_format", loose=True)
    if p.wire == "tools" and tools_form is not None and p.annotation.startswith("Sequence["):
        depth, end = 0, -1
        for i, ch in enumerate(p.annotation):
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if ch == "]" and depth == 0:
                end = i
                break
        annotation = f"{p.annotation[:end]} | ToolLike{p.annotation[end:]}"
        return replace(p, kind="tools", loose=True, annotation=annotation)
    return p


def websocket_only(src: ModelSource) -> bool:
    """The model is served only over WebSocket (its ``x-realtime`` section says ``"rest": false``): its
    published REST schema describes the session's options and events, so its handle gets no REST
    methods, only the session method ``codegen.realtime`` adds."""
    section = as_map(src.catalog.get("x-realtime"))
    return section is not None and section.get("rest") is False


def _params_names(
    methods: tuple[MethodPlan, ...], taken: set[str], structs: dict[str, StructPlan]
) -> tuple[MethodPlan, ...]:
    """Name each keyword method's ``Params`` TypedDict: its request struct's TypedDict twin when the
    method takes exactly the twin's keys and types (``embed(**EmbeddingInputDict)``), else one of its
    own named after the method (``chat`` -> ``ChatParams``), clear of every type the module declares."""
    out: list[MethodPlan] = []
    for m in methods:
        if m.kind != "object":
            out.append(m)
            continue
        struct = structs.get(m.class_name or "")
        if struct is not None and struct.twin and struct.twin_classy and _same_keys(m, struct):
            out.append(replace(m, params_name=struct.twin, params_own=False))
            continue
        name = f"{pascal(m.name)}Params"
        while name in taken:
            name = f"{name}_"
        taken.add(name)
        out.append(replace(m, params_name=name))
    return tuple(out)


def _same_keys(m: MethodPlan, struct: StructPlan) -> bool:
    mine = {(p.name, p.typed, p.default is None) for p in m.keywords}
    twin = {(f.wire, f.loose, f.required) for f in struct.fields if not (m.streams and f.wire == "stream")}
    return mine == twin


def _batch_variants(methods: tuple[MethodPlan, ...], loose: dict[str, str]) -> tuple[MethodPlan, ...]:
    """Give the batch method one typed form per request variant it takes (``[EmbeddingInput, ...]`` ->
    ``BatchJob[EmbeddingOutput]``), so a job is typed by what was sent."""
    out: list[MethodPlan] = []
    for m in methods:
        if m.kind == "requests":
            members = names_in(m.batch_item)
            taken = [
                v for v in methods if v is not m and v.class_name in members and v.kind in ("object", "request", "json")
            ]
            # The most required keys first, as the runtime matches a dict; a dict of one such variant also
            # fits a later one whose required keys it has (``{query, contexts}`` has ``contexts``): those
            # overloads overlap, and the earlier one is the one meant.
            taken.sort(key=lambda v: -len(v.required))
            pairs = tuple(
                (loose.get(v.class_name or "", v.class_name or ""), v.returns, _overlaps(v, taken[i + 1 :]))
                for i, v in enumerate(taken)
            )
            if len({out for _, out, _ in pairs}) > 1:  # one output for every variant needs no overloads
                m = replace(m, batch_variants=pairs)
        out.append(m)
    return tuple(out)


def _overlaps(v: MethodPlan, later: list[MethodPlan]) -> bool:
    return any(set(w.required) <= set(v.required) for w in later)


def _tool_runner(methods: tuple[MethodPlan, ...]) -> tuple[MethodPlan, ...]:
    """The first method taking ``messages`` and ``tools`` drives ``run_tools()`` (when no method has that name)."""
    if any(m.name == "run_tools" or f"{m.name}_stream" == "run_tools" for m in methods):
        return methods
    for i, m in enumerate(methods):
        if m.kind == "object" and m.tool_form and m.messages_param is not None:
            return (*methods[:i], replace(m, runs_tools=True), *methods[i + 1 :])
    return methods


def _param(f: FieldPlan, binary: str | None) -> ParamPlan:
    """A keyword parameter for one field; leaving it out sends nothing (the field's UNSET or None)."""
    base = f.plain if binary else f.loose  # binary helpers take the field's own type besides bytes
    description = f.description
    if f.required:
        annotation, default = base, None
    elif f.none_default and f.default is not None and not f.factory:
        annotation, default = base, f.default
    elif f.none_default:
        annotation, default = _or_none(base), "None"
    else:
        # Left out, nothing is sent and the server applies its own default (which the docstring gives):
        # passing the default's value would send it, since msgspec omits a default only by identity.
        annotation, default = f"{base} | UnsetType", "msgspec.UNSET"  # a Final name: never re-imported
        if f.default is not None:
            description = f"{description} (default {f.default})".strip()
    loose = base != f.plain
    plain_wire = f.wire.isidentifier() and not keyword.iskeyword(f.wire) and not keyword.issoftkeyword(f.wire)
    name = f.wire if plain_wire and not f.wire.startswith("_") else f.name
    return ParamPlan(name, f.name, f.wire, annotation, default, description, binary, loose)


def _or_none(annotation: str) -> str:
    return with_none(annotation)


def _item_of(annotation: str) -> str:
    """``Sequence[X]`` -> ``X`` (the batch item type)."""
    if annotation.startswith("Sequence[") and annotation.endswith("]"):
        return annotation[len("Sequence[") : -1]
    return "Any"


# ----------------------------------------------------------------------------- sharing and imports


def _share(plans: list[ModelPlan], package: str) -> tuple[list[ModelPlan], list[SharedPlan]]:
    """Move structs that two or more models of one task declare identically into shared modules.

    Identity is the struct's whole text and that of every struct it uses (``StructPlan.key``). Shapes go
    to ``models/_shared/<task>.py`` in content order (name, then key); a shape whose name is already taken
    there goes to the next module where it is free, and a module opened for it is named after it and its
    key (``text_generation_messages_input_kdoahm``), never by a counter, so that models sharing a whole
    schema (several OpenAI-compatible chat models) share all of it. Placement never looks at how many
    models declare a shape: a new model that only repeats shared shapes (or only has shapes of its own)
    moves nothing, and its neighbours' modules stay byte for byte. A struct is shared only when everything
    it uses is shared. Model modules import the shared names and re-export them, so
    ``from <model module> import Message`` works whether it is shared or not.
    """
    by_task: dict[str, list[ModelPlan]] = {}
    for p in plans:
        by_task.setdefault(snake(p.task or "other"), []).append(p)
    runtime = {id(st) for p in plans for st in p.structs if _is_runtime_struct(st)}
    final: dict[str, ModelPlan] = {}
    shared_plans: list[SharedPlan] = []
    for task, group in sorted(by_task.items()):
        counts: dict[tuple[str, str], int] = {}
        specimen: dict[tuple[str, str], StructPlan] = {}
        dep_keys: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for p in group:
            own = {st.name: st.key for st in p.structs}
            for st in p.structs:
                if id(st) in runtime:
                    continue
                counts[(st.name, st.key)] = counts.get((st.name, st.key), 0) + 1
                specimen.setdefault((st.name, st.key), st)
                dep_keys[(st.name, st.key)] = {(d, own.get(d, "")) for d in st.deps if d != st.name}
        where, openers = _slots({k for k, n in counts.items() if n >= 2}, dep_keys)
        modules = [f"models._shared.{task}"] + [
            f"models._shared.{task}_{snake(re.sub(r'(?<=[a-z0-9])(?=[A-Z])', '_', name))}_{letters(key)}"
            for name, key in openers[1:]
        ]
        if len(set(modules)) != len(modules):
            raise PlanError("", f"two shared {task} modules would have one name: {sorted(modules)}")
        used: dict[int, dict[str, StructPlan]] = {}
        for p in group:
            mine: dict[int, list[StructPlan]] = {}
            for st in p.structs:
                slot = where.get((st.name, st.key))
                if slot is not None:
                    mine.setdefault(slot, []).append(st)
                    used.setdefault(slot, {})[st.name] = st
            from_runtime = tuple(st.name for st in p.structs if id(st) in runtime)
            if mine or from_runtime:
                shared = tuple(
                    (modules[i], tuple(sorted({n for st in sts for n in (st.name, *([st.twin] if st.twin else []))})))
                    for i, sts in sorted(mine.items())
                ) + (((RUNTIME_STRUCTS, from_runtime),) if from_runtime else ())
                taken = {id(st) for sts in mine.values() for st in sts} | runtime
                local = tuple(st for st in p.structs if id(st) not in taken)
                final[p.model_id + "\0" + p.module] = _finish(replace(p, structs=local, shared=shared), package)
            else:
                final[p.model_id + "\0" + p.module] = _finish(p, package)
        for i, structs in sorted(used.items()):
            ordered = tuple(st for _, st in sorted(structs.items()))
            outside: dict[str, set[str]] = {}
            for st in ordered:
                for d in dep_keys[(st.name, st.key)]:
                    if where[d] != i:
                        twin = specimen[d].twin
                        outside.setdefault(modules[where[d]], set()).update([d[0], *([twin] if twin else [])])
            shared_plans.append(_finish_shared(modules[i], task, ordered, package, outside))
    return [final[p.model_id + "\0" + p.module] for p in plans], shared_plans


# The reply to a queued request, ``{"request_id": str}``, is one struct of the runtime (``_core.decode``), not
# a shared module's: a shape imports it from a module its handles load anyway, never a shared module whose
# other structs it does not use.
RUNTIME_STRUCTS = "_core.decode"


def _is_runtime_struct(st: StructPlan) -> bool:
    return (
        st.name == "AsyncResponse"
        and not st.twin
        and not st.view
        and [(f.name, f.wire, f.declared) for f in st.fields] == [("request_id", "request_id", "str")]
    )


def _slots(
    candidates: set[tuple[str, str]], dep_keys: dict[tuple[str, str], set[tuple[str, str]]]
) -> tuple[dict[tuple[str, str], int], list[tuple[str, str]]]:
    """Which shared module each shareable ``(name, key)`` goes to, and the shape that opened each module.

    In content order, each goes to the first module where its name is free, at or after the modules of
    the structs it uses (imported from there, so those names must be free too). Nothing here depends on
    how many models declare a shape, so a model that adds no new shared shape moves nothing.
    """
    where: dict[tuple[str, str], int] = {}
    openers: list[tuple[str, str]] = []
    declared: list[set[str]] = []
    imported: list[dict[str, str]] = []
    pending = sorted(candidates)
    progress = True
    while pending and progress:
        progress = False
        for k in list(pending):
            deps = dep_keys[k]
            if not deps <= candidates:
                pending.remove(k)  # it uses a struct no other model declares alike: stays in its module
                progress = True
                continue
            if not all(d in where for d in deps):
                continue  # placed once its dependencies are (a cycle is never placed: it stays local)
            pending.remove(k)
            progress = True
            # Shared modules import only from modules placed before them, so never in a circle.
            for slot in range(max((where[d] for d in deps), default=0), len(declared) + 1):
                if slot == len(declared):
                    declared.append(set())
                    imported.append({})
                    openers.append(k)
                outside = [d for d in deps if where[d] != slot]
                if k[0] in declared[slot] or k[0] in imported[slot]:
                    continue
                if any(d[0] in declared[slot] or imported[slot].get(d[0], d[1]) != d[1] for d in outside):
                    continue
                declared[slot].add(k[0])
                imported[slot].update(outside)
                where[k] = slot
                break
    return where, openers


def letters(key: str) -> str:
    """Six letters from a struct's content key (hex digits 0-f as a-p): a module name part that reads as
    no number, so it is never taken for a counter."""
    return "".join(chr(ord("a") + int(c, 16)) for c in key[:6])


def _names_in(texts: Iterable[str]) -> set[str]:
    return {n for t in texts for n in names_in(t)}


def _struct_texts(structs: Iterable[StructPlan]) -> list[str]:
    """What the template prints about structs: their TypedDict twins."""
    return [f.loose for s in structs if s.twin for f in s.fields]


def _typing_imports(texts: list[str], structs: Iterable[StructPlan]) -> dict[str, set[str]]:
    used = _names_in(texts)
    need: dict[str, set[str]] = {}
    typing_names = {"Any", "Literal", "Annotated"} & used
    if any(s.twin for s in structs):
        typing_names.add("TypedDict")
    if typing_names:
        need.setdefault("typing", set()).update(typing_names)
    abc = {"Sequence", "Mapping"} & used
    if abc:
        need.setdefault("collections.abc", set()).update(abc)
    ms = {"Meta", "field", "UnsetType"} & used
    if ms:
        need.setdefault("msgspec", set()).update(ms)
    if "msgspec" in used:
        need.setdefault("", set()).add("msgspec")
    return need


def _relative(depth: int, target: str) -> str:
    return "." * depth + target


def _finish(p: ModelPlan, package: str) -> ModelPlan:
    """Fill in the imports and ``__all__`` of a model module from everything else in its plan."""
    depth = p.module.count(".") + 1  # models.cf.baai.bge_m3 sits 4 levels below the package
    texts = _struct_texts(p.structs) + [a.annotation for a in p.aliases]
    for m in p.methods:
        # What the module prints: a method's own Params keys, its leading and JSON-mode parameters.
        printed = m.params if m.params_own else [*m.leading, *([m.response_format] if m.response_format else [])]
        printed = [] if m.runtime_batch else printed  # its base names only the request and reply types
        texts += [prm.typed for prm in printed] + [m.returns, m.batch_item]
        texts += [p.tool_loop[0]] if m.runs_tools and p.tool_loop else []
        texts += [text for item, out, _ in m.batch_variants for text in (item, out)]
    need = _typing_imports(texts, p.structs)
    need.setdefault("typing", set()).update({"TypeAlias", "Any"})
    if p.type_only_imports:
        need["typing"].add("TYPE_CHECKING")
    bases = {name for name, _ in p.handle_bases}
    need[_relative(depth, "_handles.sync")] = {"OutputDecoder", *(bases & {"ModelHandle"})}
    if bases - {"ModelHandle"}:  # the runtime's run_tools() or batch methods: see _handles/typed_bases.py
        need[_relative(depth, "_handles.typed_bases")] = {f"{pre}{name}" for name in bases for pre in ("", "Async")}
    if any(m.params_name for m in p.methods):
        need[_relative(depth, "_handles.ops")] = {"Op"}
    if any(m.params_name and m.params_own for m in p.methods):
        need["typing"].add("TypedDict")
    if any(m.kind == "requests" and not m.runtime_batch for m in p.methods):
        need.setdefault("collections.abc", set()).add("Sequence")
    if any(m.structured for m in p.methods):
        need["typing"].update({"TypeVar", "overload"})
    if any(len(m.batch_variants) > 1 for m in p.methods):
        need["typing"].add("overload")
    # The async twin: _aio_handle imports nothing heavy; its batch and stream types are TYPE_CHECKING imports.
    if "ModelHandle" in bases:
        need[_relative(depth, "_handles.aio")] = {"AsyncModelHandle"}
    if any(m.kind == "json" for m in p.methods):
        need.setdefault("", set()).add("msgspec")
    binary: set[str] = (
        {"BinaryInput"} if any(m.kind == "binary" or any(x.binary for x in m.params) for m in p.methods) else set[str]()
    )
    if p.binary_outputs:
        binary.add("BinaryOutput")
    if binary:
        need[_relative(depth, "_core.binary")] = binary
    for mod, names in p.shared:
        need[_relative(depth, mod)] = set(names)
    views = {a.annotation.split("[", 1)[0] for a in p.aliases if a.wire}
    if views:
        need[_relative(depth, "families")] = views
    exported = [*p.input_members, *(o.class_name for o in p.json_outputs if o.class_name)]
    for s in p.structs:
        exported += [s.name, *([s.twin] if s.twin else [])]
    exported += [a.name for a in p.aliases]
    # The keyword arguments' TypedDicts (``ChatParams``): a model module re-exports only what is listed here.
    exported += [m.params_name for m in p.methods if m.params_name and m.params_own]
    for _mod, names in p.shared:
        exported += list(names)
    skip = {p.handle, p.async_handle, p.input_alias, p.output_alias, "BinaryInput", "BinaryOutput"}
    exported = [n for n in dict.fromkeys(exported) if n not in skip]
    shared_of = {n: mod for mod, names in p.shared for n in names}
    doc = struct_document(p.structs, shared_of, package)
    return replace(p, imports=tuple(merge_imports(need)), exported=tuple(exported), struct_doc=doc)


# The names a shape module gives its handles and unions, and what a model module adds beside them: no
# struct of the shape may have one (it would be shadowed in the model module that re-exports the shape).
SHAPE_NAMES = frozenset(
    {"ShapeHandle", "AsyncShapeHandle", "ShapeInput", "ShapeOutput", "DECODER", "SHAPE_DECODER", "INPUTS", "INFO"}
    | {"ModelInfo", "TypeAlias", "TYPE_CHECKING", "Unpack", "annotations"}
)


def shape_plan(p: ModelPlan, package: str) -> ModelPlan:
    """The model-independent part of ``p``: what its shape module prints (structs, TypedDicts, ``INPUTS``,
    ``DECODER``, ``Op`` recipes and the handle base classes), with neutral names in place of the model's.

    Models whose shape plans print the same text share one module, named from that text
    (:func:`codegen.render.render_package`); the model's own module keeps its id, ``INFO`` and handle names.
    """
    clash = sorted(SHAPE_NAMES & ({*p.exported} | {st.name for st in p.structs}))
    if clash:
        raise PlanError(p.source.file, f"a struct would shadow a name of the model module: {clash}")
    names = {p.input_alias: "ShapeInput", p.output_alias: "ShapeOutput"}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")

    def renamed(value: Any) -> Any:  # a method's types name the model's unions where it returns one
        if isinstance(value, str):
            return pattern.sub(lambda m: names[m.group(1)], value)
        if isinstance(value, tuple):
            items: tuple[Any, ...] = value  # pyright: ignore[reportUnknownVariableType]
            return tuple(renamed(v) for v in items)
        if is_dataclass(value) and not isinstance(value, type):
            return replace(value, **{f.name: renamed(getattr(value, f.name)) for f in dataclass_fields(value)})
        return value

    neutral = replace(
        p,
        model_id="",
        module="models._shapes.shape",
        handle="ShapeHandle",
        input_alias="ShapeInput",
        output_alias="ShapeOutput",
        methods=renamed(p.methods),
        realtime=None,
    )
    return _finish(neutral, package)


def _finish_shared(
    module: str, task: str, structs: tuple[StructPlan, ...], package: str, outside: dict[str, set[str]]
) -> SharedPlan:
    """A shared module's plan; ``outside``: the names its structs use from shared modules placed before it."""
    need = _typing_imports(_struct_texts(structs), structs)
    depth = module.count(".") + 1
    for mod, names in outside.items():
        need[_relative(depth, mod)] = names
    exported = [n for s in structs for n in (s.name, *([s.twin] if s.twin else []))]
    doc = struct_document(structs, {n: mod for mod, names in outside.items() for n in names}, package)
    return SharedPlan(module, task, structs, tuple(merge_imports(need)), tuple(exported), doc)


_SCALARS = frozenset({"int", "float", "bool", "str"})


def _scalar_kind(annotation: str) -> str:
    """``int``/``float``/``bool``/``str`` for an annotation that is that scalar (optionally unset), else ``json``."""
    parts = [p.strip() for p in annotation.split("|") if p.strip() not in ("UnsetType", "None")]
    return parts[0] if len(parts) == 1 and parts[0] in _SCALARS else "json"
