"""Step 2 of the pipeline: decide what to generate for each model.

The plan is a small intermediate model: module path, input variants (one method each), output variants
with their content types, the rules that tell output variants apart, and the schema document handed to
datamodel-code-generator. Schema shapes msgspec cannot decode are reshaped here, before rendering.
"""

from __future__ import annotations

import copy
import hashlib
import json
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .load import ModelSource

__all__ = ["InputVariant", "ModelPlan", "OutputVariant", "plan_models"]

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
# Names the handle base class already uses.
_RESERVED_METHODS = {"run", "stream", "model_id", "info", "client", "decode_output", "submit_batch", "batch_job"}
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
    keys: list[str] = field(default_factory=list)
    title_words: set[str] = field(default_factory=set)
    is_async: bool = False


@dataclass
class InputVariant:
    index: int
    class_name: str | None  # None for raw-binary bodies
    method: str
    kind: str  # "object", "binary", "requests"
    required: list[str]
    keys: list[str]
    description: str
    title_words: set[str] = field(default_factory=set)
    output: OutputVariant | None = None
    params: list[Param] = field(default_factory=list)
    kwargs: bool = True
    streams: bool = False
    binary_fields: dict[str, str] = field(default_factory=dict)
    batch_item: str = "Any"


@dataclass
class ModelPlan:
    source: ModelSource
    model_id: str
    module: str  # dotted, relative to the package, e.g. "models.cf.baai.bge_m3"
    pascal: str
    handle: str
    input_alias: str
    output_alias: str
    inputs: list[InputVariant]
    outputs: list[OutputVariant]
    doc: dict[str, Any]  # document for datamodel-code-generator
    rules: list[tuple[Any, ...]]
    streamable: bool
    batchable: bool
    price: list[dict[str, Any]]
    fingerprint: str = ""

    @property
    def json_outputs(self) -> list[OutputVariant]:
        return [o for o in self.outputs if o.kind == "json"]

    @property
    def binary_outputs(self) -> list[OutputVariant]:
        return [o for o in self.outputs if o.kind == "binary"]


def plan_models(sources: Iterable[ModelSource], warnings: list[str]) -> list[ModelPlan]:
    ordered = sorted(sources, key=lambda s: (s.model_id, s.file))
    modules = _assign_modules(ordered, warnings)
    return [_plan_one(src, modules[id(src)]) for src in ordered]


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
    return out


def _assign_modules(sources: list[ModelSource], warnings: list[str]) -> dict[int, str]:
    """Give each model a module path; collisions are resolved deterministically and reported."""
    modules: dict[int, str] = {}
    taken: dict[str, ModelSource] = {}
    for src in sources:
        parts = [_snake(p.lstrip("@")) for p in src.model_id.split("/")]
        base = "models." + ".".join(parts)
        name = base
        if name in taken:
            other = taken[name]
            suffix = hashlib.sha256(f"{src.model_id}\0{src.file}".encode()).hexdigest()[:8]
            name = f"{base}_{suffix}"
            what = "the same model id" if other.model_id == src.model_id else "the same module name"
            warnings.append(
                f"{src.file}: `{src.model_id}` and `{other.model_id}` ({other.file}) have {what}; "
                f"this one is generated as `{name}`"
                + (" and `model()` keeps the first" if other.model_id == src.model_id else "")
            )
        taken[name] = src
        modules[id(src)] = name
    return modules


def _title_words(title: str, model_id: str) -> set[str]:
    noise = {w.lower() for w in _WORD.findall(model_id.split("/")[-1])}
    noise |= {"input", "output", "ouput", "the", "a", "an", "and", "for", "of", "schema", "request", "response"}
    words = {w.lower() for w in _WORD.findall(title)} - noise
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words}


def _clean_title(title: str, model_id: str) -> str:
    model_words = {w.lower() for w in _WORD.findall(model_id.split("/")[-1])}
    words = [w for w in _WORD.findall(title) if w.lower() not in model_words | {"input", "output", "ouput"}]
    return _pascal(" ".join(words))


