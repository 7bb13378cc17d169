"""Installed footprint of distributions: ``python bench/_footprint.py DIST [DIST ...]`` prints JSON.

Run it with the interpreter of the environment to measure. For each named distribution it walks the
runtime dependency closure (``Requires-Dist`` without extras, markers evaluated for this
interpreter) and adds up the on-disk size of every file the installed ``RECORD`` lists, compiled
``.pyc`` files included.
"""

from __future__ import annotations

import json
import os
import re
import sys
from importlib import metadata
from typing import Any

try:
    from packaging.requirements import Requirement
except ImportError:  # a fresh venv has pip's vendored copy
    from pip._vendor.packaging.requirements import Requirement


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(root: str) -> list[metadata.Distribution]:
    seen: dict[str, metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        dist = metadata.distribution(name)
        seen[name] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(req.name)
    return list(seen.values())


def dist_size(dist: metadata.Distribution) -> tuple[int, int]:
    size = 0
    count = 0
    for entry in dist.files or []:
        path = entry.locate()
        try:
            size += os.path.getsize(path)
            count += 1
        except OSError:
            continue
    return size, count


def main() -> None:
    out: dict[str, Any] = {}
    for root in sys.argv[1:]:
        try:
            dists = closure(root)
        except metadata.PackageNotFoundError as exc:
            out[root] = {"error": f"not installed: {exc}"}
            continue
        per: dict[str, int] = {}
        files = 0
        for dist in dists:
            size, count = dist_size(dist)
            per[dist.metadata["Name"]] = size
            files += count
        deps = sorted(name for name in per if _norm(name) != _norm(root))
        out[root] = {"bytes": sum(per.values()), "files": files, "deps": deps, "per_dist": per}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
