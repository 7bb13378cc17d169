"""``python -m workers_ai.testing`` (and ``workers-ai serve``, which hands its arguments here): run the
emulator until Ctrl-C. Every ``Emulator(...)`` option is a command-line option of the same name, both
defined once in :mod:`._options`."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["build_parser", "emulator_options", "main"]


def build_parser(
    prog: str = "python -m workers_ai.testing", parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """The command line: every ``Emulator`` option (:mod:`._options`), named as the keyword with dashes
    (``parser_class``: ``workers-ai serve`` reports a bad option as every ``workers-ai`` command does)."""
    from ._options import add_options

    parser = parser_class(prog=prog, description="Serve a local Workers AI emulator until Ctrl-C.")
    add_options(parser)
    return parser


def emulator_options(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> dict[str, Any]:
    """The ``Emulator(...)`` keywords that parsed ``args`` give (defaults where an option was left out)."""
    from ._options import options_from

    return options_from(parser or build_parser(), args)


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = "python -m workers_ai.testing",
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> int:
    parser = build_parser(prog, parser_class)
    args = parser.parse_args(argv)
    try:
        from ._emulator import Emulator, EmulatorStopped
    except ImportError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    try:
        emu = Emulator(**emulator_options(args, parser))
    except (OSError, ValueError) as exc:
        print(f"{prog}: cannot start on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    # Ctrl-C (SIGINT) stops the server even when it was started with SIGINT ignored, as a shell does
    # for a background job: Python installs its KeyboardInterrupt handler only over the default one.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _log_errors()
    emu.banner()
    try:
        emu.serve_forever()
    except EmulatorStopped as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    print("stopped", file=sys.stderr)
    return 0


def _log_errors() -> None:
    """The errors the emulator contains (each with its traceback) go to stderr, as a server's do: once,
    even beside ``WORKERS_AI_LOG``'s handler on ``workers_ai``."""
    errors = logging.getLogger("workers_ai.testing")
    if not errors.handlers:
        errors.addHandler(logging.StreamHandler(sys.stderr))
        errors.propagate = False


if __name__ == "__main__":
    raise SystemExit(main())