# ----------------------------------------------------------------------------- variants


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a root schema into its alternatives, merging the root's shared keywords into each."""
    for comb in ("oneOf", "anyOf"):
        alts = schema.get(comb)
        if isinstance(alts, list) and alts:
            shared = {k: v for k, v in schema.items() if k not in (comb, "title", "description")}
            out: list[dict[str, Any]] = []
            for alt in alts:
                if not isinstance(alt, dict):
                    continue
                merged = _merge_shared(shared, alt)
                if any(isinstance(merged.get(c), list) for c in ("oneOf", "anyOf")) and not merged.get("properties"):
                    out.extend(_branches(merged))
                else:
                    out.append(merged)
            return out
    if isinstance(schema.get("allOf"), list):
        combined: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, dict) and "$ref" not in part:
                combined = _merge_shared(combined, part)
        if all(isinstance(p, dict) and "$ref" not in p for p in schema["allOf"]):
            return _branches(combined) if any(c in combined for c in ("oneOf", "anyOf")) else [combined]
    return [schema]


def _merge_shared(shared: dict[str, Any], alt: dict[str, Any]) -> dict[str, Any]:
    merged = {**shared, **alt}
    if isinstance(shared.get("properties"), dict) and isinstance(alt.get("properties"), dict):
        merged["properties"] = {**shared["properties"], **alt["properties"]}
    if isinstance(shared.get("required"), list) and isinstance(alt.get("required"), list):
        merged["required"] = list(dict.fromkeys([*shared["required"], *alt["required"]]))
    if "properties" not in merged and isinstance(shared.get("properties"), dict):
        merged["properties"] = shared["properties"]
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


def _plan_one(src: ModelSource, module: str) -> ModelPlan:
    mid = src.model_id
    pascal = _pascal(mid.split("/")[-1])
    task = src.task.lower()
    defs: dict[str, Any] = dict(src.definitions)
    used_names: set[str] = set(defs)

    def unique(name: str) -> str:
        n, i = name, 2
        while n in used_names:
            n, i = f"{name}{i}", i + 1
        used_names.add(n)
        return n

    # Outputs first, so input methods can be paired with them.
    root_ct = str(src.output.get("contentType") or JSON_TYPES)
    outputs: list[OutputVariant] = []
    for i, branch in enumerate(_branches(src.output)):
        ct = str(branch.get("contentType") or root_ct)
        title = str(branch.get("title") or "")
        if _is_binary(branch) or (ct != JSON_TYPES and branch.get("type") == "string"):
            kind = "stream" if ct == STREAM_TYPE else "binary"
            outputs.append(OutputVariant(i, None, kind, ct if ct != JSON_TYPES else "application/octet-stream", None))
            continue
        branch_props: Any = branch.get("properties")
        keys = sorted(branch_props) if isinstance(branch_props, dict) else []
        is_async = keys == ["request_id"]
        base = "AsyncResponse" if is_async else (_clean_title(title, mid) if title else "")
        if not base or base == "Model":
            base = _pascal("_".join(keys[:2])) if keys and len(outputs) else _pascal(src.task) if src.task else ""
        name = unique(f"{base}Output" if base and not is_async else (base or "Output"))
        body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
        defs[name] = body
        outputs.append(
            OutputVariant(i, name, "json", JSON_TYPES, _json_type(branch), keys, _title_words(title, mid), is_async)
        )

    inputs: list[InputVariant] = []
    method_names: set[str] = set()
    branches = _branches(src.input)
    for i, branch in enumerate(branches):
        title = str(branch.get("title") or "")
        desc = str(branch.get("description") or src.input.get("description") or "")
        raw_props: Any = branch.get("properties")
        props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
        required = [r for r in branch.get("required", []) if isinstance(r, str)]
        keys = sorted(props)
        if _is_binary(branch):
            kind, class_name = "binary", None
        else:
            kind = "requests" if "requests" in required else "object"
            base = _clean_title(title, mid) if title else ""
            if not base or base == "Model":
                base = _pascal("_".join(required[:2] or keys[:1] or ["body"]))
            class_name = unique(f"{base}Input")
            body = {k: v for k, v in branch.items() if k not in ("title", "contentType")}
            body.setdefault("type", "object")
            defs[class_name] = body
        method = _method_name(kind, required, keys, task, title, method_names, len(branches))
        method_names.add(method)
        streams = any(o.kind == "stream" for o in outputs) and "stream" in props
        binary_fields = {name: b for name, sub in props.items() if (b := _binary_kind(sub))}
        inputs.append(
            InputVariant(
                i, class_name, method, kind, required, keys, desc, _title_words(title, mid),
                streams=streams, binary_fields=binary_fields,
            )
        )

    _pair(inputs, outputs)
    doc = _reshape_for_msgspec(defs, inputs, outputs)
    rules = _dispatch_rules(outputs, doc["$defs"])
    price: Any = src.properties.get("price")
    handle = pascal if pascal not in used_names else f"{pascal}Model"
    used_names.add(handle)
    input_alias = unique(f"{pascal}Input")
    output_alias = unique(f"{pascal}Output")
    return ModelPlan(
        source=src,
        model_id=mid,
        module=module,
        pascal=pascal,
        handle=handle,
        input_alias=input_alias,
        output_alias=output_alias,
        inputs=inputs,
        outputs=outputs,
        doc=doc,
        rules=rules,
        streamable=any(o.kind == "stream" for o in outputs),
        batchable=any(v.kind == "requests" for v in inputs),
        price=price if isinstance(price, list) else [],
    )


