"""Drafting one model: its output and input variants, its types, its methods, as a :class:`ModelDraft`.

A draft is complete when it is made: the model's own facts (id, module, handle names, ``INFO``) and its
:class:`records.Shape` (every type it declares and every method, under the neutral names
``ShapeInput``/``ShapeOutput``). Where its types are printed (its shape's module or a shared one) is decided
after every model is drafted (``share``). The steps, in order:

1. :func:`_outputs`: the output alternatives, each a struct (named after its title, or its keys) or raw
   media; identical alternatives are one. Which keys are always returned follows ``ALWAYS_RETURNED``
   where the schema does not say.
2. :func:`_inputs`: the input alternatives, each a method (named by ``variants.method_name``).
3. :func:`_types`: inputs paired with the outputs they return, the schema shaped for msgspec, the rules
   that tell outputs apart, and every struct, TypedDict twin and alias (``structs.build_types``).
4. :func:`_shape`: the shape, with its methods (:func:`_methods`, by ``methods``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .load import ModelSource
from .methods import (
    batch_variants,
    common_params,
    family_arguments,
    method,
    params_names,
    tool_loop,
    tool_runner,
    with_docs,
)
from .naming import RESERVED_NAMES, clean_title, handle_name, pascal, title_words
from .plan_base import PlanError
from .realtime import plan_realtime
from .records import SHAPE_INPUT, SHAPE_OUTPUT, MethodPlan, ModelFacts, OutputPlan, Shape
from .reshape import canonical, reshape
from .schema_walk import as_list, as_map
from .structs import NamingError, TypeSet, build_types
from .variants import (
    JSON_TYPES,
    STREAM_TYPE,
    DispatchRule,
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
)

__all__ = [
    "ALWAYS_RETURNED",
    "SHAPE_NAMES",
    "ModelDraft",
    "always_returned",
    "draft_model",
    "output_rule",
    "raw_body_field",
    "websocket_only",
]

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

# The names a shape module gives its handles and unions, and what a model module binds beside them: no
# struct of a shape may have one (it would be shadowed in the model module that re-exports the shape).
SHAPE_NAMES = frozenset(
    {"ShapeHandle", "AsyncShapeHandle", SHAPE_INPUT, SHAPE_OUTPUT, "DECODER", "SHAPE_DECODER", "INPUTS", "INFO"}
    | {"ModelInfo", "TypeAlias", "TYPE_CHECKING", "Unpack", "annotations"}
)

RAW_BODY_KEY = "x-raw-body"
_MATCHED = ("object", "request")  # the input variants a dict payload is matched against (``INPUTS``)
FORM_TYPE = "multipart/form-data"


@dataclass(frozen=True)
class ModelDraft(ModelFacts):
    """One model, drafted: its own facts and its shape (placed by ``share``)."""

    shape: Shape


def draft_model(src: ModelSource, module: str, warnings: list[str], package: str) -> ModelDraft:
    """The draft of one model (raises :class:`PlanError` for a schema that cannot be planned)."""
    try:
        return _draft(src, module, warnings, package)
    except NamingError as exc:
        raise PlanError(src.file, str(exc)) from None


class _Names:
    """The names one model's shape may not take (reserved, its definitions', its handles') and takes."""

    def __init__(self, src: ModelSource) -> None:
        self.used: set[str] = set(src.definitions) | set(RESERVED_NAMES) | SHAPE_NAMES
        handle = handle_name(src.model_id)
        self.handle = f"{handle}Model" if handle in self.used else handle
        self.used |= {self.handle, f"Async{self.handle}", f"{self.handle}Input", f"{self.handle}Output"}

    def unique(self, candidates: list[str]) -> str:
        for name in candidates:
            if name and name not in self.used and f"{name}Dict" not in self.used:
                self.used.update({name, f"{name}Dict"})
                return name
        raise NamingError(f"two different variants would both be named {candidates[0]!r}")


def _draft(src: ModelSource, module: str, warnings: list[str], package: str) -> ModelDraft:
    names = _Names(src)
    defs: dict[str, Any] = dict(src.definitions)
    inlined: set[str] = set()
    outputs = _outputs(src, defs, inlined, names)
    input_branches, inputs = _inputs(src, defs, inlined, names, outputs)
    types, rules = _types(src, defs, inlined, inputs, outputs, names, warnings)
    return ModelDraft(
        source=src,
        model_id=src.model_id,
        module=module,
        handle=names.handle,
        input_alias=f"{names.handle}Input",
        output_alias=f"{names.handle}Output",
        shape=_shape(src, inputs, outputs, types, rules),
        raw_body=raw_body_field(src.input),
        form_body=form_body_class(input_branches, inputs),
        price=tuple(as_list(src.properties.get("price")) or []),
        realtime=plan_realtime(src, module + "_live", names.handle, package),
    )


