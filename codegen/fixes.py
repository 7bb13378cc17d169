"""Per-model repairs of known slips in the published schemas and model listings.

Each repair checks that it is still needed (so it is idempotent: applied to our own file it changes
nothing), changes the shape in place and says what it did in a note that ends up in the file's
``x-notes``. Repairs that apply to every model are rules in ``normalise``; this table is for the few
models whose published facts are wrong or incomplete in a way only that model has.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .schema_walk import as_list, as_map, branches

__all__ = ["apply_fixes", "apply_property_fixes"]

SchemaFix = Callable[[dict[str, Any], dict[str, Any], list[str]], None]
PropertyFix = Callable[[list[dict[str, Any]], list[str]], None]


def _bge_m3_split_contexts(union: dict[str, Any], where: str, notes: list[str]) -> None:
    """bge-m3's query/contexts variant has an optional ``query`` that decides what comes back (scores
    with it, embeddings without); state it as two variants so each method has one return type."""
    kind, items = branches(union)
    if kind is None:
        return
    with_query = [b for b in items if {"query", "contexts"} <= set(as_map(b.get("properties")) or {})]
    without = [b for b in items if "contexts" in (as_map(b.get("properties")) or {}) and "query" not in b["properties"]]
    if not with_query or without:
        return
    scored = with_query[0]
    if "query" not in (as_list(scored.get("required")) or []):
        scored["required"] = ["query", *[n for n in as_list(scored.get("required")) or [] if n != "query"]]
    embed = copy.deepcopy(scored)
    embed["properties"].pop("query", None)
    embed["required"] = ["contexts"]
    embed.pop("title", None)
    branch_list = as_list(union[kind]) or []
    texts = [i for i, b in enumerate(branch_list) if "text" in (as_map((as_map(b) or {}).get("properties")) or {})]
    branch_list.insert((texts[0] + 1) if texts else len(branch_list), embed)
    notes.append(
        f"{where}: the published query/contexts variant makes `query` optional and returns scores with it, "
        "embeddings without; stated here as a variant that requires `query` and one without it."
    )


def _bge_m3(inp: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
    _bge_m3_split_contexts(inp, "/schema/input/oneOf", notes)
    kind, items = branches(inp)
    for branch in items if kind else []:
        requests = as_map((as_map(branch.get("properties")) or {}).get("requests"))
        inner = as_map(requests.get("items")) if requests is not None else None
        if inner is not None:
            _bge_m3_split_contexts(inner, "/schema/input/oneOf/requests/items/oneOf", notes)


SCHEMA_FIXES: dict[str, SchemaFix] = {
    "@cf/baai/bge-m3": _bge_m3,
}


def _bge_m3_async(props: list[dict[str, Any]], notes: list[str]) -> None:
    if not any(p.get("property_id") == "async_queue" for p in props):
        props.insert(0, {"property_id": "async_queue", "value": "true"})
        notes.append("properties: bge-m3 takes async batches (its input has a `requests` variant); listed here.")


def _bge_small_info(props: list[dict[str, Any]], notes: list[str]) -> None:
    right = "https://huggingface.co/BAAI/bge-small-en-v1.5"
    for prop in props:
        if prop.get("property_id") == "info" and prop.get("value") != right:
            prop["value"] = right
            notes.append("properties: the published `info` link points at bge-base; it is the bge-small model card.")


PROPERTY_FIXES: dict[str, PropertyFix] = {
    "@cf/baai/bge-m3": _bge_m3_async,
    "@cf/baai/bge-small-en-v1.5": _bge_small_info,
}


def apply_fixes(model_id: str, inp: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
    """Apply the model's schema repair, if it has one (in place)."""
    fix = SCHEMA_FIXES.get(model_id)
    if fix is not None:
        fix(inp, out, notes)


def apply_property_fixes(model_id: str, props: list[dict[str, Any]], notes: list[str]) -> None:
    """Apply the model's listing repair, if it has one (in place)."""
    fix = PROPERTY_FIXES.get(model_id)
    if fix is not None:
        fix(props, notes)