def _method_name(
    kind: str, required: list[str], keys: list[str], task: str, title: str, taken: set[str], count: int
) -> str:
    candidates: list[str] = []
    for key in ("requests", "messages", "contexts"):
        if key in required:
            candidates.append(_KEY_VERBS[key])
    verb = _TASK_VERBS.get(task, "call")
    if kind == "binary":
        candidates.append(verb)
    candidates.append(verb)
    if title:
        candidates.append(_snake(title))
    if required:
        candidates.append(f"{verb}_{_snake(required[0])}")
    candidates.append(f"{verb}_{len(taken) + 1}")
    for name in candidates:
        if name not in taken and name not in _RESERVED_METHODS and not keyword.iskeyword(name):
            return name
    return f"call_{len(taken) + 1}"


_BYTE_HINTS = re.compile(r"8-bit|uint8|0 and 255|0-255|bytes? of|byte array", re.I)
_B64_HINTS = re.compile(r"base64|base-64", re.I)


def _binary_kind(schema: Any) -> str | None:
    """How a property carries binary data, if it does (raw bytes are accepted for all three)."""
    if not isinstance(schema, dict):
        return None
    if _is_binary(schema):
        return "bytes"
    text = " ".join(str(schema.get(k) or "") for k in ("description", "title"))
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        items = schema["items"]
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
    (words shared, Jaccard), and a unique best match wins. Anything else returns the output union.
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
        scored = []
        for out in sync_json:
            union = var.title_words | out.title_words
            score = len(var.title_words & out.title_words) / len(union) if union else 0.0
            scored.append((score, out))
        scored.sort(key=lambda s: -s[0])
        if scored and scored[0][0] > 0 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            var.output = scored[0][1]


# ----------------------------------------------------------------------------- msgspec-safe reshaping

_STRLIKE, _INTLIKE, _OBJLIKE, _ARRLIKE = "str", "int", "obj", "arr"