def _shape(
    src: ModelSource, inputs: list[InputDraft], outputs: list[OutputDraft], types: TypeSet, rules: list[DispatchRule]
) -> Shape:
    """The model's shape: its types, its outputs and methods, and what its handles and decoder are given."""
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
    methods = () if websocket_only(src) else _methods(src.task, inputs, types, out_plans)
    json_members = [o.class_name for o in out_plans if o.kind == "json" and o.class_name]
    if any(o.kind == "binary" for o in out_plans):
        json_members.append("BinaryOutput")
    in_members = list(dict.fromkeys(v.class_name for v in inputs if v.class_name))
    if any(v.kind == "binary" for v in inputs):
        in_members.append("BinaryInput")
    return Shape(
        task=src.task,
        structs=types.structs,
        aliases=types.aliases,
        input_members=tuple(in_members),
        output_members=tuple(json_members),
        methods=methods,
        outputs=out_plans,
        input_types=tuple((m.class_name, m.required) for m in methods if m.class_name and m.kind in _MATCHED),
        batch_input=next((m.class_name for m in methods if m.kind == "requests" and m.class_name), None),
        rules=tuple(rules),
        streamable=any(o.kind == "stream" for o in outputs),
        common_params=common_params(methods),
        tool_loop=tool_loop(methods, src.file),
    )


def _outputs(src: ModelSource, defs: dict[str, Any], inlined: set[str], names: _Names) -> list[OutputDraft]:
    """The output alternatives (first, so that inputs can be paired with them); each JSON one's body is added
    to ``defs`` under its struct name."""
    task = src.task.lower()
    root = inline_ref(src.output, defs, inlined)
    root_ct = str(root.get("contentType") or JSON_TYPES)
    outputs: list[OutputDraft] = []
    seen: set[str] = set()
    for i, raw_branch in enumerate(branches(root)):
        branch = inline_ref(raw_branch, defs, inlined)
        ct = str(branch.get("contentType") or root_ct)
        title = str(branch.get("title") or "")
        if is_binary(branch) or (ct != JSON_TYPES and branch.get("type") == "string"):
            kind = "stream" if ct == STREAM_TYPE else "binary"
            outputs.append(OutputDraft(i, None, kind, ct if ct != JSON_TYPES else "application/octet-stream", None))
            continue
        keys = sorted(as_map(branch.get("properties")) or {})
        is_async = keys == ["request_id"]
        base = "AsyncResponse" if is_async else (clean_title(title, src.model_id) if title else "")
        if not base or base == "Model":
            base = pascal("_".join(keys[:2])) if keys and len(outputs) else pascal(src.task) if src.task else ""
        body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
        body = always_returned(body, output_rule(task, branch))
        canon = canonical(body)
        if canon in seen:
            continue  # two identical alternatives are one answer
        seen.add(canon)
        stem = base if is_async else f"{base}Output" if base else "Output"
        name = names.unique([stem, f"{pascal('_'.join(keys))}Output" if keys else "", f"{stem}Alternative"])
        defs[name] = body
        words = title_words(title, src.model_id)
        outputs.append(OutputDraft(i, name, "json", JSON_TYPES, json_type(branch), words, is_async))
    return outputs


