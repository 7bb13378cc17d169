"""The plan's records: everything a generated module prints, decided before anything is printed.

The package plan (:class:`PackagePlan`) holds one record per module ``render`` writes: a thin
:class:`ModelPlan` per model (its id, ``INFO`` and handle names), a :class:`ShapeModule` per distinct model
shape (its structs, TypedDicts, methods and decoder rules, printed once in ``models/_shapes/``), a
:class:`SharedPlan` per module of structs several models declare alike, and the clients' overloads
(:class:`ClientPlan`). Records are frozen; their properties only derive (a method's ``Op`` constant name,
the JSON outputs of a shape), they never decide.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .load import ModelSource
from .realtime import RealtimePlan
from .structs import AliasPlan, StructPlan, TwinLayout
from .variants import DispatchRule

__all__ = [
    "SHAPE_INPUT",
    "SHAPE_OUTPUT",
    "ClientPlan",
    "MethodPlan",
    "ModelPlan",
    "OutputPlan",
    "PackagePlan",
    "ParamPlan",
    "RunGroup",
    "Shape",
    "ShapeModule",
    "SharedPlan",
]

# What a shape module calls the unions of its input and output variants (a model module aliases them).
SHAPE_INPUT = "ShapeInput"
SHAPE_OUTPUT = "ShapeOutput"


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
    doc: str = ""  # its docstring: what it does, the keys it requires, what it returns
    stream_doc: str = ""  # its ``*_stream`` twin's

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
class Shape:
    """What models of one shape share: every type they declare and every method, under neutral names
    (``ShapeInput``, ``ShapeOutput``). Two models whose shapes are equal, field for field, share one module."""

    task: str
    structs: tuple[StructPlan, ...]  # every struct it declares (some printed in shared modules)
    aliases: tuple[AliasPlan, ...]
    input_members: tuple[str, ...]
    output_members: tuple[str, ...]
    methods: tuple[MethodPlan, ...]
    outputs: tuple[OutputPlan, ...]
    input_types: tuple[tuple[str, tuple[str, ...]], ...]
    batch_input: str | None
    rules: tuple[DispatchRule, ...]  # one per JSON output, most specific first
    streamable: bool
    common_params: tuple[ParamPlan, ...]  # optional keys every method's own Params share (``_CommonParams``)
    tool_loop: tuple[str, str, str] | None  # (message type, reply type, Op) of the method run_tools() loops over

    @cached_property
    def key(self) -> str:
        """The shape's content, as a key (its module's name): every field above, in order."""
        return hashlib.sha256(repr(self).encode()).hexdigest()

    @property
    def json_outputs(self) -> tuple[OutputPlan, ...]:
        return tuple(o for o in self.outputs if o.kind == "json")

    @property
    def binary_outputs(self) -> tuple[OutputPlan, ...]:
        return tuple(o for o in self.outputs if o.kind == "binary")

    @property
    def inputs(self) -> tuple[MethodPlan, ...]:
        return self.methods

    def decoded_as(self, index: int) -> str:
        """What the output decoder decodes output ``index`` into: its struct, or ``_<alias>_TYPE`` for an alias."""
        o = next(o for o in self.outputs if o.index == index)
        return f"_{o.class_name}_TYPE" if o.alias else str(o.class_name)

    def wire_type(self, name: str) -> str:
        """What the runtime decodes the alias ``name`` from (a family list view decodes from its plain list)."""
        return next((a.wire for a in self.aliases if a.name == name and a.wire), name)

    @property
    def batch_types(self) -> tuple[str, str] | None:
        """``(request, reply)`` of a batch the runtime's methods serve (:attr:`MethodPlan.runtime_batch`): the
        handles' base is then ``BatchHandle[..., request, reply]``."""
        return next(((m.batch_item, m.returns) for m in self.methods if m.runtime_batch), None)

    @property
    def handle_bases(self) -> list[tuple[str, str]]:
        """The sync handle's bases and their type arguments (the async one's are ``Async`` + each name):
        ``ToolsHandle``/``BatchHandle`` where the runtime writes ``run_tools()`` or the batch methods."""
        io = f"{SHAPE_INPUT}, {SHAPE_OUTPUT}"
        bases = [("ToolsHandle", f"{io}, {self.tool_loop[0]}, {self.tool_loop[1]}")] if self.tool_loop else []
        if self.batch_types:
            bases.append(("BatchHandle", f"{io}, {self.batch_types[0]}, {self.batch_types[1]}"))
        return bases or [("ModelHandle", io)]

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

    @property
    def binary_body(self) -> bool:
        """Whether one input variant is the raw bytes of the request body (audio, an image)."""
        return any(m.kind == "binary" for m in self.methods)

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


@dataclass(frozen=True)
class ShapeModule:
    """Where a shape is printed, ``models/_shapes/<task>_<six letters of its key>.py``, and what that module
    declares, imports and exports."""

    module: str
    shape: Shape
    structs: tuple[StructPlan, ...]  # the shape's structs printed here (no shared module holds them)
    imported: tuple[tuple[str, tuple[str, ...]], ...]  # (module, names): its structs other modules hold
    imports: tuple[str, ...]
    type_only_imports: tuple[str, ...]  # under ``if TYPE_CHECKING:`` (never loaded at run time)
    exported: tuple[str, ...]
    struct_doc: str  # what datamodel-code-generator prints its structs from
    file: str  # the schema file of its first model (named in a problem printing it)
    twins: TwinLayout  # how its TypedDict twins are printed
    # (method, twin): a method's keyword TypedDict extends that twin's ``_<twin>Required`` base, keys alike
    params_bases: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SharedPlan:
    """A module of structs several models of one task declare alike (``models/_shapes/<task>_types.py``, and
    ``<task>_types_<letters>.py`` for a second form of a name)."""

    module: str
    task: str
    structs: tuple[StructPlan, ...]
    imports: tuple[str, ...]
    exported: tuple[str, ...]
    struct_doc: str  # what datamodel-code-generator prints the structs from
    twins: TwinLayout  # how its TypedDict twins are printed


