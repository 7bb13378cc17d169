"""The one canonical form of a file in ``schemas/``, and reading and writing it.

A schema file is ``{name, description, task: {name, description}, properties, schema: {input, output}}``
plus an optional ``x-notes`` list (why our shape differs from the published one; the generator ignores
it) and an optional ``x-overrides`` list (facts the published schema gets wrong, applied by the generator:
see ``overrides``), written as ``json.dumps(doc, indent=2, ensure_ascii=False)`` and a newline. Identifiers the API
adds (model and task ids, ``source``, ``tags``, dates) are not part of it.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fixes import apply_property_fixes
from .normalise import PROSE_KEYS, normalise_schema
from .overrides import KEY as OVERRIDES_KEY
from .overrides import OverrideError, apply_overrides, entries_of, try_override
from .prose import TASKS, add_prose, merge, model_description
from .schema_walk import as_list, as_map

__all__ = [
    "Published",
    "build_doc",
    "carry_overrides",
    "dump",
    "generation_view",
    "keep_stated_halves",
    "read_folder",
    "write_atomic",
]

NOTES_KEY = "x-notes"
REALTIME_KEY = "x-realtime"  # the WebSocket section of a realtime model (see codegen.realtime)


@dataclass
class Published:
    """What the API publishes about one model (from a catalog file or models/search + models/schema)."""

    model_id: str
    task: str
    properties: list[dict[str, Any]]
    schema: dict[str, Any]


def published_from_catalog(doc: dict[str, Any]) -> Published | None:
    """A catalog-form document as ``Published``, or None when it carries no input/output schema."""
    schema = as_map(doc.get("schema")) or {}
    inp, out = as_map(schema.get("input")), as_map(schema.get("output"))
    name = doc.get("name")
    if not inp or not out or not isinstance(name, str):
        return None
    task = as_map(doc.get("task")) or {}
    props = [copy.deepcopy(p) for p in as_list(doc.get("properties")) or [] if as_map(p) is not None]
    return Published(name, str(task.get("name") or ""), props, {"input": inp, "output": out})


def build_doc(pub: Published, local: dict[str, Any] | None) -> dict[str, Any]:
    """Our file for a published model: its shapes by the ``normalise`` rules, our prose, ``local``'s
    prose kept wherever ``local`` (the file already in ``schemas/``, if any) has the same node."""
    notes: list[str] = []
    schema = normalise_schema(pub.model_id, pub.task, pub.schema, notes)
    add_prose(pub.task, schema)
    old_schema = None
    if local is not None:
        old_schema = as_map(local.get("schema")) or (
            {"input": local.get("input"), "output": local.get("output")} if "input" in local else None
        )
    if old_schema is not None:
        schema = {half: merge(schema[half], as_map(old_schema.get(half))) for half in ("input", "output")}
    props = [{"property_id": p.get("property_id"), "value": copy.deepcopy(p.get("value"))} for p in pub.properties]
    apply_property_fixes(pub.model_id, props, notes)
    facts = {str(p["property_id"]): p["value"] for p in props}
    description = local.get("description") if local is not None else None
    if not isinstance(description, str) or not description:
        description = model_description(pub.model_id, pub.task, facts)
    old_task = as_map(local.get("task")) if local is not None else None
    task_text = TASKS.get(pub.task, "")
    if old_task is not None and old_task.get("name") == pub.task and isinstance(old_task.get("description"), str):
        task_text = str(old_task["description"])
    task: dict[str, Any] = {"name": pub.task}
    if task_text:
        task["description"] = task_text
    doc: dict[str, Any] = {
        "name": pub.model_id,
        "description": description,
        "task": task,
        "properties": props,
        "schema": schema,
    }
    realtime = as_map(local.get(REALTIME_KEY)) if local is not None else None
    if realtime is not None:  # ours, never in the catalog: kept across syncs
        doc[REALTIME_KEY] = copy.deepcopy(realtime)
    old_notes = [n for n in as_list(local.get(NOTES_KEY)) or [] if isinstance(n, str)] if local is not None else []
    all_notes = [*old_notes, *[n for n in notes if n not in old_notes]]
    if all_notes:
        doc[NOTES_KEY] = all_notes
    return doc


def carry_overrides(doc: dict[str, Any], local: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """``doc`` (a freshly built file) with ``local``'s overrides that still apply to it, and one line for
    each that was dropped: it no longer applies (the published shape moved), or the published schema now
    states it itself. Malformed overrides are kept as they were (the generator names them)."""
    if local is None or OVERRIDES_KEY not in local:
        return doc, []
    try:
        entries = entries_of(local)
    except OverrideError:
        return {**doc, OVERRIDES_KEY: copy.deepcopy(local[OVERRIDES_KEY])}, []
    kept: list[dict[str, Any]] = []
    lines: list[str] = []
    current = {k: v for k, v in doc.items() if k != OVERRIDES_KEY}
    for entry in entries:
        what = f"{entry['op']} {entry['path']} ({entry['fact']})"
        try:
            patched = try_override(current, entry)
        except ValueError as exc:
            lines.append(f"override no longer applies, dropped: {what}: {exc}")
            continue
        if patched == current and entry["op"] != "test":
            lines.append(f"override now published, dropped: {what}")
            continue
        current = patched
        kept.append(copy.deepcopy(entry))
    if kept:
        return {**doc, OVERRIDES_KEY: kept}, lines
    return doc, lines


def keep_stated_halves(doc: dict[str, Any], local: dict[str, Any] | None) -> dict[str, Any]:
    """``doc`` with ``local``'s own input or output half wherever ``local`` with its overrides applied says
    what the published half says (prose aside): the source then publishes our patched schema (as the
    emulator does, serving the package's patched copies), so the file keeps its published shape and its
    overrides instead of taking the patched shape as published."""
    if local is None or OVERRIDES_KEY not in local:
        return doc
    try:
        effective = apply_overrides(local)
    except OverrideError:
        return doc
    mine, theirs, stored = (as_map(d.get("schema")) or {} for d in (effective, doc, local))
    halves = {
        half: copy.deepcopy(stored[half]) if _bare(mine.get(half)) == _bare(theirs.get(half)) else theirs.get(half)
        for half in ("input", "output")
    }
    return {**doc, "schema": halves}


def _bare(node: Any, names: bool = False) -> Any:
    """``node`` without any prose keyword at any depth (override values carry prose of their own);
    ``names``: ``node`` is a ``properties`` map, whose keys are property names, not keywords."""
    if isinstance(node, dict):
        items: dict[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
        return {k: _bare(v, k == "properties" and not names) for k, v in items.items() if names or k not in PROSE_KEYS}
    if isinstance(node, list):
        return [_bare(v) for v in node]  # pyright: ignore[reportUnknownVariableType]
    return node


def generation_view(doc: dict[str, Any]) -> dict[str, Any]:
    """What the generator reads from a file (for comparing: dict equality ignores key order)."""
    return {k: v for k, v in doc.items() if k != NOTES_KEY}


def dump(doc: dict[str, Any]) -> bytes:
    """The canonical bytes of a schema file."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step (a reader sees the old or the new file, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600 files; schemas are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_folder(schemas: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Model id -> (file, parsed document) for the schema files in ``schemas`` (unreadable ones skipped)."""
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    if not schemas.is_dir():
        return out
    for path in sorted(schemas.rglob("*.json"), key=lambda p: p.relative_to(schemas).as_posix()):
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        doc = as_map(data)
        if doc is None:
            continue
        name = doc.get("name")
        model_id = name if isinstance(name, str) and "schema" in doc else path.relative_to(schemas).as_posix()[:-5]
        out.setdefault(model_id, (path, doc))
    return out


def path_for(schemas: Path, model_id: str) -> Path:
    """Where a model's file goes: its id is its path below ``schemas``."""
    return schemas.joinpath(*f"{model_id}.json".split("/"))
