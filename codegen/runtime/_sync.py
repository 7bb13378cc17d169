"""``workers-ai sync``: pull the account's model schemas into ``schemas/`` and regenerate.

Every model ``models/search`` lists (all pages) gets its ``models/schema`` downloaded and written in
the catalog form ``{name, description, task, properties, schema: {input, output}}``. A file is only
rewritten when its content changed. Models that vanished from the account are reported as removed and
their files kept unless ``--prune``; models whose properties announce a deprecation are listed; models
without a schema are reported and skipped. Then the package is regenerated: in-process when the
``codegen`` package can be imported, else with ``python -m codegen``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._core import BaseClient
from ._json import as_list, as_object
from .errors import APIError

__all__ = ["SyncReport", "fetch_catalog", "main", "sync"]

_DEPRECATION_KEYS = ("planned_deprecation_date", "deprecation_date", "deprecated")
_MAX_PAGES = 10_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass
class SyncReport:
    """What a sync found; each list holds model ids, sorted."""

    listed: int = 0
    added: list[str] = field(default_factory=list[str])
    changed: list[str] = field(default_factory=list[str])
    unchanged: list[str] = field(default_factory=list[str])
    removed: list[str] = field(default_factory=list[str])
    pruned: list[str] = field(default_factory=list[str])
    deprecated: dict[str, str] = field(default_factory=dict[str, str])
    no_schema: dict[str, str] = field(default_factory=dict[str, str])
    refused: dict[str, str] = field(default_factory=dict[str, str])
    generate_code: int | None = None

    @property
    def dirty(self) -> bool:
        """Whether anything in ``schemas/`` differs from the account (what ``--exit-code`` reports)."""
        return bool(self.added or self.changed or self.removed)

    def lines(self) -> list[str]:
        out = [f"sync: {self.listed} models listed by the account"]
        for label, ids in (("added", self.added), ("changed", self.changed)):
            out.extend(f"  {label}: {mid}" for mid in ids)
        for mid in self.removed:
            what = "file deleted (--prune)" if mid in self.pruned else "file kept; --prune deletes it"
            out.append(f"  removed: {mid} (no longer listed; {what})")
        out.extend(f"  deprecated: {mid} ({why})" for mid, why in sorted(self.deprecated.items()))
        out.extend(f"  no schema: {mid} ({why}); skipped" for mid, why in sorted(self.no_schema.items()))
        out.extend(f"  refused: {mid} ({why})" for mid, why in sorted(self.refused.items()))
        counts = (
            f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed, "
            f"{len(self.unchanged)} unchanged"
        )
        out.append(f"sync: {counts}")
        return out


def _listing(client: BaseClient, per_page: int) -> Iterator[dict[str, Any]]:
    """Every model of every ``models/search`` page; stops on a short page, an empty one or a repeat."""
    seen: set[str] = set()
    total: int | None = None
    count = 0
    for page in range(1, _MAX_PAGES + 1):
        env = client.get_json("ai/models/search", {"page": page, "per_page": per_page})
        items = [obj for obj in (as_list(env.get("result")) or []) if as_object(obj) is not None]
        info = as_object(env.get("result_info")) or {}
        if isinstance(info.get("total_count"), int):
            total = int(info["total_count"])
        fresh = 0
        for item in items:
            obj = as_object(item) or {}
            name = obj.get("name")
            if isinstance(name, str) and name not in seen:
                seen.add(name)
                fresh += 1
                count += 1
                yield obj
        if not items or fresh == 0 or len(items) < per_page or (total is not None and count >= total):
            return


def fetch_catalog(client: BaseClient, *, per_page: int = 50) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(catalog documents, {model id: why it has no schema}) for every model the account lists."""
    docs: list[dict[str, Any]] = []
    missing: dict[str, str] = {}
    for obj in _listing(client, per_page):
        name = str(obj["name"])
        try:
            env = client.get_json("ai/models/schema", {"model": name})
        except APIError as exc:
            missing[name] = f"models/schema answered HTTP {exc.status}: {str(exc)[:120]}"
            continue
        result = as_object(env.get("result")) or {}
        inp, out = as_object(result.get("input")), as_object(result.get("output"))
        if not inp or not out:
            missing[name] = "models/schema returned no input/output schema"
            continue
        task = as_object(obj.get("task")) or {}
        doc: dict[str, Any] = {
            "name": name,
            "description": obj.get("description") if isinstance(obj.get("description"), str) else "",
            "task": {k: task[k] for k in ("id", "name", "description") if k in task},
            "properties": [p for p in as_list(obj.get("properties")) or [] if as_object(p) is not None],
            "schema": {"input": inp, "output": out},
        }
        docs.append(doc)
    return docs, missing


