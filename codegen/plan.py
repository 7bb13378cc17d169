"""Step 2 of the pipeline: decide what to generate for each model.

The plan is a small intermediate model: module path, input variants (one method each), output variants
with their content types, the rules that tell output variants apart, and the schema document handed to
datamodel-code-generator. Schema shapes msgspec cannot decode are reshaped here, before rendering.
"""

from __future__ import annotations

import ast
import hashlib
import json
import keyword
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .load import ModelSource, as_arr, as_obj

__all__ = [
    "RESERVED_METHODS",
    "RESERVED_NAMES",
    "InputVariant",
    "ModelPlan",
    "OutputVariant",
    "plan_models",
    "variant_schemas",
]

JSON_TYPES = "application/json"
STREAM_TYPE = "text/event-stream"

# What a method is called when the variant's distinguishing key or the task says it plainly.
_KEY_VERBS = {"requests": "batch", "messages": "chat", "contexts": "rank"}
_TASK_VERBS = {
    "text embeddings": "embed",
    "text generation": "generate",
    "text classification": "classify",
    "translation": "translate",
    "summarization": "summarize",
    "automatic speech recognition": "transcribe",
    "text-to-speech": "speak",
    "text-to-image": "generate_image",
    "image classification": "classify",
    "object detection": "detect",
    "image-to-text": "describe",
    "voice activity detection": "detect_turn",
}