def _reshape_for_msgspec(
    defs: dict[str, Any], inputs: list[InputVariant], outputs: list[OutputVariant]
) -> dict[str, Any]:
    """Build the generator document and make every nested union one msgspec can decode.

    msgspec refuses unions holding two object-like (struct/dict), two array-like, two str-like or two
    int-like members. Nested alternatives like that are merged into one looser member; the variants at
    the root are never merged: they are told apart by the generated dispatch rules instead.
    """
    defs = copy.deepcopy(defs)
    variant_names = [v.class_name for v in inputs if v.class_name] + [o.class_name for o in outputs if o.class_name]
    canon = {_canonical(defs[n]): n for n in variant_names}

    def deref(node: Any) -> Any:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/$defs/"):
            return defs.get(node["$ref"][len("#/$defs/") :], {})
        return node

    def kind_of(node: Any) -> str | None:
        node = deref(node)
        if not isinstance(node, dict):
            return None
        t = node.get("type")
        if isinstance(t, list):
            return None
        if "enum" in node or "const" in node:
            vals = node.get("enum", [node.get("const")])
            if all(isinstance(v, str) for v in vals):
                return _STRLIKE
            if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
                return _INTLIKE
            return None
        if t == "string":
            return _STRLIKE
        if t == "integer":
            return _INTLIKE
        if t == "object" or (t is None and ("properties" in node or "additionalProperties" in node)):
            return _OBJLIKE
        if t == "array":
            return _ARRLIKE
        if t is None and isinstance(node.get("allOf"), list):
            return _OBJLIKE
        return None

    def merge(members: list[Any], kind: str) -> dict[str, Any]:
        nodes = [deref(m) for m in members]
        if kind == _STRLIKE:
            if any("enum" not in n and "const" not in n for n in nodes):
                return {"type": "string"}
            vals: list[Any] = []
            for n in nodes:
                for v in n.get("enum", [n.get("const")]):
                    if v not in vals:
                        vals.append(v)
            return {"type": "string", "enum": vals}
        if kind == _INTLIKE:
            return {"type": "integer"}
        if kind == _ARRLIKE:
            items = [n.get("items", {}) for n in nodes]
            return {"type": "array", "items": {"anyOf": items} if len(items) > 1 else items[0]}
        props: dict[str, list[Any]] = {}
        loose = False
        for n in nodes:
            n_props = n.get("properties")
            if isinstance(n_props, dict):
                for k, v in n_props.items():
                    props.setdefault(k, []).append(v)
            if not isinstance(n_props, dict) or n.get("additionalProperties") not in (None, False):
                loose = loose or not n_props
        if not props:
            return {"type": "object"}
        merged_props = {k: (vs[0] if len(vs) == 1 else {"anyOf": vs}) for k, vs in props.items()}
        out: dict[str, Any] = {"type": "object", "properties": merged_props}
        return out

    def fix(node: Any, top: bool) -> Any:
        if isinstance(node, list):
            return [fix(v, False) for v in node]
        if not isinstance(node, dict):
            return node
        if not top:
            key = _canonical(node)
            if key in canon:
                return {"$ref": f"#/$defs/{canon[key]}"}
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in ("enum", "const", "default", "examples", "required"):
                out[k] = v
            elif k in ("properties", "patternProperties") and isinstance(v, dict):
                out[k] = {name: fix(sub, False) for name, sub in v.items()}
            elif k == "pattern" and isinstance(v, str):
                if _compiles(v):
                    out[k] = v
            elif k == "format" and v != "binary":
                continue
            elif k in ("contentType", "title"):
                continue
            else:
                out[k] = fix(v, False)
        t = out.get("type")
        if isinstance(t, list):
            non_null = [x for x in t if x != "null"]
            if len(non_null) > 1:
                # Split so each member can be checked; the result goes through the union merge below.
                base = {k: v for k, v in out.items() if k != "type"}
                alts = [{**base, "type": x} for x in non_null]
                if "null" in t:
                    alts.append({"type": "null"})
                out = {"anyOf": alts}
        for comb in ("oneOf", "anyOf"):
            alts = out.get(comb)
            if not isinstance(alts, list):
                continue
            groups: dict[str, list[int]] = {}
            for i, alt in enumerate(alts):
                k = kind_of(alt)
                if k:
                    groups.setdefault(k, []).append(i)
            if all(len(ix) < 2 for ix in groups.values()):
                continue
            if all(isinstance(a, dict) and a.get("$ref", "")[len("#/$defs/") :] in variant_names for a in alts):
                continue  # batch items: a union of whole request variants, encoded only, checked one by one
            new_alts: list[Any] = []
            done: set[int] = set()
            for i, alt in enumerate(alts):
                if i in done:
                    continue
                k = kind_of(alt)
                if k and len(groups[k]) > 1:
                    members = [alts[j] for j in groups[k]]
                    done.update(groups[k])
                    new_alts.append(fix(merge(members, k), False))
                else:
                    new_alts.append(alt)
            out[comb] = new_alts if len(new_alts) > 1 else new_alts
            if len(new_alts) == 1:
                del out[comb]
                only = new_alts[0]
                if isinstance(only, dict):
                    out = {**out, **only}
        return out

    fixed = {name: fix(body, name in variant_names) for name, body in defs.items()}
    return {"$defs": fixed, "oneOf": [{"$ref": f"#/$defs/{n}"} for n in variant_names] or [{"type": "object"}]}


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _canonical(node: Any) -> str:
    """Structure-only JSON of a schema: wording (title, description) and ``contentType`` left out."""

    def strip(n: Any) -> Any:
        if isinstance(n, list):
            return [strip(v) for v in n]
        if not isinstance(n, dict):
            return n
        out: dict[str, Any] = {}
        for k, v in n.items():
            if k in ("title", "description", "contentType"):
                continue
            if k in ("properties", "patternProperties") and isinstance(v, dict):
                out[k] = {name: strip(sub) for name, sub in v.items()}
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

    Each rule is ``(variant_index, json_type, must_have_keys, key_shapes)``: the value's JSON type must
    match; it must carry one of ``must_have_keys`` (keys only this variant declares) when given; each
    ``(key, shape)`` in ``key_shapes`` must hold where the key is present (shape of the value or of its
    first item). Unknown extra keys never stop a match, so fields the API adds later are tolerated.
    """
    json_vars = [o for o in outputs if o.kind == "json" and o.class_name]
    shapes: dict[str, dict[str, str]] = {}
    for o in json_vars:
        body = defs.get(o.class_name or "", {})
        props = body.get("properties") if isinstance(body, dict) else None
        shapes[o.class_name or ""] = {k: _shape(v, defs) for k, v in (props or {}).items()}
    rules: list[tuple[Any, ...]] = []
    for o in json_vars:
        mine = shapes[o.class_name or ""]
        others = [shapes[x.class_name or ""] for x in json_vars if x is not o and x.json_type == o.json_type]
        all_other_keys = set().union(*others) if others else set()
        unique = sorted(set(mine) - all_other_keys)
        checks = sorted(
            (k, s)
            for k, s in mine.items()
            if s != "any" and any(k in other and other[k] != s for other in others)
        )
        rules.append((o.index, o.json_type or "any", tuple(unique), tuple(checks)))
    # Most specific first: variants with unique keys, then with shape checks, then by key count.
    rules.sort(key=lambda r: (not r[2], not r[3], -len(shapes_for(r, json_vars, shapes)), r[0]))
    return rules


def shapes_for(rule: tuple[Any, ...], json_vars: list[OutputVariant], shapes: dict[str, dict[str, str]]) -> dict[str, str]:
    for o in json_vars:
        if o.index == rule[0]:
            return shapes[o.class_name or ""]
    return {}


def _shape(schema: Any, defs: dict[str, Any]) -> str:
    """A coarse JSON shape: 'string', 'number', 'object', 'array<object>', 'array<array>', ..."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if not isinstance(schema, dict):
        return "any"
    t = schema.get("type")
    if t == "integer":
        t = "number"
    if t == "array":
        items = schema.get("items")
        inner = _shape(items, defs) if isinstance(items, dict) else "any"
        return f"array<{inner.split('<')[0]}>"
    if isinstance(t, str):
        return t
    if "properties" in schema:
        return "object"
    return "any"
