"""Variants: split input/output roots into alternatives, name methods, pair inputs with outputs,
and derive the rules that tell untagged output variants apart."""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .naming import KEY_VERBS, RESERVED_METHODS, TASK_VERBS, snake
from .reshape import DEF_PREFIX
from .schema_walk import as_list, as_map

__all__ = [
    "JSON_TYPES",
    "STREAM_TYPE",
    "DispatchRule",
    "InputDraft",
    "OutputDraft",
    "binary_kind",
    "branches",
    "dispatch_rules",
    "drop_unused",
    "inline_ref",
    "is_binary",
    "json_type",
    "method_name",
    "pair",
    "tool_form",
    "variant_schemas",
]

JSON_TYPES = "application/json"
STREAM_TYPE = "text/event-stream"


@dataclass
class OutputDraft:
    """An output alternative while planning (``plan.OutputPlan`` is the finished, frozen form)."""

    index: int
    class_name: str | None  # None for binary/stream variants (no struct)
    kind: str  # "json", "binary", "stream"
    content_type: str
    json_type: str | None
    title_words: set[str] = field(default_factory=set[str])
    is_async: bool = False


@dataclass
class InputDraft:
    """An input alternative while planning: one method of the handle."""

    index: int
    class_name: str | None  # None for raw-binary bodies
    method: str
    kind: str  # "object", "binary", "requests", "json"
    required: list[str]
    description: str
    title_words: set[str] = field(default_factory=set[str])
    output: OutputDraft | None = None
    streams: bool = False
    binary_fields: dict[str, str] = field(default_factory=dict[str, str])
    tool_form: str | None = None  # "flat" ({name, parameters}) or "openai" ({type, function}): how `tools` go out


def inline_ref(schema: dict[str, Any], defs: dict[str, Any], inlined: set[str]) -> dict[str, Any]:
    """A schema that is only a ``$ref`` to a definition (plus annotations), replaced by that definition.

    The root of an input or output (and each of its alternatives) must be a schema of its own: the
    plan names a struct after it. ``inlined`` collects the definitions used so; ``_drop_unused``
    removes those nothing else refers to (the struct generator would merge the twins otherwise).
    """
    seen: set[str] = set()
    while True:
        ref = schema.get("$ref")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        parts = as_list(schema.get("allOf"))
        if ref is None and parts is not None and len(parts) == 1 and list(as_map(parts[0]) or {}) == ["$ref"]:
            ref = (as_map(parts[0]) or {}).get("$ref")  # how `load` keeps a `$ref` that has sibling keywords
            rest = {k: v for k, v in schema.items() if k != "allOf"}
        if not isinstance(ref, str) or not ref.startswith(DEF_PREFIX):
            return schema
        name = ref[len(DEF_PREFIX) :]
        target = as_map(defs.get(name))
        if target is None or name in seen:
            return schema
        seen.add(name)
        inlined.add(name)
        schema = {**target, **rest}


def _tool_shapes(node: Any, defs: dict[str, Any], depth: int = 0) -> set[str]:
    """Which request forms a ``tools`` item schema admits: "flat" (``name`` at the top) and/or "openai"
    (a ``function`` object)."""
    obj = as_map(node)
    if obj is None or depth > 8:
        return set()
    obj = inline_ref(obj, defs, set())
    found: set[str] = set()
    for key in ("anyOf", "oneOf", "allOf"):
        for alt in as_list(obj.get(key)) or []:
            found |= _tool_shapes(alt, defs, depth + 1)
    props = as_map(obj.get("properties")) or {}
    if "function" in props:
        found.add("openai")
    if "name" in props:
        found.add("flat")
    return found


def tool_form(tools: Any, defs: dict[str, Any], openai_output: bool) -> str | None:
    """How this input's ``tools`` are sent: the model's native form when its schema admits both (OpenAI's
    for models answering in OpenAI's shape, else the classic flat one); None without ``tools``."""
    schema = as_map(tools)
    if schema is None:
        return None
    schema = inline_ref(schema, defs, set())
    shapes = _tool_shapes(schema.get("items"), defs)
    if not shapes:
        return None
    if len(shapes) == 1:
        return next(iter(shapes))
    return "openai" if openai_output else "flat"


def drop_unused(defs: dict[str, Any], names: set[str]) -> None:
    for name in sorted(names):
        others = json.dumps({k: v for k, v in defs.items() if k != name})
        if json.dumps(f"{DEF_PREFIX}{name}") not in others:
            defs.pop(name, None)


