"""A shape's methods: one per input variant, its parameters, its keyword TypedDict and its batch forms.

``draft`` hands over the input variants (``variants.InputDraft``, paired with the output each returns) and
the model's types; each becomes a :class:`records.MethodPlan` in named steps: the method itself
(:func:`method`, parameters from the request struct's fields), the family's first argument
(:func:`family_arguments`), the method ``run_tools()`` loops over (:func:`tool_runner`), the name of each
method's keyword TypedDict (:func:`params_names`), the typed forms of a batch (:func:`batch_variants`) and
the docstrings (:func:`with_docs`: what it does, the keys it requires, what it returns).
:func:`common_params` and :func:`tool_loop` then read the finished methods for the shape's handles.
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from dataclasses import replace

from .arguments import family_argument
from .naming import TASK_VERBS, pascal
from .plan_base import PlanError
from .records import SHAPE_OUTPUT, MethodPlan, OutputPlan, ParamPlan
from .structs import FieldPlan, StructPlan, names_in, with_none
from .variants import InputDraft

__all__ = [
    "batch_variants",
    "common_params",
    "family_arguments",
    "method",
    "params_names",
    "tool_loop",
    "tool_runner",
    "with_docs",
]

# Names the method body binds or calls: a parameter with one of them would shadow it.
_BODY_NAMES = frozenset({"self", "cls", "data", "headers", "cast"})


def method(
    v: InputDraft,
    structs: dict[str, StructPlan],
    by_index: dict[int, OutputPlan],
    outputs: tuple[OutputPlan, ...],
) -> MethodPlan:
    """The method of one input variant: what it takes (the request struct's fields as keyword parameters,
    or one struct, a JSON value, raw bytes, a list of requests) and what it returns."""
    target = by_index.get(v.output.index) if v.output is not None else None
    returns = (target.class_name or "BinaryOutput") if target is not None else SHAPE_OUTPUT
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
        returns = " | ".join(sync) if sync and not any(o.kind == "binary" for o in outputs) else SHAPE_OUTPUT
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
        expect=expect,
        typed_result=typed,
        tool_form=v.tool_form if any(p.kind == "tools" for p in params) else None,
        media_bytes=media_bytes,
    )


def _media_as_bytes(outputs: tuple[OutputPlan, ...], structs: dict[str, StructPlan]) -> bool:
    """A model answering either raw media or base64 media JSON: its JSON answer is handed back as bytes
    (``families.media.as_binary`` at run time), so its methods return ``BinaryOutput`` alone."""
    jsons = [o for o in outputs if o.kind == "json"]
    return (
        any(o.kind == "binary" for o in outputs)
        and bool(jsons)
        and all(o.class_name and getattr(structs.get(o.class_name), "view", None) == "MediaView" for o in jsons)
    )


def _param(f: FieldPlan, binary: str | None) -> ParamPlan:
    """A keyword parameter for one field; leaving it out sends nothing (the field's UNSET or None)."""
    base = f.plain if binary else f.loose  # binary helpers take the field's own type besides bytes
    description = f.description
    if f.required:
        annotation, default = base, None
    elif f.none_default and f.default is not None and not f.factory:
        annotation, default = base, f.default
    elif f.none_default:
        annotation, default = with_none(base), "None"
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


def _item_of(annotation: str) -> str:
    """``Sequence[X]`` -> ``X`` (the batch item type)."""
    if annotation.startswith("Sequence[") and annotation.endswith("]"):
        return annotation[len("Sequence[") : -1]
    return "Any"


def family_arguments(task: str, m: MethodPlan) -> MethodPlan:
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


def tool_runner(methods: tuple[MethodPlan, ...]) -> tuple[MethodPlan, ...]:
    """The first method taking ``messages`` and ``tools`` drives ``run_tools()`` (when no method has that name)."""
    if any(m.name == "run_tools" or f"{m.name}_stream" == "run_tools" for m in methods):
        return methods
    for i, m in enumerate(methods):
        if m.kind == "object" and m.tool_form and m.messages_param is not None:
            return (*methods[:i], replace(m, runs_tools=True), *methods[i + 1 :])
    return methods


def params_names(
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


def batch_variants(methods: tuple[MethodPlan, ...], loose: dict[str, str]) -> tuple[MethodPlan, ...]:
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


def _overlaps(v: MethodPlan, later: Sequence[MethodPlan]) -> bool:
    return any(set(w.required) <= set(v.required) for w in later)


def common_params(methods: tuple[MethodPlan, ...]) -> tuple[ParamPlan, ...]:
    """Optional keyword arguments every method with its own ``Params`` TypedDict takes alike (name, type
    and description): printed once as ``_CommonParams``, a base of each (a chat model's ``generate`` and
    ``chat`` differ only in ``prompt`` and ``messages``)."""
    own = [m for m in methods if m.params_name and m.params_own]
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


def tool_loop(methods: tuple[MethodPlan, ...], file: str) -> tuple[str, str, str] | None:
    """``(message type, reply type, Op)`` of the method ``run_tools()`` loops over: the handles' base is then
    ``ToolsHandle[..., message, reply]`` with ``tools=<Op>``, whose ``run_tools()`` is the runtime's."""
    for m in methods:
        if m.runs_tools:
            typed = m.messages_param.typed if m.messages_param else ""
            if not (typed.startswith("Sequence[") and typed.endswith("]")):
                raise PlanError(file, f"run_tools() needs a list of messages, not {typed!r}")
            return typed[len("Sequence[") : -1], m.returns, m.op_name
    return None


# What a method does, by the verb its name starts with (``variants.method_name`` names methods so).
_DOES = {
    "chat": "Answer a conversation",
    "generate_image": "Make an image from a prompt",
    "generate": "Generate text",
    "embed": "Embed text as vectors",
    "rank": "Score passages against a query",
    "classify": "Label the input, with a score per label",
    "describe": "Describe an image in words",
    "detect_turn": "Tell whether a speaker has finished their turn",
    "detect": "Find the objects in an image",
    "summarize": "Summarize a text",
    "transcribe": "Transcribe speech to text",
    "translate": "Translate a text",
    "speak": "Turn text into speech",
}
_BY_LENGTH = sorted(_DOES, key=len, reverse=True)


def with_docs(methods: tuple[MethodPlan, ...], task: str) -> tuple[MethodPlan, ...]:
    """Each method with its docstring, and its ``*_stream`` twin's (a batch's are the template's own)."""
    out: list[MethodPlan] = []
    for m in methods:
        does = _does(m.name, task)
        out.append(replace(m, doc=_doc(m, does), stream_doc=_stream_doc(m, does) if m.streams else ""))
    return tuple(out)


def _does(name: str, task: str) -> str:
    """What the verb the method's name starts with does; a name that is not a verb (a variant's title) does
    what its task's verb does."""
    verb = next((v for v in _BY_LENGTH if name == v or name.startswith(f"{v}_")), TASK_VERBS.get(task.lower(), ""))
    return _DOES.get(verb, "Call the model")


def _returns(annotation: str) -> str:
    if annotation == SHAPE_OUTPUT:
        return f"Returns whichever output the model answers with (``{SHAPE_OUTPUT}``)."
    if annotation == "BinaryOutput":
        return "Returns the bytes as a ``BinaryOutput``."
    return f"Returns ``{annotation}``."


def _takes(m: MethodPlan) -> str:
    """``Takes ``audio`` and the keys of ``TranscribeParams``; requires ``audio``.``"""
    lead = "".join(f"``{p.name}`` and " for p in m.leading)
    required = [p.name for p in (*m.leading, *m.keywords) if p.default is None]
    needs = f"requires {', '.join(f'``{n}``' for n in required)}" if required else "all optional"
    return f"Takes {lead}the keys of ``{m.params_name}``; {needs}."


def _doc(m: MethodPlan, does: str) -> str:
    returns = _returns(m.returns)
    if m.kind == "binary":
        text = f"{does}: ``{m.data_name}`` (bytes, a path or a binary file) is sent as the request body. {returns}"
    elif m.kind == "json":
        text = f"{does}: ``payload`` (a ``{m.class_name}``) is sent as the JSON body. {returns}"
    elif m.kind == "request":
        text = f"{does}, from a ready-made ``{m.class_name}`` request. {returns}"
    elif m.kind == "requests":
        return ""
    else:
        text = f"{does}. {_takes(m)} {returns}"
        if m.structured:
            text += (
                f" ``{m.response_format.name if m.response_format else 'response_format'}=`` a Struct, dataclass or"
                " TypedDict type (or a JSON schema dict) asks for JSON mode and returns a ``Parsed``."
            )
    return f"{text} {m.description}" if m.description else text


def _stream_doc(m: MethodPlan, does: str) -> str:
    return (
        f"{does}, streamed: ``{m.name}()`` answered piece by piece, an ``EventStream`` of typed events"
        f" (each event's ``text`` is the next piece). {_takes(m)}"
    )
