"""Bring ``schemas/`` in line with what the API publishes, reporting only real changes.

Two sources, one set of rules:

* ``python -m codegen.sync adopt FILE_OR_DIR ...`` reads published catalog files
  (``{name, task, properties, schema: {input, output}}``, e.g. ``../shared/catalog``);
* ``workers-ai sync`` (``make sync``) reads the account's ``models/search`` (every page) and each
  model's ``models/schema``.

Each published model goes through ``normalise`` (prose out, publishing slips repaired, the output
``required`` rule and the variant-title rule), gets our prose (``prose``: the file already in
``schemas/`` keeps its descriptions and titles wherever it has the same node; new nodes get the
glossary's), and is compared with the file in ``schemas/`` by what the generator reads (key order,
ids, dates and notes ignored). Only a file whose content differs is written (atomically); the report
says per model which variants, properties, types, constraints, enums and ``required`` lists changed.
A model without a schema is reported in one line and skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .normalise import OUTPUT_REQUIRED_RULE, TITLE_RULE
from .schema_diff import diff_docs
from .schema_file import (
    Published,
    build_doc,
    carry_overrides,
    dump,
    generation_view,
    keep_stated_halves,
    path_for,
    published_from_catalog,
    read_folder,
    write_atomic,
)
from .schema_walk import as_list, as_map

__all__ = ["SyncReport", "adopt", "fetch_published", "main", "reconcile", "run_live"]

GetJson = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]

_DEPRECATION_KEYS = ("planned_deprecation_date", "deprecation_date", "deprecated")
_MAX_PAGES = 10_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass
class SyncReport:
    """What a sync or an adoption found; model ids sorted in every list."""

    listed: int = 0
    added: list[str] = field(default_factory=list[str])
    changed: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    notes_only: list[str] = field(default_factory=list[str])
    unchanged: list[str] = field(default_factory=list[str])
    removed: list[str] = field(default_factory=list[str])
    pruned: list[str] = field(default_factory=list[str])
    overrides: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    deprecated: dict[str, str] = field(default_factory=dict[str, str])
    no_schema: dict[str, str] = field(default_factory=dict[str, str])
    refused: dict[str, str] = field(default_factory=dict[str, str])
    written: list[Path] = field(default_factory=list[Path])

    @property
    def dirty(self) -> bool:
        """Whether the published models differ from ``schemas/`` (what ``--exit-code`` reports)."""
        return bool(self.added or self.changed or self.removed)

    def lines(self, source: str) -> list[str]:
        out = [f"sync: {self.listed} models {source}"]
        out.extend(f"  added: {mid}" for mid in self.added)
        for mid, details in sorted(self.changed.items()):
            out.append(f"  changed: {mid}")
            out.extend(f"    {line}" for line in details)
        out.extend(f"  notes updated: {mid}" for mid in self.notes_only)
        for mid, details in sorted(self.overrides.items()):
            out.append(f"  overrides: {mid}")
            out.extend(f"    {line}" for line in details)
        for mid in self.removed:
            what = "file deleted (--prune)" if mid in self.pruned else "file kept; --prune deletes it"
            out.append(f"  removed: {mid} (no longer listed; {what})")
        out.extend(f"  deprecated: {mid} ({why})" for mid, why in sorted(self.deprecated.items()))
        out.extend(f"  no schema: {mid} ({why}); skipped" for mid, why in sorted(self.no_schema.items()))
        out.extend(f"  refused: {mid} ({why})" for mid, why in sorted(self.refused.items()))
        counts = (
            f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed, "
            f"{len(self.unchanged) + len(self.notes_only)} unchanged"
        )
        out.append(f"sync: {counts}")
        return out


# ------------------------------------------------------------------------------------ live source


def _listing(get_json: GetJson, per_page: int) -> Iterator[dict[str, Any]]:
    """Every model of every ``models/search`` page; stops on a short page, an empty one or a repeat."""
    seen: set[str] = set()
    total: int | None = None
    count = 0
    for page in range(1, _MAX_PAGES + 1):
        env = get_json("ai/models/search", {"page": page, "per_page": per_page})
        items = [obj for obj in (as_map(x) for x in as_list(env.get("result")) or []) if obj is not None]
        info = as_map(env.get("result_info")) or {}
        if isinstance(info.get("total_count"), int):
            total = int(info["total_count"])
        fresh = 0
        for obj in items:
            name = obj.get("name")
            if isinstance(name, str) and name not in seen:
                seen.add(name)
                fresh += 1
                count += 1
                yield obj
        if not items or fresh == 0 or len(items) < per_page or (total is not None and count >= total):
            return


def fetch_published(
    get_json: GetJson, *, per_page: int = 50, api_errors: tuple[type[Exception], ...] = ()
) -> tuple[list[Published], dict[str, str]]:
    """(every listed model with a schema, {model id: why it has none}) from the live API."""
    found: list[Published] = []
    missing: dict[str, str] = {}
    for obj in _listing(get_json, per_page):
        name = str(obj["name"])
        try:
            env = get_json("ai/models/schema", {"model": name})
        except api_errors as exc:
            missing[name] = f"models/schema failed: {str(exc)[:120]}"
            continue
        result = as_map(env.get("result")) or {}
        task = as_map(obj.get("task")) or {}
        pub = published_from_catalog(
            {"name": name, "task": task, "properties": obj.get("properties"), "schema": result}
        )
        if pub is None:
            missing[name] = "models/schema returned no input/output schema"
            continue
        found.append(pub)
    return found, missing


# ---------------------------------------------------------------------------------- catalog source


def _catalog_files(sources: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for src in sources:
        files.extend(sorted(src.glob("*.json")) if src.is_dir() else [src])
    return files


def read_catalog(sources: Iterable[Path]) -> tuple[list[Published], dict[str, str], list[str]]:
    """(published models, {file: why skipped}, duplicate-id lines) from catalog files or folders.

    Two files naming one model: the one whose file name is the id's last segment wins.
    """
    chosen: dict[str, tuple[Path, Published]] = {}
    skipped: dict[str, str] = {}
    dupes: list[str] = []
    for path in _catalog_files(sources):
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError) as exc:
            skipped[str(path)] = f"not readable JSON ({exc})"
            continue
        doc = as_map(data) or {}
        pub = published_from_catalog(doc)
        if pub is None:
            skipped[str(path)] = "no input/output schema"
            continue
        prior = chosen.get(pub.model_id)
        if prior is not None:
            keep, drop = (path, prior[0]) if path.stem == pub.model_id.rsplit("/", 1)[-1] else (prior[0], path)
            dupes.append(f"{drop}: names {pub.model_id} like {keep}; skipped")
            if keep is prior[0]:
                continue
        chosen[pub.model_id] = (path, pub)
    return [pub for _, pub in sorted(chosen.values(), key=lambda x: x[1].model_id)], skipped, dupes


# ------------------------------------------------------------------------------------- reconcile


def _id_problem(model_id: str) -> str | None:
    """The generator's rule: an id must not lead outside the schemas folder."""
    if model_id.startswith("/") or "\\" in model_id or re.match(r"^[A-Za-z]:", model_id):
        return "an absolute path"
    if any(part.strip() in ("", ".", "..") for part in model_id.split("/")):
        return "an empty, '.' or '..' path segment"
    if _CONTROL.search(model_id):
        return "control characters"
    return None