def _handle_members() -> frozenset[str]:
    """Every name the runtime's ``ModelHandle`` defines (methods, class attributes, ``self.x`` in methods).

    Read from the runtime source with ``ast`` (the generator never imports the runtime package), so a
    member added there is never shadowed by a generated method. A test compares it with the real class.
    """
    tree = ast.parse((Path(__file__).parent / "runtime" / "_handle.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "ModelHandle"):
            continue
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
                for sub in ast.walk(node):
                    if (
                        isinstance(sub, ast.Attribute)
                        and isinstance(sub.ctx, ast.Store)
                        and isinstance(sub.value, ast.Name)
                        and sub.value.id == "self"
                    ):
                        names.add(sub.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    if not names:  # pragma: no cover - the runtime always defines it
        raise RuntimeError("runtime/_handle.py defines no ModelHandle class")
    return frozenset(names)


# Names the handle base class already uses: a generated method (or its `_stream` form) never takes one.
RESERVED_METHODS = _handle_members()
# Names a model module binds besides its structs (imports and the template's own names): a handle,
# alias or struct must never take one of them.
RESERVED_NAMES = frozenset(
    {
        "annotations",
        "Any",
        "ClassVar",
        "TypeAlias",
        "Mapping",
        "Sequence",
        "Struct",
        "UNSET",
        "UnsetType",
        "ModelHandle",
        "ModelInfo",
        "OutputDecoder",
        "BatchJob",
        "BatchRequest",
        "EventStream",
        "BinaryInput",
        "BinaryOutput",
        "as_bytes",
        "as_base64",
        "as_uint8",
        "msgspec",
        "INFO",
        "DECODER",
        "Meta",
        "field",
        "Literal",
        "Annotated",
    }
)
_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+|[A-Z]+(?![a-z])")


@dataclass
class Param:
    name: str
    annotation: str
    default: str | None
    wire: str = ""
    description: str = ""
    binary: str | None = None  # "bytes" (msgspec base64), "base64" (str field), "uint8" (list of ints)


@dataclass
class OutputVariant:
    index: int
    class_name: str | None  # None for binary/stream variants (no struct)
    kind: str  # "json", "binary", "stream"
    content_type: str
    json_type: str | None  # "object", "array", "string", ... for JSON variants
    title_words: set[str] = field(default_factory=set[str])
    is_async: bool = False
    alias: bool = False  # rendered as a type alias (list, union...), not a struct class


@dataclass
class InputVariant:
    index: int
    class_name: str | None  # None for raw-binary bodies
    method: str
    kind: str  # "object", "binary", "requests"
    required: list[str]
    description: str
    title_words: set[str] = field(default_factory=set[str])
    output: OutputVariant | None = None
    params: list[Param] = field(default_factory=list[Param])
    kwargs: bool = True
    streams: bool = False
    stream_required: bool = False  # the struct requires `stream`; the plain method sends `stream=False`
    binary_fields: dict[str, str] = field(default_factory=dict[str, str])
    batch_item: str = "Any"
    expect: str = "None"  # what the handle passes to the runtime as the expected output type
    typed_result: bool = False  # whether that argument alone gives the call its return type


@dataclass
class ModelPlan:
    source: ModelSource
    model_id: str
    module: str  # dotted, relative to the package, e.g. "models.cf.baai.bge_m3"
    handle: str
    input_alias: str
    output_alias: str
    inputs: list[InputVariant]
    outputs: list[OutputVariant]
    doc: dict[str, Any]  # document for datamodel-code-generator
    rules: list[tuple[Any, ...]]
    streamable: bool
    price: list[dict[str, Any]]
    fingerprint: str = ""

    @property
    def alias_key(self) -> str:
        """A stable identifier for this model in ``_client.py`` (segments never hold ``__``)."""
        return self.module.removeprefix("models.").replace(".", "__")

    @property
    def json_outputs(self) -> list[OutputVariant]:
        return [o for o in self.outputs if o.kind == "json"]

    @property
    def binary_outputs(self) -> list[OutputVariant]:
        return [o for o in self.outputs if o.kind == "binary"]


def plan_models(sources: Iterable[ModelSource], warnings: list[str]) -> list[ModelPlan]:
    ordered = sorted(sources, key=lambda s: (s.model_id, s.rel))
    modules = _assign_modules(ordered, warnings)
    return [_plan_one(src, modules[id(src)], warnings) for src in ordered]


# ----------------------------------------------------------------------------- naming


def _snake(text: str) -> str:
    s = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    if not s:
        s = "model"
    if s[0].isdigit():
        s = "m_" + s
    if keyword.iskeyword(s) or keyword.issoftkeyword(s):
        s += "_"
    return s


def _pascal(text: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", text)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    if not out:
        out = "Model"
    if out[0].isdigit():
        out = "M" + out
    if keyword.iskeyword(out):  # None, True, False
        out += "Model"
    return out


def _segment(part: str) -> str:
    """One module path segment for one model id segment; long ones are cut (file names have limits)."""
    name = _snake(part.lstrip("@"))
    if len(name) > 64:
        name = f"{name[:48].rstrip('_')}_{hashlib.sha256(part.encode()).hexdigest()[:8]}"
    return name


def _assign_modules(sources: list[ModelSource], warnings: list[str]) -> dict[int, str]:
    """Give each model a module path; collisions are resolved deterministically and reported.

    Two ids that normalise to the same module, or a module that would sit where another model's
    package folder is (``@cf/a`` next to ``@cf/a/b``), get a suffix from a hash of the model id and
    the file's path below the schemas folder: stable across runs and machines, never an overwrite.
    """
    bases = {id(src): "models." + ".".join(_segment(p) for p in src.model_id.split("/")) for src in sources}
    folders = {base.rsplit(".", i)[0] for base in bases.values() for i in range(1, base.count("."))}
    modules: dict[int, str] = {}
    taken: dict[str, ModelSource] = {}
    for src in sources:
        base = name = bases[id(src)]
        other = taken.get(name)
        if other is not None or name in folders:
            suffix = hashlib.sha256(f"{src.model_id}\0{src.rel}".encode()).hexdigest()[:8]
            name = f"{base}_{suffix}"
            if other is None:
                what = f"a module name that is also the package folder of other models (`{base}`)"
                warnings.append(f"{src.file}: `{src.model_id}` has {what}; it is generated as `{name}`")
            else:
                same = other.model_id == src.model_id
                what = "the same model id" if same else "the same module name"
                warnings.append(
                    f"{src.file}: `{src.model_id}` and `{other.model_id}` ({other.file}) have {what}; "
                    f"this one is generated as `{name}`" + (" and `model()` keeps the first" if same else "")
                )
        taken[name] = src
        modules[id(src)] = name
    return modules


def _title_words(title: str, model_id: str) -> set[str]:
    noise = {w.lower() for w in _WORD.findall(model_id.split("/")[-1])}
    noise |= {"input", "output", "ouput", "the", "a", "an", "and", "for", "of", "schema", "request", "response"}
    words = {w.lower() for w in _WORD.findall(title)} - noise
    words = {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words}
    # A conversation is a chat; a bare prompt is plain text (OpenAI-shaped models title their outputs so).
    return words | {_TITLE_ALIASES[w] for w in words if w in _TITLE_ALIASES}


_TITLE_ALIASES = {"message": "chat", "prompt": "text"}


def _clean_title(title: str, model_id: str) -> str:
    model_words = {w.lower() for w in _WORD.findall(model_id.split("/")[-1])}
    words = [w for w in _WORD.findall(title) if w.lower() not in model_words | {"input", "output", "ouput"}]
    return _pascal(" ".join(words))


# ----------------------------------------------------------------------------- variants


def _inline_ref(schema: dict[str, Any], defs: dict[str, Any], inlined: set[str]) -> dict[str, Any]:
    """A schema that is only a ``$ref`` to a definition (plus annotations), replaced by that definition.

    The root of an input or output (and each of its alternatives) must be a schema of its own: the
    plan names a struct after it. ``inlined`` collects the definitions used so; ``_drop_unused``
    removes those nothing else refers to (the struct generator would merge the twins otherwise).
    """
    seen: set[str] = set()
    while True:
        ref = schema.get("$ref")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        parts = as_arr(schema.get("allOf"))
        if ref is None and parts is not None and len(parts) == 1 and list(as_obj(parts[0]) or {}) == ["$ref"]:
            ref = (as_obj(parts[0]) or {}).get("$ref")  # how `load` keeps a `$ref` that has sibling keywords
            rest = {k: v for k, v in schema.items() if k != "allOf"}
        if not isinstance(ref, str) or not ref.startswith(_DEF_PREFIX):
            return schema
        name = ref[len(_DEF_PREFIX) :]
        target = as_obj(defs.get(name))
        if target is None or name in seen:
            return schema
        seen.add(name)
        inlined.add(name)
        schema = {**target, **rest}


def _drop_unused(defs: dict[str, Any], names: set[str]) -> None:
    for name in sorted(names):
        others = json.dumps({k: v for k, v in defs.items() if k != name})
        if json.dumps(f"{_DEF_PREFIX}{name}") not in others:
            defs.pop(name, None)


def variant_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of an input or output root, as the plan numbers them (``InputVariant.index``)."""
    return _branches(schema)


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a root schema into its alternatives, merging the root's shared keywords into each."""
    for comb in ("oneOf", "anyOf"):
        alts = as_arr(schema.get(comb))
        if alts:
            shared = {k: v for k, v in schema.items() if k not in (comb, "title", "description")}
            out: list[dict[str, Any]] = []
            for raw in alts:
                alt = as_obj(raw)
                if alt is None:
                    continue
                merged = _merge_shared(shared, alt)
                if any(as_arr(merged.get(c)) is not None for c in ("oneOf", "anyOf")) and not merged.get("properties"):
                    out.extend(_branches(merged))
                else:
                    out.append(merged)
            return out
    parts = as_arr(schema.get("allOf"))
    if parts is not None:
        plain = [as_obj(p) for p in parts]
        if all(p is not None and "$ref" not in p for p in plain):
            combined: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in plain:
                combined = _merge_shared(combined, part or {})
            return _branches(combined) if any(c in combined for c in ("oneOf", "anyOf")) else [combined]
    return [schema]


def _merge_shared(shared: dict[str, Any], alt: dict[str, Any]) -> dict[str, Any]:
    merged = {**shared, **alt}
    shared_props, alt_props = as_obj(shared.get("properties")), as_obj(alt.get("properties"))
    if shared_props is not None and alt_props is not None:
        merged["properties"] = {**shared_props, **alt_props}
    shared_req, alt_req = as_arr(shared.get("required")), as_arr(alt.get("required"))
    if shared_req is not None and alt_req is not None:
        merged["required"] = list(dict.fromkeys([*shared_req, *alt_req]))
    if "properties" not in merged and shared_props is not None:
        merged["properties"] = shared_props
    return merged


def _is_binary(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and schema.get("format") == "binary"


def _json_type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, str):
        return t
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "any"


def _plan_one(src: ModelSource, module: str, warnings: list[str]) -> ModelPlan:
    mid = src.model_id
    pascal = _pascal(mid.split("/")[-1])
    task = src.task.lower()
    defs: dict[str, Any] = dict(src.definitions)
    used_names: set[str] = set(defs) | RESERVED_NAMES

    def unique(name: str) -> str:
        n, i = name, 2
        while n in used_names:
            n, i = f"{name}{i}", i + 1
        used_names.add(n)
        return n

    # Outputs first, so input methods can be paired with them.
    inlined: set[str] = set()
    output_root = _inline_ref(src.output, defs, inlined)
    root_ct = str(output_root.get("contentType") or JSON_TYPES)
    outputs: list[OutputVariant] = []
    seen_outputs: set[str] = set()
    for i, raw_branch in enumerate(_branches(output_root)):
        branch = _inline_ref(raw_branch, defs, inlined)
        ct = str(branch.get("contentType") or root_ct)
        title = str(branch.get("title") or "")
        if _is_binary(branch) or (ct != JSON_TYPES and branch.get("type") == "string"):
            kind = "stream" if ct == STREAM_TYPE else "binary"
            outputs.append(OutputVariant(i, None, kind, ct if ct != JSON_TYPES else "application/octet-stream", None))
            continue
        branch_props = as_obj(branch.get("properties"))
        keys = sorted(branch_props) if branch_props is not None else []
        is_async = keys == ["request_id"]
        base = "AsyncResponse" if is_async else (_clean_title(title, mid) if title else "")
        if not base or base == "Model":
            base = _pascal("_".join(keys[:2])) if keys and len(outputs) else _pascal(src.task) if src.task else ""
        body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
        canon = _canonical(body)
        if canon in seen_outputs:
            # Two identical alternatives are one answer (the struct generator would merge them anyway).
            continue
        seen_outputs.add(canon)
        name = unique(f"{base}Output" if base and not is_async else (base or "Output"))
        defs[name] = body
        outputs.append(
            OutputVariant(i, name, "json", JSON_TYPES, _json_type(branch), _title_words(title, mid), is_async)
        )

    inputs: list[InputVariant] = []
    method_names: set[str] = set()
    input_root = _inline_ref(src.input, defs, inlined)
    branches = [_inline_ref(b, defs, inlined) for b in _branches(input_root)]
    # Identical schemas are one struct to the generator (even an input and an output): share the name.
    input_classes: dict[str, str] = {_canonical(defs[o.class_name]): o.class_name for o in outputs if o.class_name}
    streamable = any(o.kind == "stream" for o in outputs)
    for i, branch in enumerate(branches):
        title = str(branch.get("title") or "")
        desc = str(branch.get("description") or input_root.get("description") or "")
        props = as_obj(branch.get("properties")) or {}
        required = [r for r in as_arr(branch.get("required")) or [] if isinstance(r, str)]
        keys = sorted(props)
        if _is_binary(branch):
            kind, class_name = "binary", None
        else:
            kind = "requests" if "requests" in required or keys == ["requests"] else "object"
            base = _clean_title(title, mid) if title else ""
            if not base or base == "Model":
                base = _pascal("_".join(required[:2] or keys[:1] or ["body"]))
            body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
            if body:  # an empty input schema stays "any JSON"
                body.setdefault("type", "object")
            canon = _canonical(body)
            if canon in input_classes:
                class_name = input_classes[canon]  # identical alternatives share one struct
            else:
                class_name = input_classes[canon] = unique(f"{base}Input")
                defs[class_name] = body
        streams = streamable and "stream" in props
        method = _method_name(kind, required, task, title, method_names, streams)
        method_names.add(method)
        if streams:
            method_names.add(f"{method}_stream")
        binary_fields = {name: b for name, sub in props.items() if (b := _binary_kind(sub))}
        inputs.append(
            InputVariant(
                i,
                class_name,
                method,
                kind,
                required,
                desc,
                _title_words(title, mid),
                streams=streams,
                binary_fields=binary_fields,
            )
        )

    _drop_unused(defs, inlined)
    _pair(inputs, outputs)
    doc = _reshape_for_msgspec(defs, inputs, outputs, warnings, src.file)
    rules = _dispatch_rules(outputs, as_obj(doc["$defs"]) or {})
    price = as_arr(src.properties.get("price"))
    handle = pascal if pascal not in used_names else unique(f"{pascal}Model")
    used_names.add(handle)
    input_alias = unique(f"{pascal}Input")
    output_alias = unique(f"{pascal}Output")
    return ModelPlan(
        source=src,
        model_id=mid,
        module=module,
        handle=handle,
        input_alias=input_alias,
        output_alias=output_alias,
        inputs=inputs,
        outputs=outputs,
        doc=doc,
        rules=rules,
        streamable=streamable,
        price=price or [],
    )


def _method_name(kind: str, required: list[str], task: str, title: str, taken: set[str], streams: bool) -> str:
    candidates: list[str] = []
    for key in ("requests", "messages", "contexts"):
        if key in required:
            candidates.append(_KEY_VERBS[key])
    verb = _TASK_VERBS.get(task, "call")
    candidates.append(verb)
    if title:
        candidates.append(_snake(title))
    if required:
        candidates.append(f"{verb}_{_snake(required[0])}")
    candidates.append(f"{verb}_{len(taken) + 1}")
    for name in candidates:
        if _usable_method(name, taken, streams):
            return name
    n = len(taken) + 1
    while not _usable_method(f"call_{n}", taken, streams):
        n += 1
    return f"call_{n}"


def _usable_method(name: str, taken: set[str], streams: bool) -> bool:
    """A method name that says something and shadows nothing (``model`` is what an empty title snakes to)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not re.search(r"[a-z]{2}", name) or name in ("model", "m"):
        return False
    forms = [name, f"{name}_stream"] if streams else [name]
    if any(f in taken or f in RESERVED_METHODS or keyword.iskeyword(f) for f in forms):
        return False
    # Another variant's `<name>_stream` form, or this name's stream form later taken by a plain method.
    return f"{name}_stream" not in RESERVED_METHODS


_BYTE_HINTS = re.compile(r"8-bit|uint8|0 and 255|0-255|bytes? of|byte array", re.I)
_B64_HINTS = re.compile(r"base64|base-64", re.I)


def _binary_kind(raw: Any) -> str | None:
    """How a property carries binary data, if it does (raw bytes are accepted for all three)."""
    schema = as_obj(raw)
    if schema is None:
        return None
    if _is_binary(schema):
        return "bytes"
    text = " ".join(str(schema.get(k) or "") for k in ("description", "title"))
    items = as_obj(schema.get("items"))
    if schema.get("type") == "array" and items is not None:
        item_text = " ".join(str(items.get(k) or "") for k in ("description", "title"))
        if items.get("type") in ("integer", "number") and (
            _BYTE_HINTS.search(text + " " + item_text) or (items.get("minimum") == 0 and items.get("maximum") == 255)
        ):
            return "uint8"
    if schema.get("type") == "string" and _B64_HINTS.search(text):
        return "base64"
    return None


def _pair(inputs: list[InputVariant], outputs: list[OutputVariant]) -> None:
    """Pair each input variant with the output variant it returns, when the schema makes it clear.

    Rule: batch (`requests`) variants return a batch job. Otherwise, if the model has exactly one
    synchronous JSON output variant, that is the answer. Otherwise the variant titles are compared
    (words shared, Jaccard, plurals folded, "messages" also read as "chat" and "prompt" as "text"), and
    a unique best match wins. Anything else returns the output union.
    """
    sync_json = [o for o in outputs if o.kind == "json" and not o.is_async]
    binaries = [o for o in outputs if o.kind == "binary"]
    for var in inputs:
        if var.kind == "requests":
            continue
        if len(sync_json) == 1 and not binaries:
            var.output = sync_json[0]
            continue
        if not sync_json and len(binaries) == 1:
            var.output = binaries[0]
            continue
        scored: list[tuple[float, OutputVariant]] = []
        for out in sync_json:
            union = var.title_words | out.title_words
            score = len(var.title_words & out.title_words) / len(union) if union else 0.0
            scored.append((score, out))
        scored.sort(key=lambda s: -s[0])
        if scored and scored[0][0] > 0 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            var.output = scored[0][1]


# ----------------------------------------------------------------------------- msgspec-safe reshaping

# Keywords handed on to datamodel-code-generator, by the JSON type they apply to. Everything else is
# dropped: schema text is data, and some generator extensions (``x-python-import``, ``customTypePath``,
# ``default_factory``...) would otherwise turn a schema into imports or code in the output.
_NUMBER_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_BY_TYPE: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "integer": _NUMBER_KEYS,
    "number": _NUMBER_KEYS,
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "boolean": frozenset[str](),
    "null": frozenset[str](),
}
_TYPED_KEYS = frozenset(k for keys in _BY_TYPE.values() for k in keys)
_ANNOTATIONS = ("description", "default")
_COUNT_KEYS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})
_COMBINATORS = ("anyOf", "oneOf")
_BAD_FIELD = re.compile(r'["\\\x00-\x1f]')
_DEF_PREFIX = "#/$defs/"
_MAX_FLATTEN = 32


def _reshape_for_msgspec(
    defs: dict[str, Any],
    inputs: list[InputVariant],
    outputs: list[OutputVariant],
    warnings: list[str] | None = None,
    file: str = "",
) -> dict[str, Any]:
    """Build the generator document: keep only typing keywords and make every union decodable.

    msgspec refuses unions holding two object-like (struct/dict), two array-like, two str-like or two
    int-like members. Nested alternatives like that are merged into one looser member; the variants at
    the root are never merged: they are told apart by the generated dispatch rules instead.
    """
    names = [v.class_name for v in inputs if v.class_name] + [o.class_name for o in outputs if o.class_name]
    variant_names = list(dict.fromkeys(names))
    shaper = _Shaper(defs, variant_names)
    fixed = {name: shaper.shape_def(name) for name in defs}
    if warnings is not None:
        for name in sorted(shaper.dropped):
            warnings.append(
                f"{file}: property {name!r} cannot be a struct field (quotes, backslashes and control characters "
                "are not allowed in msgspec field names); it is left out of the typed structs"
            )
    return {"$defs": fixed, "oneOf": [{"$ref": f"{_DEF_PREFIX}{n}"} for n in variant_names] or [{"type": "object"}]}


def _members(node: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The schema objects of a combinator list (anything else in the list is skipped)."""
    return [m for m in (as_obj(x) for x in as_arr(node.get(key)) or []) if m is not None]


def _strs(value: Any) -> list[str]:
    return [v for v in as_arr(value) or [] if isinstance(v, str)]


class _Shaper:
    def __init__(self, defs: dict[str, Any], variant_names: list[str]) -> None:
        self.raw = defs
        self.variants = set(variant_names)
        self.canon = {_canonical(defs[n]): n for n in variant_names}
        self.done: dict[str, dict[str, Any]] = {}
        self.busy: set[str] = set()
        self.dropped: set[str] = set()

    # -- definitions

    def shape_def(self, name: str) -> dict[str, Any]:
        if name not in self.done:
            if name in self.busy:
                return {}
            self.busy.add(name)
            try:
                self.done[name] = self.shape(self.raw.get(name, {}), top=name in self.variants)
            finally:
                self.busy.discard(name)
        return self.done[name]

    def target(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        """(def name, shaped definition) for a ``$ref`` node; the definition is None while it is being shaped."""
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith(_DEF_PREFIX):
            return None, None
        name = ref[len(_DEF_PREFIX) :]
        if name in self.busy or name not in self.raw:
            return name, None
        return name, self.shape_def(name)

    # -- one schema node

    def shape(self, raw: Any, top: bool = False) -> dict[str, Any]:
        node = as_obj(raw)
        if node is None:
            return {}  # `true`, `false` and junk: anything goes
        if not top:
            key = _canonical(node)
            if key in self.canon:
                return {"$ref": f"{_DEF_PREFIX}{self.canon[key]}"}
        out = self._clean(node)
        out = self._fold(out)
        out = self._enum(out)
        out = self._types(out)
        out = self._union(out)
        self._check_default(out)
        return out

    def _clean(self, node: dict[str, Any]) -> dict[str, Any]:
        node = self._merge_all_of(node)
        pattern_props = as_obj(node.get("patternProperties"))
        if pattern_props and "additionalProperties" not in node and not node.get("properties"):
            values = [v for v in (as_obj(x) for x in pattern_props.values()) if v is not None]
            if values:
                node = {**node, "additionalProperties": values[0] if len(values) == 1 else {"anyOf": values}}
        seq = as_arr(node.get("items"))
        if seq is None and "items" not in node:
            seq = as_arr(node.get("prefixItems"))
        if seq is not None:
            node = {**node, "items": {"anyOf": seq} if seq else {}}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                props: dict[str, Any] = {}
                for name, sub in (as_obj(value) or {}).items():
                    if _BAD_FIELD.search(name):
                        self.dropped.add(name)
                    else:
                        props[name] = self.shape(sub)
                out[key] = props
            elif key == "items" and isinstance(value, (dict, bool)):
                out[key] = self.shape(value)
            elif key == "additionalProperties":
                if isinstance(value, bool):
                    out[key] = value
                elif as_obj(value) is not None:
                    out[key] = self.shape(value)
            elif key in _COMBINATORS and as_arr(value) is not None:
                out[key] = [self.shape(m) for m in as_arr(value) or []]
            elif key == "$ref":
                if isinstance(value, str) and value.startswith(_DEF_PREFIX) and value[len(_DEF_PREFIX) :] in self.raw:
                    out[key] = value
            elif key == "required":
                out[key] = list(dict.fromkeys(r for r in _strs(value) if not _BAD_FIELD.search(r)))
            elif key == "enum":
                if as_arr(value) is not None:
                    out[key] = value
            elif key in ("const", "default"):
                out[key] = value
            elif key == "type" and (isinstance(value, str) or as_arr(value) is not None):
                out[key] = value
            elif key == "description" and isinstance(value, str):
                out[key] = value
            elif key == "pattern" and isinstance(value, str) and _compiles(value):
                out[key] = value
            elif key == "format" and value == "binary":
                out[key] = value
            elif key in _NUMBER_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = value
            elif key in _COUNT_KEYS and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                out[key] = value
        props_out = as_obj(out.get("properties"))
        if props_out is not None:
            # A required field must always be sent; with a default, `omit_defaults` would leave it out.
            for name in _strs(out.get("required")):
                sub = as_obj(props_out.get(name))
                if sub is not None and "default" in sub:
                    props_out[name] = {k: v for k, v in sub.items() if k != "default"}
        if "$ref" in out:
            # A reference stands for its target; keep only what describes the field.
            return {k: v for k, v in out.items() if k in ("$ref", *_ANNOTATIONS)}
        return out

    def _merge_all_of(self, node: dict[str, Any]) -> dict[str, Any]:
        if as_arr(node.get("allOf")) is None:
            return node
        rest = {k: v for k, v in node.items() if k != "allOf"}
        parts = _members(node, "allOf")
        if len(parts) == 1 and "$ref" in parts[0] and all(k in _ANNOTATIONS for k in rest):
            return {**parts[0], **rest}
        merged: dict[str, Any] = dict(rest)
        for part in parts:
            ref = part.get("$ref")
            if isinstance(ref, str):
                name = ref[len(_DEF_PREFIX) :] if ref.startswith(_DEF_PREFIX) else ""
                base = as_obj(self.raw.get(name))
                if name in self.busy or base is None:
                    continue  # a recursive or unknown base adds no keywords we could inline
                self.busy.add(name)
                try:
                    part = self._merge_all_of(base)
                finally:
                    self.busy.discard(name)
                part = {k: v for k, v in part.items() if k not in ("$defs", "definitions")}
            else:
                part = self._merge_all_of(part)
            merged = _merge_keywords(merged, part)
        return merged

    def _fold(self, node: dict[str, Any]) -> dict[str, Any]:
        """Drop combinators that only add constraints to a typed node (properties fold into objects)."""
        if "type" not in node and "properties" not in node:
            return node
        for comb in _COMBINATORS:
            if as_arr(node.get(comb)) is None:
                continue
            members = _members(node, comb)
            if len(members) != len(as_arr(node.get(comb)) or []) or not all(_constraint_only(m) for m in members):
                continue
            node = {k: v for k, v in node.items() if k != comb}
            if node.get("type") == "object" or "properties" in node:
                props = dict(as_obj(node.get("properties")) or {})
                for m in members:
                    for name, sub in (as_obj(m.get("properties")) or {}).items():
                        if name not in props:
                            props[name] = sub
                        elif _canonical(props[name]) != _canonical(sub):
                            props[name] = self.shape({"anyOf": [props[name], sub]})
                if props:
                    node["properties"] = props
        return node

    def _enum(self, node: dict[str, Any]) -> dict[str, Any]:
        if "const" in node:
            node = {**{k: v for k, v in node.items() if k != "const"}, "enum": [node["const"]]}
        values = as_arr(node.get("enum"))
        if values is None:
            return node
        kinds = _type_set(node.get("type"))
        seen: set[str] = set()
        strs: list[str] = []
        ints: list[int] = []
        extra: list[str] = []
        for v in values:
            key = json.dumps(v, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            jt = _value_type(v)
            if kinds and jt not in kinds and not (jt == "integer" and "number" in kinds):
                continue
            if isinstance(v, str):
                strs.append(v)
            elif jt == "integer" and isinstance(v, int):
                ints.append(v)
            elif jt not in extra:
                extra.append(jt)
        base = {k: v for k, v in node.items() if k not in ("enum", "type")}
        members: list[dict[str, Any]] = []
        if strs:
            members.append({"type": "string", "enum": strs})
        if ints:
            members.append({"type": "integer", "enum": ints})
        for jt in extra:
            members.append({"type": jt})
        if not members:
            return {k: v for k, v in node.items() if k != "enum"}
        if len(members) == 1:
            only = members[0]
            typed = {k: v for k, v in base.items() if k not in _TYPED_KEYS or k in _BY_TYPE[str(only["type"])]}
            if "enum" in only:
                typed = {k: v for k, v in typed.items() if k not in _TYPED_KEYS}
            return {**typed, **only}
        return {**{k: v for k, v in base.items() if k in _ANNOTATIONS}, "anyOf": members}

    def _types(self, node: dict[str, Any]) -> dict[str, Any]:
        t = node.get("type")
        if isinstance(t, str):
            if t in _BY_TYPE:
                return _fit_bounds({k: v for k, v in node.items() if k not in _TYPED_KEYS or k in _BY_TYPE[t]}, t)
            return node
        listed = as_arr(t)
        if listed is None:
            return node
        types = list(dict.fromkeys(x for x in listed if isinstance(x, str) and x in _BY_TYPE))
        if "integer" in types and "number" in types:
            types.remove("integer")
        non_null = [x for x in types if x != "null"]
        if not types:
            return {k: v for k, v in node.items() if k != "type"}
        if len(non_null) <= 1 and "anyOf" not in node and "oneOf" not in node:
            keep = _BY_TYPE[non_null[0]] if non_null else frozenset[str]()
            out = {k: v for k, v in node.items() if k not in _TYPED_KEYS or k in keep}
            out["type"] = types if len(types) > 1 else types[0]
            return _fit_bounds(out, non_null[0]) if non_null else out
        if any(c in node for c in _COMBINATORS):
            return {k: v for k, v in node.items() if k != "type"}  # the alternatives say more than the types
        members = [_fit_bounds({"type": x, **{k: v for k, v in node.items() if k in _BY_TYPE[x]}}, x) for x in types]
        rest = {k: v for k, v in node.items() if k in _ANNOTATIONS}
        return {**rest, "anyOf": members}

    # -- unions

    def _union(self, node: dict[str, Any]) -> dict[str, Any]:
        if not any(as_arr(node.get(c)) is not None for c in _COMBINATORS):
            return node
        members: list[dict[str, Any]] = []
        for comb in _COMBINATORS:
            for m in _members(node, comb):
                self._flatten(m, members, 0)
        annotations = {k: v for k, v in node.items() if k in _ANNOTATIONS}
        kinds = [self._kind(m) for m in members]
        if not members or "any" in kinds:
            return annotations
        if all(k == "variant" for k in kinds):
            return {**annotations, "anyOf": members}  # batch items: whole request variants, checked one by one
        groups: dict[str, list[int]] = {}
        for i, k in enumerate(kinds):
            groups.setdefault(k, []).append(i)
        merged: list[dict[str, Any]] = []
        done: set[str] = set()
        for i, m in enumerate(members):
            k = kinds[i]
            if k in done:
                continue
            if len(groups[k]) == 1 or k == "variant":
                merged.append(m)
                continue
            done.add(k)
            merged.append(self._merge([members[j] for j in groups[k]], k))
        unique: list[dict[str, Any]] = []
        keys: set[str] = set()
        for m in merged:
            key = _canonical(m)
            if key not in keys:
                keys.add(key)
                unique.append(m)
        if len(unique) == 1:
            return {**unique[0], **annotations}
        return {**annotations, "anyOf": unique}

    def _flatten(self, node: dict[str, Any], into: list[dict[str, Any]], depth: int) -> None:
        pure = all(k in _ANNOTATIONS or k in _COMBINATORS for k in node)
        if pure and any(as_arr(node.get(c)) is not None for c in _COMBINATORS) and depth < _MAX_FLATTEN:
            for comb in _COMBINATORS:
                for m in _members(node, comb):
                    self._flatten(m, into, depth + 1)
            return
        if "$ref" in node and depth < _MAX_FLATTEN:
            name, target = self.target(node)
            if name not in self.variants and target is not None and any(c in target for c in _COMBINATORS):
                if all(k in _ANNOTATIONS or k in _COMBINATORS for k in target):
                    self._flatten(target, into, depth + 1)
                    return
        listed = as_arr(node.get("type"))
        if listed is not None and len(listed) > 1:
            for x in listed:
                if isinstance(x, str) and x in _BY_TYPE:
                    into.append({"type": x, **{k: v for k, v in node.items() if k in _BY_TYPE[x]}})
            return
        into.append(node)

    def _kind(self, node: dict[str, Any]) -> str:
        if "$ref" in node:
            name, target = self.target(node)
            if name in self.variants:
                return "variant"
            if target is None:
                return "obj"  # a recursive reference: always a struct
            node = target
        t: Any = node.get("type")
        listed = as_arr(t)
        if listed is not None:
            t = next((x for x in listed if x != "null"), "null")
        if "enum" in node:
            return {"string": "strlit", "integer": "intlit"}.get(str(t), "any")
        if t == "string":
            return "str"
        if t in ("integer", "number", "boolean", "null"):
            return str(t)
        if t == "object" or "properties" in node or "additionalProperties" in node:
            return "obj"
        if t == "array" or "items" in node:
            return "arr"
        if any(c in node for c in _COMBINATORS):
            return "union"
        return "any"

    def _merge(self, members: list[dict[str, Any]], kind: str) -> dict[str, Any]:
        nodes: list[dict[str, Any]] = []
        for m in members:
            if "$ref" in m:
                _, target = self.target(m)
                nodes.append(target if target is not None else {"type": "object"})
            else:
                nodes.append(m)
        if kind in ("strlit", "intlit"):
            values = [v for n in nodes for v in as_arr(n.get("enum")) or []]
            unique = list({json.dumps(v): v for v in values}.values())
            return {"type": "string" if kind == "strlit" else "integer", "enum": unique}
        if kind in ("str", "integer", "number", "boolean", "null"):
            return {"type": "string" if kind == "str" else kind}
        if kind == "union":
            return {}
        if kind == "arr":
            items = [as_obj(n.get("items")) for n in nodes]
            if any(not i for i in items):
                return {"type": "array"}
            return {"type": "array", "items": self.shape({"anyOf": items})}
        props_of = [as_obj(n.get("properties")) for n in nodes]
        if all(props_of):
            props: dict[str, list[Any]] = {}
            for n_props in props_of:
                for name, sub in (n_props or {}).items():
                    props.setdefault(name, []).append(sub)
            merged_props = {
                name: subs[0] if len({_canonical(s) for s in subs}) == 1 else self.shape({"anyOf": subs})
                for name, subs in props.items()
            }
            first = _strs(nodes[0].get("required"))
            required = [r for r in first if all(r in _strs(n.get("required")) for n in nodes)]
            out: dict[str, Any] = {"type": "object", "properties": merged_props}
            if required:
                out["required"] = required
            return out
        if not any(props_of):
            values = [as_obj(n.get("additionalProperties")) for n in nodes]
            if all(values):
                return {"type": "object", "additionalProperties": self.shape({"anyOf": values})}
        return {"type": "object"}

    # -- defaults

    def _check_default(self, node: dict[str, Any]) -> None:
        if "default" in node and not (_finite(node["default"]) and self._fits(node["default"], node, 0)):
            del node["default"]

    def _fits(self, value: Any, raw: Any, depth: int) -> bool:
        node = as_obj(raw)
        if node is None or depth > 16:
            return True
        if "$ref" in node:
            _, target = self.target(node)
            return target is None or self._fits(value, target, depth + 1)
        members = [m for c in _COMBINATORS for m in _members(node, c)]
        if members:
            return any(self._fits(value, m, depth + 1) for m in members)
        allowed = as_arr(node.get("enum"))
        if allowed is not None and value not in allowed:
            return False
        if node.get("format") == "binary":
            return False
        kinds = _type_set(node.get("type"))
        jt = _value_type(value)
        if kinds and jt not in kinds and not (jt == "integer" and "number" in kinds):
            return False
        if as_obj(value) is not None:
            return not node.get("properties")  # a struct field cannot default to a plain dict
        items = as_arr(value)
        if items is not None:
            return all(not isinstance(v, (dict, list)) and self._fits(v, node.get("items"), depth + 1) for v in items)
        return True


_INT64 = 2**63 - 1
_MAX_LENGTH = 2**62


def _fit_bounds(node: dict[str, Any], json_type: str) -> dict[str, Any]:
    """Drop numeric constraints msgspec cannot express (it would fail when the module is imported).

    Integers take integral bounds inside int64 (``1.0`` becomes ``1``), numbers finite ones, lengths
    sizes a machine can hold; a ``multipleOf`` must be positive. A dropped bound only makes the
    client-side check looser: the server still enforces the schema.
    """
    out = dict(node)
    for key in (*_NUMBER_KEYS, *_COUNT_KEYS):
        if key not in out:
            continue
        value = out[key]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and key in _COUNT_KEYS:
            ok = isinstance(value, int) and 0 <= value <= _MAX_LENGTH
        elif ok and json_type == "integer":
            ok = float(value).is_integer() and -_INT64 < value < _INT64
            if ok:
                out[key] = int(value)
        elif ok:
            ok = abs(value) <= 1e300
        if ok and key == "multipleOf":
            ok = out[key] > 0
        if not ok:
            del out[key]
    return out


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (``1e400`` in JSON reads as infinity)."""
    if isinstance(value, float):
        return math.isfinite(value)
    obj, arr = as_obj(value), as_arr(value)
    if obj is not None:
        return all(_finite(v) for v in obj.values())
    return all(_finite(v) for v in arr or [])


def _merge_keywords(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Both sets of keywords at once (allOf): properties and required lists add up, else ``a`` wins."""
    out = {**b, **a}
    a_props, b_props = as_obj(a.get("properties")), as_obj(b.get("properties"))
    if a_props is not None or b_props is not None:
        out["properties"] = {**(b_props or {}), **(a_props or {})}
    req = [*_strs(a.get("required")), *_strs(b.get("required"))]
    if req:
        out["required"] = list(dict.fromkeys(req))
    if "type" not in a and "type" in b:
        out["type"] = b["type"]
    return out


def _constraint_only(node: dict[str, Any]) -> bool:
    """A combinator member that narrows its parent instead of offering an alternative type."""
    if any(k in node for k in ("$ref", "enum", "const", "items", *_COMBINATORS)):
        return False
    t = node.get("type")
    return t is None or t == "object"


def _type_set(t: Any) -> set[str]:
    if isinstance(t, str):
        return {t}
    return set(_strs(t))


def _value_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _canonical(node: Any) -> str:
    """Structure-only JSON of a schema: wording (title, description) and ``contentType`` left out."""

    def strip(n: Any) -> Any:
        arr = as_arr(n)
        if arr is not None:
            return [strip(v) for v in arr]
        obj = as_obj(n)
        if obj is None:
            return n
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if k in ("title", "description", "contentType"):
                continue
            mapping = as_obj(v)
            if k in ("properties", "patternProperties") and mapping is not None:
                out[k] = {name: strip(sub) for name, sub in mapping.items()}
            elif k in ("enum", "const", "default", "examples", "required"):
                out[k] = v
            else:
                out[k] = strip(v)
        if "properties" in out and "type" not in out:
            out["type"] = "object"
        return out

    return json.dumps(strip(node), sort_keys=True)


# ----------------------------------------------------------------------------- output dispatch


def _dispatch_rules(outputs: list[OutputVariant], defs: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Rules that pick an output variant from a decoded JSON value, most specific first.

    Each rule is ``(variant_index, json_type, must_have_keys, key_shapes[, tags])``: the value's JSON
    type must match; a key only this variant declares counts for it; each ``(key, shape)`` in
    ``key_shapes`` must hold where the key is present (shape of the value or of its first item); the
    optional ``tags`` are ``(key, values)`` pairs whose values only this variant declares. Unknown
    extra keys never stop a match, so fields the API adds later are tolerated.
    """
    json_vars = [o for o in outputs if o.kind == "json" and o.class_name]
    shapes: dict[str, dict[str, str]] = {}
    for o in json_vars:
        props = as_obj((as_obj(defs.get(o.class_name or "")) or {}).get("properties")) or {}
        shapes[o.class_name or ""] = {k: _shape(v, defs) for k, v in props.items()}
    rules: list[tuple[Any, ...]] = []
    for o in json_vars:
        mine = shapes[o.class_name or ""]
        others = [shapes[x.class_name or ""] for x in json_vars if x is not o and x.json_type == o.json_type]
        all_other_keys: set[str] = set()
        for other in others:
            all_other_keys.update(other)
        unique = sorted(set(mine) - all_other_keys)
        checks = sorted(
            (k, s) for k, s in mine.items() if s != "any" and any(k in other and other[k] != s for other in others)
        )
        rule: tuple[Any, ...] = (o.index, o.json_type or "any", tuple(unique), tuple(checks))
        tags = _tags(o, [x for x in json_vars if x is not o and x.json_type == o.json_type], defs)
        rules.append((*rule, tags) if tags else rule)
    counts = {o.index: len(shapes[o.class_name or ""]) for o in json_vars}
    # Most specific first: variants with unique keys, then with shape checks, then by key count.
    rules.sort(key=lambda r: (not r[2], not r[3], -counts[r[0]], r[0]))
    return rules


def _enum_values(body: Any, key: str, defs: dict[str, Any]) -> list[Any] | None:
    props = as_obj((as_obj(body) or {}).get("properties")) or {}
    sub = as_obj(props.get(key))
    ref = sub.get("$ref") if sub is not None else None
    if isinstance(ref, str):
        sub = as_obj(defs.get(ref.rsplit("/", 1)[-1]))
    values = as_arr(sub.get("enum")) if sub is not None else None
    if values is None:
        return None
    return [v for v in values if isinstance(v, (str, int)) and not isinstance(v, bool)]


def _tags(
    o: OutputVariant, others: list[OutputVariant], defs: dict[str, Any]
) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """(key, values) pairs where this variant declares enum values for a key that no other variant allows.

    A chat completion says ``object: "chat.completion"``, a text completion ``"text_completion"``: the
    keys and shapes match, the value tells them apart. The runtime treats a match as strong evidence,
    and a value nobody declares as no evidence (so new values the API adds still decode).
    """
    body = as_obj(defs.get(o.class_name or "")) or {}
    props = as_obj(body.get("properties")) or {}
    out: list[tuple[str, tuple[Any, ...]]] = []
    for key in sorted(props):
        mine = _enum_values(body, key, defs)
        if not mine:
            continue
        theirs = [_enum_values(defs.get(x.class_name or ""), key, defs) for x in others]
        if not any(t is not None for t in theirs):
            continue
        taken = {json.dumps(v) for t in theirs if t for v in t}
        own = tuple(v for v in mine if json.dumps(v) not in taken)
        if own:
            out.append((key, own))
    return tuple(out)


def _shape(raw: Any, defs: dict[str, Any]) -> str:
    """A coarse JSON shape: 'string', 'number', 'object', 'array<object>', 'array<array>', ..."""
    schema = as_obj(raw)
    ref = schema.get("$ref") if schema is not None else None
    if isinstance(ref, str):
        schema = as_obj(defs.get(ref.rsplit("/", 1)[-1], {}))
    if schema is None:
        return "any"
    t = schema.get("type")
    if t == "integer":
        t = "number"
    if t == "array":
        items = as_obj(schema.get("items"))
        inner = _shape(items, defs) if items is not None else "any"
        return f"array<{inner.split('<')[0]}>"
    if isinstance(t, str):
        return t
    if "properties" in schema:
        return "object"
    return "any"
