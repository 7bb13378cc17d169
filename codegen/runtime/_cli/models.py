"""``workers-ai models``: the generated models as a table (or JSON), from the listing module alone."""

from __future__ import annotations

import argparse
import sys

from .. import _listing
from .output import print_json

__all__ = ["cmd_models"]


def cmd_models(args: argparse.Namespace) -> int:
    """Every generated model: id, task, methods and price, from the registry (no schema files needed)."""
    wanted: str | None = args.task.lower() if args.task else None
    rows = [
        {"id": model_id, "task": task, "methods": list(methods), "price": price}
        for model_id, (task, methods, price) in sorted(_listing.DETAILS.items())
        if wanted is None or task.lower() == wanted
    ]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no generated model has the task {args.task!r}", file=sys.stderr)
        return 1
    table: list[tuple[str, ...]] = []
    for r in rows:
        methods = ", ".join(r["methods"]) if args.wide else None
        cells = (str(r["id"]), str(r["task"]), methods, str(r["price"] or "unknown"))
        table.append(tuple(c for c in cells if c is not None))
    headers = ("MODEL", "TASK", "METHODS", "PRICE") if args.wide else ("MODEL", "TASK", "PRICE")
    for line in _table([headers, *table], None if args.wide else _NARROW):
        print(line)
    return 0


_NARROW = 100  # `workers-ai models` fits this many columns; --wide prints every column whole


def _table(rows: list[tuple[str, ...]], width: int | None) -> list[str]:
    """Rows as aligned text; with ``width``, the last column is cut (ending in "...") to fit it."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines: list[str] = []
    for row in rows:
        line = "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)) + "  " + row[-1]
        if width is not None and len(line) > width:
            line = line[: width - 3] + "..."
        lines.append(line.rstrip())
    return lines