def _deprecation(pub: Published) -> str | None:
    for entry in pub.properties:
        key, value = entry.get("property_id"), entry.get("value")
        if key in _DEPRECATION_KEYS and value not in (None, False, "false", ""):
            return f"{key}: {value}" if not isinstance(value, bool) else str(key)
    return None


def reconcile(
    published: Sequence[Published],
    schemas: Path,
    *,
    complete: bool,
    prune: bool = False,
    also_listed: Iterable[str] = (),
    dry_run: bool = False,
) -> SyncReport:
    """Write our file for each published model whose content differs; with ``complete`` (the source is
    the whole account), files of models not published are reported removed (deleted with ``prune``)."""
    report = SyncReport(listed=len(published))
    existing = read_folder(schemas)
    for pub in sorted(published, key=lambda p: p.model_id):
        problem = _id_problem(pub.model_id)
        if problem:
            report.refused[pub.model_id] = f"model id has {problem}; not written"
            continue
        why = _deprecation(pub)
        if why:
            report.deprecated[pub.model_id] = why
        path, local = existing.get(pub.model_id, (path_for(schemas, pub.model_id), None))
        doc, override_lines = carry_overrides(keep_stated_halves(build_doc(pub, local), local), local)
        if override_lines:
            report.overrides[pub.model_id] = override_lines
        if local is None:
            report.added.append(pub.model_id)
        elif generation_view(doc) != generation_view(local):
            report.changed[pub.model_id] = diff_docs(local, doc) or ["descriptions or titles only"]
        elif doc != local:
            report.notes_only.append(pub.model_id)
        else:
            report.unchanged.append(pub.model_id)
            continue
        if not dry_run:
            write_atomic(path, dump(doc))
            report.written.append(path)
    if complete:
        listed = {p.model_id for p in published} | set(also_listed)
        for model_id, (path, _) in sorted(existing.items()):
            if model_id not in listed:
                report.removed.append(model_id)
                if prune and not dry_run:
                    path.unlink(missing_ok=True)
                    report.pruned.append(model_id)
    return report


