"""``python -m codegen``: the command-line front of the pipeline.

Exit codes: 0 generated (or up to date with ``--check``), 1 ``--check`` found drift, 2 bad input
(one line per problem on stderr, naming the file and JSON pointer; nothing is written).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .load import load_schemas
from .plan import plan_models
from .render import RenderError, render_package
from .write import diff_tree, read_tree, write_tree

__all__ = ["GenerateResult", "generate", "main"]

_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass
class GenerateResult:
    code: int
    problems: list[str] = field(default_factory=list[str])
    warnings: list[str] = field(default_factory=list[str])
    added: list[str] = field(default_factory=list[str])
    changed: list[str] = field(default_factory=list[str])
    removed: list[str] = field(default_factory=list[str])
    models: int = 0
    seconds: float = 0.0


def generate(
    schemas: Path = Path("schemas"),
    out: Path = Path("generated"),
    package: str = "workers_ai",
    models: Sequence[str] = (),
    check: bool = False,
) -> GenerateResult:
    """Run the whole pipeline; see the module docstring for what the exit code means."""
    started = time.perf_counter()
    if not _PACKAGE.match(package):
        return GenerateResult(2, [f"--package {package!r}: not a dotted Python package name"])
    loaded = load_schemas(schemas, models)
    warnings = list(loaded.warnings)
    if loaded.problems:
        return GenerateResult(2, [str(p) for p in loaded.problems], warnings)
    if not loaded.models:
        what = f"matching {' '.join(models)} " if models else ""
        return GenerateResult(2, [f"{schemas}: no model schemas {what}found"], warnings)
    plans = plan_models(loaded.models, warnings)
    root = out.joinpath(*package.split("."))
    current = read_tree(root)
    cached = {k: v.decode("utf-8", "replace") for k, v in current.items() if k.startswith("models/")}
    try:
        files = render_package(plans, package, cached)
    except RenderError as exc:
        plan = plans[exc.index]
        problem = f"{plan.source.file}: /: the struct generator failed on this schema ({exc.message})"
        return GenerateResult(2, [problem], warnings)
    if check:
        added, changed, removed = diff_tree(root, files)
        code = 1 if (added or changed or removed) else 0
    else:
        added, changed, removed = write_tree(root, files)
        code = 0
    return GenerateResult(code, [], warnings, added, changed, removed, len(plans), time.perf_counter() - started)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--schemas", type=Path, default=Path("schemas"), help="folder of model schema files")
    parser.add_argument("--out", type=Path, default=Path("generated"), help="folder that receives the package")
    parser.add_argument("--package", default="workers_ai", help="dotted package name (e.g. myapp._vendor.workers_ai)")
    parser.add_argument("--models", nargs="+", default=[], metavar="GLOB", help="only model ids matching these globs")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the output would change")
    parser.add_argument("--quiet", "-q", action="store_true", help="print problems only")
    args = parser.parse_args(argv)
    result = generate(args.schemas, args.out, args.package, args.models, args.check)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    for line in result.problems:
        print(line, file=sys.stderr)
    if result.code == 2:
        print(f"codegen: {len(result.problems)} problem(s); nothing written", file=sys.stderr)
        return 2
    where = args.out.joinpath(*args.package.split("."))
    if args.check:
        if result.code == 1:
            for kind, paths in (("added", result.added), ("changed", result.changed), ("removed", result.removed)):
                for path in paths:
                    print(f"drift: {kind} {where / path}", file=sys.stderr)
            print("codegen --check: generated output is stale; run `make generate`", file=sys.stderr)
        elif not args.quiet:
            print(f"codegen --check: {where} is up to date ({result.models} models)")
        return result.code
    if not args.quiet:
        touched = len(result.added) + len(result.changed) + len(result.removed)
        print(
            f"codegen: {result.models} models -> {where} "
            f"({len(result.added)} added, {len(result.changed)} changed, {len(result.removed)} removed"
            f"{'' if touched else ', nothing to do'}) in {result.seconds:.2f}s"
        )
    return 0