def _inputs(
    src: ModelSource, defs: dict[str, Any], inlined: set[str], names: _Names, outputs: list[OutputDraft]
) -> tuple[list[dict[str, Any]], list[InputDraft]]:
    """The input alternatives (as the schema has them) and their drafts: one method each; identical
    alternatives share one struct, whose body is added to ``defs``."""
    task = src.task.lower()
    openai_output = any(
        "choices" in (as_map(inline_ref(b, defs, set()).get("properties")) or {})
        for b in branches(inline_ref(src.output, defs, set()))
    )
    root = inline_ref(src.input, defs, inlined)
    input_branches = [inline_ref(b, defs, inlined) for b in branches(root)]
    classes: dict[str, str] = {canonical(defs[o.class_name]): o.class_name for o in outputs if o.class_name}
    streamable = any(o.kind == "stream" for o in outputs)
    taken_methods: set[str] = set()
    inputs: list[InputDraft] = []
    for i, branch in enumerate(input_branches):
        title = str(branch.get("title") or "")
        props = as_map(branch.get("properties")) or {}
        required = [r for r in as_list(branch.get("required")) or [] if isinstance(r, str)]
        keys = sorted(props)
        class_name: str | None
        if is_binary(branch):
            kind, class_name = "binary", None
        else:
            kind = "requests" if "requests" in required or keys == ["requests"] else "object"
            base = clean_title(title, src.model_id) if title else ""
            if not base or base == "Model":
                base = pascal("_".join(required[:2] or keys[:1] or ["body"]))
            body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
            if body:  # an empty input schema stays "any JSON"
                body.setdefault("type", "object")
            canon = canonical(body)
            if canon in classes:
                class_name = classes[canon]  # identical alternatives share one type
            else:
                candidates = [f"{base}Input", f"{pascal('_'.join(required or keys))}Input", f"{base}AlternativeInput"]
                class_name = classes[canon] = names.unique(candidates)
                defs[class_name] = body
        streams = streamable and "stream" in props
        name = method_name(kind, required, task, title, taken_methods, streams, keys)
        taken_methods.update([name, *([f"{name}_stream"] if streams else [])])
        inputs.append(
            InputDraft(
                i,
                class_name,
                name,
                kind,
                required,
                str(branch.get("description") or root.get("description") or ""),
                title_words(title, src.model_id),
                streams=streams,
                binary_fields={key: b for key, sub in props.items() if (b := binary_kind(sub))},
                tool_form=tool_form(props.get("tools"), defs, openai_output) if "tools" in props else None,
            )
        )
    return input_branches, inputs


def _types(
    src: ModelSource,
    defs: dict[str, Any],
    inlined: set[str],
    inputs: list[InputDraft],
    outputs: list[OutputDraft],
    names: _Names,
    warnings: list[str],
) -> tuple[TypeSet, list[DispatchRule]]:
    """Every type the model declares, and the rules that tell its JSON outputs apart."""
    drop_unused(defs, inlined)
    pair(inputs, outputs)
    variant_names = [v.class_name for v in inputs if v.class_name] + [o.class_name for o in outputs if o.class_name]
    shaped: dict[str, Any] = as_map(reshape(defs, variant_names, warnings, src.file)["$defs"]) or {}
    rules = dispatch_rules(outputs, shaped)
    input_names = [v.class_name for v in inputs if v.class_name]
    types = build_types(shaped, list(dict.fromkeys(variant_names)), input_names, names.used, src.task)
    return types, rules


def _methods(
    task: str, inputs: list[InputDraft], types: TypeSet, outputs: tuple[OutputPlan, ...]
) -> tuple[MethodPlan, ...]:
    structs = {s.name: s for s in types.structs}
    by_index = {o.index: o for o in outputs}
    methods = tool_runner(tuple(family_arguments(task, method(v, structs, by_index, outputs)) for v in inputs))
    taken = {*structs, *(s.twin for s in types.structs if s.twin), *(a.name for a in types.aliases)}
    return with_docs(batch_variants(params_names(methods, taken, structs), types.loose_roots), task)


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


def raw_body_field(inp: dict[str, Any]) -> str | None:
    """The input field the REST API takes as the raw request body, when the schema states one
    (``"x-raw-body": "audio"`` at the input's root, naming a ``format: binary`` property; set by an
    override, since the published schemas describe the Workers binding's form instead)."""
    name = inp.get(RAW_BODY_KEY)
    prop = as_map((as_map(inp.get("properties")) or {}).get(name)) if isinstance(name, str) else None
    if prop is None or prop.get("format") != "binary":
        return None
    return str(name)


def form_body_class(branches: Sequence[dict[str, Any]], inputs: Sequence[InputDraft]) -> str | None:
    """The struct of the input branch the REST API takes as a ``multipart/form-data`` body (an object
    branch whose ``contentType`` says so: FLUX.2, by override), each field a form part."""
    for branch, draft in zip(branches, inputs, strict=True):
        if str(branch.get("contentType") or "").startswith(FORM_TYPE) and draft.class_name:
            return draft.class_name
    return None


def websocket_only(src: ModelSource) -> bool:
    """The model is served only over WebSocket (its ``x-realtime`` section says ``"rest": false``): its
    published REST schema describes the session's options and events, so its handle gets no REST
    methods, only the session method ``codegen.realtime`` adds."""
    section = as_map(src.catalog.get("x-realtime"))
    return section is not None and section.get("rest") is False