def adopt(sources: Iterable[Path], schemas: Path, *, dry_run: bool = False) -> tuple[SyncReport, list[str]]:
    """Adopt published catalog files into ``schemas`` (never removes files); (report, skipped-file lines)."""
    published, skipped, dupes = read_catalog(sources)
    report = reconcile(published, schemas, complete=False, dry_run=dry_run)
    lines = [f"{path}: {why}; skipped" for path, why in sorted(skipped.items())] + dupes
    return report, lines


def regenerate(schemas: Path, out: Path, package: str) -> int:
    """Run the generator on the synced folder."""
    from .cli import main as generate

    return generate(["--schemas", str(schemas), "--out", str(out), "--package", package])


def run_live(args: argparse.Namespace, get_json: GetJson, api_errors: tuple[type[Exception], ...] = ()) -> int:
    """``workers-ai sync``: the runtime CLI parses the arguments and supplies the HTTP client."""
    schemas = Path(args.schemas)
    published, missing = fetch_published(get_json, per_page=int(args.per_page), api_errors=api_errors)
    report = reconcile(published, schemas, complete=True, prune=bool(args.prune), also_listed=missing)
    report.no_schema = missing
    report.listed += len(missing)
    for line in report.lines("listed by the account"):
        print(line)
    if not args.no_generate and (report.written or report.pruned):
        code = regenerate(schemas, Path(args.out), args.package)
        if code != 0:
            print(f"sync: the generator failed (exit {code}); schemas were written", file=sys.stderr)
            return code
    if args.exit_code and report.dirty:
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m codegen.sync``: adopt published catalog files, or print the rules."""
    parser = argparse.ArgumentParser(prog=f"python -m {__package__}.sync", description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_adopt = sub.add_parser("adopt", help="write our schema files for published catalog files (or folders)")
    p_adopt.add_argument("sources", nargs="+", type=Path)
    p_adopt.add_argument("--schemas", type=Path, default=Path("schemas"))
    p_adopt.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    p_adopt.add_argument("--exit-code", action="store_true", help="exit 1 when a file was added or changed")
    sub.add_parser("rules", help="print the title and output-required rules")
    args = parser.parse_args(argv)
    if args.command == "rules":
        print(TITLE_RULE + "\n\n" + OUTPUT_REQUIRED_RULE)
        return 0
    report, skipped = adopt(args.sources, args.schemas, dry_run=args.dry_run)
    for line in skipped:
        print(f"  {line}")
    for line in report.lines("published in the given files"):
        print(line)
    return 1 if args.exit_code and report.dirty else 0


if __name__ == "__main__":
    raise SystemExit(main())
