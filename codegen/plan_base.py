"""What the planners share (``plan`` for a model's REST module, ``realtime`` for its live module).

The error a schema the plan cannot take raises, the JSON schema datamodel-code-generator prints a module's
structs from, and a module's import lines. Kept below both planners, so ``plan`` can call ``realtime``
without a circle.
"""

from __future__ import annotations

import json
from typing import Any

from .schema_walk import as_list, as_map
from .structs import StructPlan

__all__ = ["PlanError", "merge_imports", "struct_document"]


class PlanError(Exception):
    """A schema the plan cannot turn into a module (reported as exit 2 naming the file)."""

    def __init__(self, file: str, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.message = message


def struct_document(structs: tuple[StructPlan, ...], shared: dict[str, str], package: str) -> str:
    """The JSON schema datamodel-code-generator prints a module's structs from (empty: no structs).

    Every struct is a ``$defs`` entry whose title is its final name; a struct another module holds
    (``shared``: name -> module) is a ``customTypePath`` to it, so it is imported, not redeclared; a struct
    with a family view names it in ``customBasePath``, so the view is printed as its first base.
    """
    if not structs:
        return ""

    def swap(node: Any) -> Any:
        obj, arr = as_map(node), as_list(node)
        if arr is not None:
            return [swap(v) for v in arr]
        if obj is None:
            return node
        ref = obj.get("$ref")
        if isinstance(ref, str) and ref.removeprefix("#/$defs/") in shared:
            name = ref.removeprefix("#/$defs/")
            rest = {k: v for k, v in obj.items() if k != "$ref"}
            return {"customTypePath": f"{package}.{shared[name]}.{name}", **rest}
        return {k: (v if k in ("enum", "const", "default", "required") else swap(v)) for k, v in obj.items()}

    defs = {s.name: swap(json.loads(s.schema)) for s in structs}
    for s in structs:
        if s.view:  # the family view is a first base of its own (``codegen.views``); datamodel-code-generator adds it
            defs[s.name]["customBasePath"] = [f"{package}.families.{s.view}", "msgspec.Struct"]
    # The root is a struct nothing else refers to, written in place (a root `$ref` would also get an alias).
    used = {d for s in structs for d in s.deps}
    root = next((s.name for s in structs if s.name not in used), None)
    if root is None:
        return json.dumps({"$defs": defs, "$ref": f"#/$defs/{structs[0].name}"}, ensure_ascii=False)
    body = defs.pop(root)
    return json.dumps({**body, "$defs": defs}, ensure_ascii=False)


def merge_imports(merged: dict[str, set[str]]) -> list[str]:
    """Import lines in isort order: ``from __future__`` is the template's; stdlib, msgspec, relative."""
    merged = {k: set(v) for k, v in merged.items()}
    plain = sorted(merged.pop("", set()))
    std = sorted((m, n) for m, n in merged.items() if not m.startswith(".") and m != "msgspec")
    third = sorted((m, n) for m, n in merged.items() if m == "msgspec")
    local = sorted(((m, n) for m, n in merged.items() if m.startswith(".")), key=lambda x: (-x[0].count("."), x[0]))
    blocks: list[list[str]] = []
    blocks.append([_from_line(m, n) for m, n in std])
    blocks.append([f"import {name}" for name in plain] + [_from_line(m, n) for m, n in third])
    blocks.append([_from_line(m, n) for m, n in local])
    lines: list[str] = []
    for block in blocks:
        if not block:
            continue
        if lines:
            lines.append("")
        lines.extend(block)
    return lines


def _from_line(module: str, names: set[str]) -> str:
    ordered = sorted(names, key=_import_key)
    line = f"from {module} import {', '.join(ordered)}"
    if len(line) <= 100:
        return line
    return f"from {module} import (\n" + "".join(f"    {n},\n" for n in ordered) + ")"


def _import_key(name: str) -> tuple[bool, str]:
    return (not name.isupper(), name)
