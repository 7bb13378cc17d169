"""``python -m workers_ai.testing`` (and ``workers-ai serve``, which hands its arguments here): run the
emulator until Ctrl-C. Every ``Emulator(...)`` option is a command-line option, defined once below."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["build_parser", "emulator_options", "main"]


def build_parser(prog: str = "python -m workers_ai.testing") -> argparse.ArgumentParser:
    """The command line; each option's ``dest`` is the ``Emulator`` keyword it sets (``--quiet`` aside)."""
    parser = argparse.ArgumentParser(prog=prog, description="Serve a local Workers AI emulator until Ctrl-C.")
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    add("--port", type=int, default=8787, help="port (default 8787; 0 picks a free one)")
    add("--account-id", dest="account_id", default=None, help="account id clients must use")
    add("--token", dest="api_token", default=None, help="API token clients must send")
    add("--models", nargs="+", default=None, metavar="MODEL", help="serve only these model ids")
    add("--schemas", default=None, help="also serve the model schemas in this folder")
    add(
        "--batch-polls",
        type=int,
        nargs=2,
        metavar=("QUEUED", "RUNNING"),
        default=(1, 1),
        help="polls a batch answers 'queued', then 'running', before its results (default 1 1)",
    )
    add(
        "--batch-delay",
        type=float,
        nargs=2,
        metavar=("QUEUED_S", "RUNNING_S"),
        default=None,
        help="seconds a batch stays queued, then running (instead of --batch-polls)",
    )
    add(
        "--no-shuffle-batches",
        dest="shuffle_batches",
        action="store_false",
        help="return batch items in order (the API returns them in any order)",
    )
    add("--stream-interval", type=float, default=0.0, help="seconds between streamed events (default 0)")
    add("--check-outputs", action="store_true", help="validate every reply against the output schema")
    add("--keep-requests", type=int, default=10_000, help="requests remembered (default 10000)")
    add("--keep-jobs", type=int, default=10_000, help="batch jobs remembered (default 10000)")
    add("--workers", type=int, default=8, help="requests computed at once (default 8)")
    add("--quiet", action="store_true", help="do not print one line per request")
    return parser


def emulator_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Emulator(...)`` keywords that parsed ``args`` give (defaults where an option was left out)."""
    from ._emulator import DEFAULT_ACCOUNT_ID, DEFAULT_API_TOKEN

    options = {k: v for k, v in vars(args).items() if k != "quiet"}
    options["account_id"] = options["account_id"] or DEFAULT_ACCOUNT_ID
    options["api_token"] = options["api_token"] or DEFAULT_API_TOKEN
    options["batch_polls"] = tuple(options["batch_polls"])
    if options["batch_delay"] is not None:
        options["batch_delay"] = tuple(options["batch_delay"])
    options["log"] = None if args.quiet else sys.stdout
    return options


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m workers_ai.testing") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        from ._emulator import Emulator
    except ImportError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    try:
        emu = Emulator(**emulator_options(args))
    except (OSError, ValueError) as exc:
        print(f"{prog}: cannot start on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    # Ctrl-C (SIGINT) stops the server even when it was started with SIGINT ignored, as a shell does
    # for a background job: Python installs its KeyboardInterrupt handler only over the default one.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    emu.banner()
    emu.serve_forever()
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