def variant_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of an input or output root, as the plan numbers them (``InputDraft.index``)."""
    return branches(schema)


def branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a root schema into its alternatives, merging the root's shared keywords into each."""
    for comb in ("oneOf", "anyOf"):
        alts = as_list(schema.get(comb))
        if alts:
            shared = {k: v for k, v in schema.items() if k not in (comb, "title", "description")}
            out: list[dict[str, Any]] = []
            for raw in alts:
                alt = as_map(raw)
                if alt is None:
                    continue
                merged = _merge_shared(shared, alt)
                if any(as_list(merged.get(c)) is not None for c in ("oneOf", "anyOf")) and not merged.get("properties"):
                    out.extend(branches(merged))
                else:
                    out.append(merged)
            return out
    parts = as_list(schema.get("allOf"))
    if parts is not None:
        plain = [as_map(p) for p in parts]
        if all(p is not None and "$ref" not in p for p in plain):
            combined: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in plain:
                combined = _merge_shared(combined, part or {})
            return branches(combined) if any(c in combined for c in ("oneOf", "anyOf")) else [combined]
    return [schema]


def _merge_shared(shared: dict[str, Any], alt: dict[str, Any]) -> dict[str, Any]:
    merged = {**shared, **alt}
    shared_props, alt_props = as_map(shared.get("properties")), as_map(alt.get("properties"))
    if shared_props is not None and alt_props is not None:
        merged["properties"] = {**shared_props, **alt_props}
    shared_req, alt_req = as_list(shared.get("required")), as_list(alt.get("required"))
    if shared_req is not None and alt_req is not None:
        merged["required"] = list(dict.fromkeys([*shared_req, *alt_req]))
    if "properties" not in merged and shared_props is not None:
        merged["properties"] = shared_props
    return merged


def is_binary(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and schema.get("format") == "binary"


def json_type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, str):
        return t
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "any"


def method_name(
    kind: str, required: list[str], task: str, title: str, taken: set[str], streams: bool, keys: Sequence[str] = ()
) -> str:
    candidates: list[str] = []
    for key in ("requests", "messages", "contexts"):
        if key in required:
            candidates.append(KEY_VERBS[key])
    verb = TASK_VERBS.get(task, "call")
    candidates.append(verb)
    if title:
        candidates.append(snake(title))
    if required:
        candidates.append(f"{verb}_{snake(required[0])}")
    candidates.extend(f"{verb}_{snake(k)}" for k in keys)
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


def binary_kind(raw: Any) -> str | None:
    """How a property carries binary data, if it does (raw bytes are accepted for all three)."""
    schema = as_map(raw)
    if schema is None:
        return None
    if is_binary(schema):
        return "bytes"
    text = " ".join(str(schema.get(k) or "") for k in ("description", "title"))
    items = as_map(schema.get("items"))
    if schema.get("type") == "array" and items is not None:
        item_text = " ".join(str(items.get(k) or "") for k in ("description", "title"))
        if items.get("type") in ("integer", "number") and (
            _BYTE_HINTS.search(text + " " + item_text) or (items.get("minimum") == 0 and items.get("maximum") == 255)
        ):
            return "uint8"
    if schema.get("type") == "string" and _B64_HINTS.search(text):
        return "base64"
    return None


