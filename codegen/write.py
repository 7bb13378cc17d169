"""Step 4 of the pipeline: put rendered files on disk, atomically, touching only what changed."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["diff_tree", "read_tree", "write_tree"]


def read_tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (caches excluded), keyed by its POSIX path relative to ``root``."""
    if not root.is_dir():
        return {}
    out: dict[str, bytes] = {}
    for path in root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def diff_tree(root: Path, files: Mapping[str, bytes]) -> tuple[list[str], list[str], list[str]]:
    """(added, changed, removed) paths between what is on disk and ``files``."""
    current = read_tree(root)
    added = sorted(k for k in files if k not in current)
    changed = sorted(k for k in files if k in current and current[k] != files[k])
    removed = sorted(k for k in current if k not in files)
    return added, changed, removed


def write_tree(root: Path, files: Mapping[str, bytes]) -> tuple[list[str], list[str], list[str]]:
    """Make ``root`` hold exactly ``files``.

    A new package is built in a sibling temporary folder and renamed into place. An existing one gets
    every new or changed file staged first (temporary names in the same folder), then renamed over
    the old file, so a failure before the renames leaves the old output whole.
    """
    added, changed, removed = diff_tree(root, files)
    if not root.exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
        try:
            for rel, data in files.items():
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            os.replace(staging, root)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return added, changed, removed
    staged: list[tuple[Path, Path]] = []
    try:
        for rel in [*added, *changed]:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(files[rel])
            staged.append((Path(tmp_name), target))
    except BaseException:
        for tmp_path, _ in staged:
            tmp_path.unlink(missing_ok=True)
        raise
    for tmp_path, target in staged:
        os.replace(tmp_path, target)
    for rel in removed:
        (root / rel).unlink(missing_ok=True)
    _prune_empty(root)
    return added, changed, removed


def _prune_empty(root: Path) -> None:
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if folder.name == "__pycache__":
            continue
        entries = [e for e in folder.iterdir() if e.name != "__pycache__"]
        if not entries:
            shutil.rmtree(folder, ignore_errors=True)
