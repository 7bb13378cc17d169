"""``python -m codegen.twins``: print the async faces of the runtime from their sync source.

The printer is :mod:`.twin_printer`; which source becomes which async region, and the rules that make it
async, are :mod:`.twin_rules`. ``--check`` changes nothing and exits 1 when a region differs from what its
source gives (drift) or a rule was never used; exit 2: a rule names a class, function or region that does
not exist.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .runtime_source import runtime_root
from .twin_printer import TwinError, check
from .twin_rules import TWINS


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.twins", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 on drift or an unused rule")
    parser.add_argument("--package", type=Path, default=None, help="the runtime package (default: the checkout's)")
    args = parser.parse_args(argv)
    package: Path = args.package or runtime_root()
    try:
        drift, unused = check(TWINS, package, write=not args.check)
    except TwinError as exc:
        print(f"codegen.twins: {exc}", file=sys.stderr)
        return 2
    for rule in unused:
        print(f"codegen.twins: rule never used: {rule}", file=sys.stderr)
    if args.check and drift:
        for path in drift:
            print(f"codegen.twins: {path} differs from its sync source (run python -m codegen.twins)", file=sys.stderr)
    elif drift:
        print(f"codegen.twins: printed {', '.join(drift)}", file=sys.stderr)
    return 1 if unused or (args.check and drift) else 0


if __name__ == "__main__":
    sys.exit(main())
