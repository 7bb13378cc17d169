"""What the planners share (``plan`` for a model's REST module, ``realtime`` for its live module).

The error a schema the plan cannot take raises, and a module's import lines. Kept below both planners,
so ``plan`` can call ``realtime`` without a circle.
"""

from __future__ import annotations

__all__ = ["PlanError", "merge_imports"]


class PlanError(Exception):
    """A schema the plan cannot turn into a module (reported as exit 2 naming the file)."""

    def __init__(self, file: str, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.message = message


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