def _id_problem(model_id: str) -> str | None:
    """The generator's rule: an id must not lead outside the schemas folder."""
    if model_id.startswith("/") or "\\" in model_id or re.match(r"^[A-Za-z]:", model_id):
        return "an absolute path"
    if any(part.strip() in ("", ".", "..") for part in model_id.split("/")):
        return "an empty, '.' or '..' path segment"
    if _CONTROL.search(model_id):
        return "control characters"
    return None


def _existing(schemas: Path) -> dict[str, tuple[Path, Any]]:
    """Model id -> (file, parsed JSON) for the schema files already there (unreadable files skipped)."""
    out: dict[str, tuple[Path, Any]] = {}
    if not schemas.is_dir():
        return out
    for path in sorted(schemas.rglob("*.json"), key=lambda p: p.relative_to(schemas).as_posix()):
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        doc = as_object(data)
        if doc is None:
            continue
        name = doc.get("name")
        model_id = name if isinstance(name, str) and "schema" in doc else path.relative_to(schemas).as_posix()[:-5]
        out.setdefault(model_id, (path, data))
    return out


def _write(path: Path, data: bytes) -> None:
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


def _deprecation(doc: Mapping[str, Any]) -> str | None:
    for prop in as_list(doc.get("properties")) or []:
        entry = as_object(prop) or {}
        key, value = entry.get("property_id"), entry.get("value")
        if key in _DEPRECATION_KEYS and value not in (None, False, "false", ""):
            return f"{key}: {value}" if not isinstance(value, bool) else str(key)
    return None


def sync(
    client: BaseClient,
    schemas: Path,
    *,
    prune: bool = False,
    per_page: int = 50,
) -> SyncReport:
    """Bring ``schemas`` in line with the account (no regeneration); see the module docstring."""
    report = SyncReport()
    docs, report.no_schema = fetch_catalog(client, per_page=per_page)
    report.listed = len(docs) + len(report.no_schema)
    existing = _existing(schemas)
    listed = {str(d["name"]) for d in docs} | set(report.no_schema)
    for doc in sorted(docs, key=lambda d: str(d["name"])):
        model_id = str(doc["name"])
        problem = _id_problem(model_id)
        if problem:
            report.refused[model_id] = f"model id has {problem}; not written"
            continue
        why = _deprecation(doc)
        if why:
            report.deprecated[model_id] = why
        text = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        if model_id in existing:
            path, old = existing[model_id]
            if old == doc:
                report.unchanged.append(model_id)
                continue
            report.changed.append(model_id)
        else:
            path = schemas.joinpath(*f"{model_id}.json".split("/"))
            report.added.append(model_id)
        _write(path, text)
    for model_id, (path, _) in sorted(existing.items()):
        if model_id not in listed:
            report.removed.append(model_id)
            if prune:
                path.unlink(missing_ok=True)
                report.pruned.append(model_id)
    return report


def regenerate(schemas: Path, out: Path, package: str) -> int:
    """Run the generator: in this process when ``codegen`` imports, else ``python -m codegen``."""
    argv = ["--schemas", str(schemas), "--out", str(out), "--package", package]
    generate: Callable[[list[str]], int] | None = None
    try:
        module = importlib.import_module("codegen.cli")
        generate = getattr(module, "main", None)
    except ImportError:
        pass
    if callable(generate):
        return generate(argv)
    try:
        return subprocess.call([sys.executable, "-m", "codegen", *argv])
    except OSError as exc:
        print(f"sync: cannot run the generator ({exc}); regenerate with `python -m codegen`", file=sys.stderr)
        return 2


def main(args: argparse.Namespace) -> int:
    """Entry point of ``workers-ai sync`` (arguments come from ``_cli``)."""
    client = BaseClient(base_url=args.base_url)
    schemas = Path(args.schemas)
    try:
        prune, per_page = bool(getattr(args, "prune", False)), int(getattr(args, "per_page", 50))
        report = sync(client, schemas, prune=prune, per_page=per_page)
    finally:
        client.close()
    for line in report.lines():
        print(line)
    if not args.no_generate:
        report.generate_code = regenerate(schemas, Path(args.out), args.package)
        if report.generate_code != 0:
            print(f"sync: the generator failed (exit {report.generate_code}); schemas were written", file=sys.stderr)
            return report.generate_code
    if args.exit_code and report.dirty:
        return 1
    return 0
