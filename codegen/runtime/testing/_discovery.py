"""The discovery routes: ``models/search``, ``models/schema``, ``tasks/search`` and ``authors/search``."""

from __future__ import annotations

from typing import Any, cast

import msgspec

from ._catalog import Catalog, model_object, stable_id
from ._reply import JSON, APIError, Reply, json_reply

__all__ = ["listing", "schema", "search"]


def _number(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise APIError(400, 5006, f"AiError: Bad input: query parameter {name} must be an integer") from None
    if value < 1:
        raise APIError(400, 5006, f"AiError: Bad input: query parameter {name} must be >= 1")
    return value


def search(catalog: Catalog, params: dict[str, str]) -> Reply:
    page, per_page = _number(params, "page", 1), _number(params, "per_page", 50)
    text = params.get("search", "").lower()
    task = params.get("task", "").lower()
    author = params.get("author", "").lower()
    found: list[dict[str, Any]] = []
    for model_id in catalog.ids():
        spec = catalog.get(model_id)
        if spec is None:
            continue
        obj = model_object(spec)
        task_obj = cast("dict[str, Any]", obj["task"])
        if text and text not in model_id.lower() and text not in str(obj["description"]).lower():
            continue
        if task and task not in (str(task_obj["name"]).lower(), str(task_obj["id"]).lower()):
            continue
        parts = model_id.split("/")
        if author and (len(parts) < 2 or parts[1].lower() != author):
            continue
        found.append(obj)
    chunk = found[(page - 1) * per_page : page * per_page]
    info = {"count": len(chunk), "page": page, "per_page": per_page, "total_count": len(found)}
    body = msgspec.json.encode({"result": chunk, "result_info": info, "success": True, "errors": [], "messages": []})
    return Reply(200, [("content-type", JSON)], body)


def schema(catalog: Catalog, params: dict[str, str]) -> Reply:
    model_id = params.get("model", "")
    if not model_id:
        raise APIError(400, 5006, "AiError: Bad input: the model query parameter is required")
    spec = catalog.get(model_id)
    if spec is None:
        raise APIError(400, 5007, f"No such model {model_id} or task")
    return json_reply({"input": spec.input_schema, "output": spec.output_schema})


def listing(catalog: Catalog, kind: str) -> Reply:
    """``tasks`` or ``authors``: one entry per distinct task or author of the served models."""
    seen: dict[str, dict[str, Any]] = {}
    for model_id in catalog.ids():
        spec = catalog.get(model_id)
        if spec is None:
            continue
        if kind == "tasks":
            t = cast("dict[str, Any]", model_object(spec)["task"])
            seen.setdefault(str(t["name"]), t)
        else:
            parts = model_id.split("/")
            name = parts[1] if len(parts) > 1 else model_id
            seen.setdefault(name, {"id": stable_id("author:" + name), "name": name, "description": ""})
    return json_reply([seen[k] for k in sorted(seen)])
