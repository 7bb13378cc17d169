"""The realtime (WebSocket) side of a model: its ``x-realtime`` section planned into a ``*_live`` module.

A realtime model's schema file (catalog property ``realtime: "true"``) may carry our own section::

    "x-realtime": {
      "kind": "listen" | "speak",          # speech to text, or text to speech
      "method": "listen",                  # the handle method that opens a session
      "options": {JSON schema},            # the query parameters, typed (an object schema with a title)
      "events": {"Results": {"schema": {...}, "class": "...",
                             "shortcuts": {"transcript": {"path": "/a/0/b", "default": ""}}}},
      "send": {"keepalive": {...} | null, "finalize": ..., "close": ..., "speak"/"flush"/"clear": ...},
      "keepalive_seconds": 4.0, "keepalive_silence_ms": 80,
      "rest": false,                       # served only over WebSocket: the handle gets no REST methods
      "facts": [{"fact": "...", "source": "https://..."}]
    }

``options`` and every event's ``schema`` go through the same struct pipeline as the REST halves
(``reshape.reshape`` -> ``structs.build_types`` -> datamodel-code-generator via ``struct_printer``):
options are an input struct (UNSET defaults, a TypedDict twin the handle method takes as keyword
arguments), events are output structs. Each event becomes a tagged subclass (``tag_field="type"``) of
its wire struct, with read-only ``shortcuts`` (``Results.transcript`` = ``channel.alternatives[0].transcript``).
Nothing here touches the REST plan: ``plan`` asks :func:`plan_realtime` for each model and keeps the result
in ``ModelPlan.realtime``; ``render`` prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .load import ModelSource
from .plan_base import PlanError, merge_imports
from .reshape import reshape
from .schema_walk import as_list, as_map
from .struct_schema import struct_document
from .structs import StructPlan, TwinLayout, build_types, default_code, names_in, twin_layout

__all__ = ["EventPlan", "RealtimePlan", "ShortcutPlan", "plan_realtime"]

SECTION = "x-realtime"
_KINDS = ("listen", "speak")
_SEND_KEYS = {"listen": ("keepalive", "finalize", "close"), "speak": ("speak", "flush", "clear", "close")}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ShortcutPlan:
    name: str
    chain: str  # Python expression on ``self`` (``self.channel.alternatives[0].transcript``)
    annotation: str
    default: str  # Python expression returned when a list on the way is empty
    doc: str


@dataclass(frozen=True)
class EventPlan:
    tag: str  # the wire ``type``
    class_name: str  # the tagged class users see
    wire: str  # its fields' struct (generated)
    shortcuts: tuple[ShortcutPlan, ...]


@dataclass(frozen=True)
class RealtimePlan:
    model_id: str
    module: str  # e.g. models.cf.deepgram.nova_3_live
    kind: str
    method: str
    options: str  # the options struct
    options_dict: str  # its TypedDict twin (the handle method's keyword arguments)
    event_alias: str  # the union of events (plus RawEvent)
    events: tuple[EventPlan, ...]
    structs: tuple[StructPlan, ...]
    struct_doc: str
    imports: tuple[str, ...]
    send: dict[str, Any]
    keepalive_seconds: float | None
    keepalive_silence_ms: int | None
    final: dict[str, Any] | None  # which event carries a final transcript, and where
    facts: tuple[tuple[str, str], ...]
    label: str
    twins: TwinLayout  # how its TypedDict twins are printed


def _fail(src: ModelSource, message: str) -> PlanError:
    return PlanError(src.file, f"{SECTION}: {message}")


def plan_realtime(src: ModelSource, module: str, handle: str, package: str) -> RealtimePlan | None:
    """The live module of ``src``, or None when its file has no ``x-realtime`` section."""
    section = as_map(src.catalog.get(SECTION))
    if section is None:
        return None
    kind = section.get("kind")
    if kind not in _KINDS:
        raise _fail(src, f"kind must be one of {list(_KINDS)}")
    method = section.get("method")
    if not isinstance(method, str) or not method.isidentifier():
        raise _fail(src, "method must be a Python identifier")
    options = as_map(section.get("options"))
    events = as_map(section.get("events"))
    if options is None or options.get("type") != "object" or not isinstance(options.get("title"), str):
        raise _fail(src, "options must be an object schema with a title")
    if not events:
        raise _fail(src, "events must name at least one event")
    facts: list[tuple[str, str]] = []
    for i, raw in enumerate(as_list(section.get("facts")) or []):
        fact = as_map(raw) or {}
        if not isinstance(fact.get("fact"), str) or not str(fact.get("source", "")).startswith("https://"):
            raise _fail(src, f"facts/{i} needs a 'fact' sentence and an https 'source'")
        facts.append((str(fact["fact"]), str(fact["source"])))
    send = as_map(section.get("send")) or {}
    for key in _SEND_KEYS[str(kind)]:
        if key not in send:
            raise _fail(src, f"send/{key} is missing (null when the model has no such message)")

    opt_name = str(options["title"])
    defs: dict[str, Any] = {opt_name: {k: v for k, v in options.items() if k != "title"}}
    drafts: list[tuple[str, str, str, dict[str, Any]]] = []
    for tag, raw in events.items():
        event = as_map(raw) or {}
        schema = as_map(event.get("schema"))
        if (
            schema is None
            or not isinstance(schema.get("title"), str)
            or "type" in (as_map(schema.get("properties")) or {})
        ):
            raise _fail(src, f"events/{tag}: needs a titled object schema without a 'type' property (the tag)")
        cls = str(event.get("class") or tag)
        if not _IDENT.fullmatch(cls) or not _IDENT.fullmatch(tag):
            raise _fail(src, f"events/{tag}: the tag and class must be identifiers")
        wire = str(schema["title"])
        defs[wire] = {k: v for k, v in schema.items() if k != "title"}
        drafts.append((tag, cls, wire, as_map(event.get("shortcuts")) or {}))
    variants = [opt_name, *(d[2] for d in drafts)]
    warnings: list[str] = []
    doc = reshape(defs, variants, warnings, src.file)
    shaped = as_map(doc["$defs"]) or {}
    reserved = {handle, *(d[1] for d in drafts), "RawEvent", "Any", "Literal", "TypeAlias"}
    types = build_types(shaped, variants, [opt_name], reserved)
    by_name = {s.name: s for s in types.structs}
    if opt_name not in by_name or any(d[2] not in by_name for d in drafts):
        raise _fail(src, "options and every event must be object schemas")
    plans = tuple(
        EventPlan(tag, cls, wire, tuple(_shortcut(src, by_name, wire, n, s) for n, s in cuts.items()))
        for tag, cls, wire, cuts in drafts
    )
    alias = f"{handle}Event"
    texts = [t for s in types.structs for f in s.fields for t in (f.annotation, f.loose)]
    texts += [c.annotation for e in plans for c in e.shortcuts]
    need = _imports(texts, types.structs, module)
    keepalive = section.get("keepalive_seconds")
    silence = section.get("keepalive_silence_ms")
    return RealtimePlan(
        model_id=src.model_id,
        module=module,
        kind=str(kind),
        method=method,
        options=opt_name,
        options_dict=f"{opt_name}Dict",
        event_alias=alias,
        events=plans,
        structs=types.structs,
        struct_doc=struct_document(types.structs, {}, package),
        imports=tuple(merge_imports(need)),
        send={k: send[k] for k in _SEND_KEYS[str(kind)]},
        keepalive_seconds=float(keepalive) if isinstance(keepalive, (int, float)) else None,
        keepalive_silence_ms=int(silence) if isinstance(silence, int) else None,
        final=_final(src, section, events),
        facts=tuple(facts),
        label=src.label,
        twins=twin_layout(types.structs),
    )


def _final(src: ModelSource, section: dict[str, Any], events: dict[str, Any]) -> dict[str, Any] | None:
    """``final``: ``{"event": tag, "when": {field: value}, "text": "/json/pointer"}`` (speech-to-text only)."""
    final = as_map(section.get("final"))
    if final is None:
        return None
    if (
        final.get("event") not in events
        or as_map(final.get("when")) is None
        or not str(final.get("text", "")).startswith("/")
    ):
        raise _fail(src, "final needs an event tag, a 'when' object and a 'text' JSON pointer")
    parts = [int(p) if p.isdigit() else p for p in str(final["text"]).split("/")[1:]]
    return {"event": final["event"], "when": final["when"], "text": parts}


def _shortcut(src: ModelSource, structs: dict[str, StructPlan], root: str, name: str, raw: Any) -> ShortcutPlan:
    """``path`` (a JSON pointer through required fields and list indexes) as a typed Python chain."""
    spec = as_map(raw) or {}
    path = spec.get("path")
    if not name.isidentifier() or not isinstance(path, str) or not path.startswith("/"):
        raise _fail(src, f"shortcut {name!r} needs an identifier name and a JSON pointer 'path'")
    chain, annotation = "self", root
    for part in path.split("/")[1:]:
        if part.isdigit():
            if not annotation.startswith("list[") or not annotation.endswith("]"):
                raise _fail(src, f"shortcut {name}: {path} indexes {annotation}, not a list")
            chain, annotation = f"{chain}[{part}]", annotation[5:-1]
            continue
        struct = structs.get(annotation)
        found = next((f for f in struct.fields if f.wire == part), None) if struct else None
        if found is None or not found.required:
            raise _fail(src, f"shortcut {name}: {path} must go through required fields ({part!r} is not one)")
        chain, annotation = f"{chain}.{found.name}", found.plain
    return ShortcutPlan(name, chain, annotation, default_code(spec.get("default")), f"``{path[1:]}``")


def _imports(texts: list[str], structs: tuple[StructPlan, ...], module: str) -> dict[str, set[str]]:
    used = set[str]().union(*(names_in(t) for t in texts)) if texts else set[str]()
    need: dict[str, set[str]] = {"typing": {"TypeAlias", "TypedDict"} | ({"Any", "Literal", "Annotated"} & used)}
    abc = {"Sequence", "Mapping"} & used
    if abc:
        need["collections.abc"] = abc
    ms = {"Meta", "UnsetType"} & used
    if ms:
        need["msgspec"] = ms
    depth = module.count(".") + 1
    need["." * depth + "realtime"] = {"RawEvent", "RealtimeSpec"}
    return need