@dataclass(frozen=True)
class ModelFacts:
    """A model's own facts, what its module prints besides its shape: its id, ``INFO`` and handle names."""

    source: ModelSource
    model_id: str
    module: str  # dotted, relative to the package, e.g. "models.cf.baai.bge_m3"
    handle: str
    input_alias: str
    output_alias: str
    raw_body: str | None  # input field sent as the raw request body (``x-raw-body``; the rest as query)
    form_body: str | None  # input struct sent as a multipart/form-data body (a branch with that contentType)
    price: tuple[Any, ...]
    realtime: RealtimePlan | None  # its ``*_live`` module, when its file has an ``x-realtime`` section

    @property
    def info_properties(self) -> dict[str, Any]:
        """The catalog's properties as ``INFO`` prints them: less ``price`` when ``INFO.price`` holds it
        (``ModelInfo`` puts it back, so ``INFO.properties["price"]`` reads as before)."""
        props = self.source.properties
        return {k: v for k, v in props.items() if k != "price"} if self.price else dict(props)

    @property
    def task(self) -> str:
        return self.source.task

    @property
    def async_handle(self) -> str:
        """The async twin of :attr:`handle` (same methods, awaited), printed in the same module."""
        return f"Async{self.handle}"


@dataclass(frozen=True)
class ModelPlan(ModelFacts):
    """One model's own module: its facts, the aliases of its shape's unions and its handle classes."""

    shape_module: ShapeModule  # the module of its shape, whose handles its own subclass

    @property
    def shape(self) -> Shape:
        return self.shape_module.shape

    @property
    def listed_methods(self) -> tuple[str, ...]:
        """Its handle's methods as the command line lists them: its shape's, and its live session's."""
        return self.shape.method_names + ((self.realtime.method,) if self.realtime else ())

    # What the model's shape holds, as readers of one model see it (the reference pages, the tests).

    @property
    def methods(self) -> tuple[MethodPlan, ...]:
        return self.shape.methods

    @property
    def inputs(self) -> tuple[MethodPlan, ...]:
        return self.shape.methods

    @property
    def json_outputs(self) -> tuple[OutputPlan, ...]:
        return self.shape.json_outputs

    @property
    def aliases(self) -> tuple[AliasPlan, ...]:
        return self.shape.aliases

    @property
    def structs(self) -> tuple[StructPlan, ...]:
        """The structs its shape's module prints."""
        return self.shape_module.structs

    @property
    def shared(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """``(module, names)``: the structs of its shape other modules hold."""
        return self.shape_module.imported


@dataclass(frozen=True)
class RunGroup:
    """One ``run()`` overload: the model ids of one shape, typed by that shape's unions."""

    alias: str  # the name the client modules import the shape module under
    module: str
    model_ids: tuple[str, ...]


@dataclass(frozen=True)
class ClientPlan:
    """The clients' typed overloads: ``model()`` per model, ``run()`` per shape."""

    runs: tuple[RunGroup, ...]
    # model module -> the name its handle classes are imported under (prefixed by it, ``_bge_m3_BgeM3``) where
    # two models share a handle name or it is a name the client modules bind besides
    aliased: tuple[tuple[str, str], ...]

    def handle_name(self, model: ModelPlan, aio: bool) -> str:
        """What ``model()``'s overload returns: the handle class as the client module imports it."""
        cls = model.async_handle if aio else model.handle
        prefix = dict(self.aliased).get(model.module)
        return f"{prefix}_{cls}" if prefix else cls


@dataclass(frozen=True)
class PackagePlan:
    """The whole package: every module ``render`` prints, decided."""

    package: str
    models: tuple[ModelPlan, ...]  # sorted by model id; a repeated id keeps its first model in the indexes
    listed: tuple[ModelPlan, ...]  # the models the registry, listing and clients list (one per id)
    shapes: tuple[ShapeModule, ...]
    shared: tuple[SharedPlan, ...]
    client: ClientPlan

    @property
    def folders(self) -> dict[str, tuple[str, ...]]:
        """Every package folder below ``models`` (dotted) and the children its ``__init__`` names."""
        modules = [p.module for p in self.models] + [s.module for s in self.shared] + [s.module for s in self.shapes]
        folders = {"models"}
        for module in modules:
            parts = module.split(".")
            folders.update(".".join(parts[:i]) for i in range(1, len(parts)))
        return {
            folder: tuple(sorted({m.split(".")[folder.count(".") + 1] for m in modules if m.startswith(folder + ".")}))
            for folder in sorted(folders)
        }


_SCALARS = frozenset({"int", "float", "bool", "str"})


def _scalar_kind(annotation: str) -> str:
    """``int``/``float``/``bool``/``str`` for an annotation that is that scalar (optionally unset), else ``json``."""
    parts = [p.strip() for p in annotation.split("|") if p.strip() not in ("UnsetType", "None")]
    return parts[0] if len(parts) == 1 and parts[0] in _SCALARS else "json"
