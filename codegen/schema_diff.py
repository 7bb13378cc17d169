"""What changed between two versions of a model's schema file, in a reviewer's terms.

Prose (descriptions, titles) and notes are not compared; everything that shapes the generated code is:
variants added or removed, properties added or removed, types, constraints, enums, defaults,
``required`` lists and content types, each located by a JSON pointer into the new file (into the old
one for things that were removed), plus the model's task and listed properties.
"""

from __future__ import annotations

import json
from typing import Any

from .normalise import PROSE_KEYS
from .prose import pair_variants
from .schema_walk import LIST_KEYS, MAP_KEYS, SUB_KEYS, as_list, as_map, escape

__all__ = ["diff_docs"]


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _label(node: dict[str, Any]) -> str:
    title = node.get("title")
    props = list(as_map(node.get("properties")) or {})
    if isinstance(title, str) and title:
        return f'"{title}"'
    if props:
        return "{" + ", ".join(props[:5]) + (", ..." if len(props) > 5 else "") + "}"
    what = node.get("contentType") or node.get("format") or node.get("type") or "any"
    return f"<{what}>"


def _diff(old: Any, new: Any, ptr: str, out: list[str]) -> None:
    o, n = as_map(old), as_map(new)
    if o is None or n is None:
        if old != new:
            out.append(f"{ptr or '/'}: {_show(old)} -> {_show(new)}")
        return
    for key in [*o, *[k for k in n if k not in o]]:
        if key in PROSE_KEYS:
            continue
        where = f"{ptr}/{escape(key)}"
        a, b = o.get(key), n.get(key)
        if key in MAP_KEYS and (as_map(a) is not None or as_map(b) is not None):
            ma, mb = as_map(a) or {}, as_map(b) or {}
            for name in mb:
                if name not in ma:
                    out.append(f"property added: {where}/{escape(name)} ({_kind(mb[name])})")
            for name in ma:
                if name not in mb:
                    out.append(f"property removed: {where}/{escape(name)}")
            for name in ma:
                if name in mb:
                    _diff(ma[name], mb[name], f"{where}/{escape(name)}", out)
        elif key in LIST_KEYS and (as_list(a) is not None or as_list(b) is not None):
            la = [x for x in (as_map(v) for v in as_list(a) or []) if x is not None]
            lb = [x for x in (as_map(v) for v in as_list(b) or []) if x is not None]
            pairs = pair_variants(lb, la)
            for i, (branch, match) in enumerate(zip(lb, pairs, strict=True)):
                if match is None:
                    out.append(f"variant added: {where}/{i} {_label(branch)}")
                else:
                    _diff(match, branch, f"{where}/{i}", out)
            kept = [id(m) for m in pairs if m is not None]
            for j, branch in enumerate(la):
                if id(branch) not in kept:
                    out.append(f"variant removed: {ptr}/{escape(key)}/{j} (old numbering) {_label(branch)}")
        elif key in SUB_KEYS and as_map(a) is not None and as_map(b) is not None:
            _diff(a, b, where, out)
        elif key == "required":
            ra = [x for x in as_list(a) or [] if isinstance(x, str)]
            rb = [x for x in as_list(b) or [] if isinstance(x, str)]
            plus, minus = [x for x in rb if x not in ra], [x for x in ra if x not in rb]
            if plus:
                out.append(f"now required: {where} {_show(plus)}")
            if minus:
                out.append(f"no longer required: {where} {_show(minus)}")
        elif key == "enum" and as_list(a) is not None and as_list(b) is not None:
            ea, eb = as_list(a) or [], as_list(b) or []
            plus, minus = [x for x in eb if x not in ea], [x for x in ea if x not in eb]
            if plus or minus:
                out.append(f"enum changed: {where} added {_show(plus)}, removed {_show(minus)}")
        elif key not in n:
            out.append(f"removed: {where} (was {_show(a)})")
        elif key not in o:
            out.append(f"added: {where} = {_show(b)}")
        elif a != b:
            what = "type changed" if key == "type" else "changed"
            out.append(f"{what}: {where} {_show(a)} -> {_show(b)}")


def _kind(node: Any) -> str:
    obj = as_map(node) or {}
    kind = obj.get("type")
    if kind is None:
        for key in ("oneOf", "anyOf", "allOf"):
            if key in obj:
                return key
        return "any"
    return _show(kind).strip('"')


def diff_docs(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Reviewer-facing differences between two schema files of one model (empty: same generated code)."""
    out: list[str] = []
    ot, nt = as_map(old.get("task")) or {}, as_map(new.get("task")) or {}
    if ot.get("name") != nt.get("name"):
        out.append(f"task changed: {_show(ot.get('name'))} -> {_show(nt.get('name'))}")
    op = {
        str(p.get("property_id")): p.get("value")
        for p in (as_map(x) or {} for x in as_list(old.get("properties")) or [])
    }
    np_ = {
        str(p.get("property_id")): p.get("value")
        for p in (as_map(x) or {} for x in as_list(new.get("properties")) or [])
    }
    for key in sorted(set(op) | set(np_)):
        if key not in op:
            out.append(f"listing property added: {key} = {_show(np_[key])}")
        elif key not in np_:
            out.append(f"listing property removed: {key}")
        elif op[key] != np_[key]:
            out.append(f"listing property changed: {key} {_show(op[key])} -> {_show(np_[key])}")
    os_ = as_map(old.get("schema")) or (old if "input" in old else {})  # a bare {input, output} file
    ns = as_map(new.get("schema")) or {}
    for half in ("input", "output"):
        _diff(os_.get(half), ns.get(half), f"/schema/{half}", out)
    return out