def pair(inputs: list[InputDraft], outputs: list[OutputDraft]) -> None:
    """Pair each input variant with the output variant it returns, when the schema makes it clear.

    Rule: batch (`requests`) variants return a batch job. Otherwise, if the model has exactly one
    synchronous JSON output variant, that is the answer. Otherwise the variant titles are compared
    (words shared, Jaccard, plurals folded, "messages" also read as "chat" and "prompt" as "text"), and
    a unique best match wins. A prompt variant that matches no title, on a model with exactly one chat
    completion output and no text completion one, returns the chat completion (OpenAI-shaped models such
    as gpt-oss answer a prompt as they answer messages). Anything else returns the output union.
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
        scored: list[tuple[float, OutputDraft]] = []
        for out in sync_json:
            union = var.title_words | out.title_words
            score = len(var.title_words & out.title_words) / len(union) if union else 0.0
            scored.append((score, out))
        scored.sort(key=lambda s: -s[0])
        if scored and scored[0][0] > 0 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            var.output = scored[0][1]
            continue
        chats = [o for o in sync_json if {"chat", "completion"} <= o.title_words]
        texts = [o for o in sync_json if {"text", "completion"} <= o.title_words]
        if "prompt" in var.title_words and len(chats) == 1 and not texts:
            var.output = chats[0]


@dataclass(frozen=True)
class DispatchRule:
    """How the runtime tells one JSON output variant from the others (printed as a ``Variant`` record of
    ``_core.decode``): the value's JSON type, the keys only this variant declares, the JSON shape a key
    must have where it differs between variants, and enum values only this variant declares for a key."""

    index: int  # the output alternative it picks
    json_type: str
    own_keys: tuple[str, ...]
    key_shapes: tuple[tuple[str, str], ...]
    own_values: tuple[tuple[str, tuple[Any, ...]], ...]


def dispatch_rules(outputs: list[OutputDraft], defs: dict[str, Any]) -> list[DispatchRule]:
    """Rules that pick an output variant from a decoded JSON value, most specific first.

    The value's JSON type must match; a key only this variant declares counts for it; each key shape must
    hold where the key is present (shape of the value or of its first item); a value only this variant
    declares for a key counts most. Unknown extra keys never stop a match, so fields the API adds later
    are tolerated.
    """
    json_vars = [o for o in outputs if o.kind == "json" and o.class_name]
    shapes: dict[str, dict[str, str]] = {}
    for o in json_vars:
        props = as_map((as_map(defs.get(o.class_name or "")) or {}).get("properties")) or {}
        shapes[o.class_name or ""] = {k: _shape(v, defs) for k, v in props.items()}
    rules: list[DispatchRule] = []
    for o in json_vars:
        mine = shapes[o.class_name or ""]
        others = [shapes[x.class_name or ""] for x in json_vars if x is not o and x.json_type == o.json_type]
        all_other_keys: set[str] = set()
        for other in others:
            all_other_keys.update(other)
        unique = sorted(set(mine) - all_other_keys) if others else []  # alone of its JSON type: nothing to tell
        checks = sorted(
            (k, s) for k, s in mine.items() if s != "any" and any(k in other and other[k] != s for other in others)
        )
        tags = _tags(o, [x for x in json_vars if x is not o and x.json_type == o.json_type], defs)
        rules.append(DispatchRule(o.index, o.json_type or "any", tuple(unique), tuple(checks), tags))
    counts = {o.index: len(shapes[o.class_name or ""]) for o in json_vars}
    # Most specific first: variants with unique keys, then with shape checks, then by key count.
    rules.sort(key=lambda r: (not r.own_keys, not r.key_shapes, -counts[r.index], r.index))
    return rules


def _enum_values(body: Any, key: str, defs: dict[str, Any]) -> list[Any] | None:
    props = as_map((as_map(body) or {}).get("properties")) or {}
    sub = as_map(props.get(key))
    ref = sub.get("$ref") if sub is not None else None
    if isinstance(ref, str):
        sub = as_map(defs.get(ref.rsplit("/", 1)[-1]))
    values = as_list(sub.get("enum")) if sub is not None else None
    if values is None:
        return None
    return [v for v in values if isinstance(v, (str, int)) and not isinstance(v, bool)]


def _tags(o: OutputDraft, others: list[OutputDraft], defs: dict[str, Any]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """(key, values) pairs where this variant declares enum values for a key that no other variant allows.

    A chat completion says ``object: "chat.completion"``, a text completion ``"text_completion"``: the
    keys and shapes match, the value tells them apart. The runtime treats a match as strong evidence,
    and a value nobody declares as no evidence (so new values the API adds still decode).
    """
    body = as_map(defs.get(o.class_name or "")) or {}
    props = as_map(body.get("properties")) or {}
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
    schema = as_map(raw)
    ref = schema.get("$ref") if schema is not None else None
    if isinstance(ref, str):
        schema = as_map(defs.get(ref.rsplit("/", 1)[-1], {}))
    if schema is None:
        return "any"
    t = schema.get("type")
    if t == "integer":
        t = "number"
    if t == "array":
        items = as_map(schema.get("items"))
        inner = _shape(items, defs) if items is not None else "any"
        return f"array<{inner.split('<')[0]}>"
    if isinstance(t, str):
        return t
    if "properties" in schema:
        return "object"
    return "any"
