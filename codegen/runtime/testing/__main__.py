"""``python -m workers_ai.testing`` (and ``workers-ai serve``): run the emulator until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workers_ai.testing", description="Serve a local Workers AI emulator until Ctrl-C."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8787, help="port (default 8787; 0 picks a free one)")
    parser.add_argument("--account-id", default=None, help="account id clients must use")
    parser.add_argument("--token", default=None, help="API token clients must send")
    parser.add_argument("--schemas", default=None, help="also serve the model schemas in this folder")
    parser.add_argument(
        "--batch-polls",
        type=int,
        nargs=2,
        metavar=("QUEUED", "RUNNING"),
        default=(1, 1),
        help="polls a batch answers 'queued', then 'running', before its results (default 1 1)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not print one line per request")
    args = parser.parse_args(argv)

    try:
        from ._emulator import DEFAULT_ACCOUNT_ID, DEFAULT_API_TOKEN, Emulator
    except ImportError as exc:
        print(f"workers-ai serve: {exc}", file=sys.stderr)
        return 1
    try:
        emu = Emulator(
            host=args.host,
            port=args.port,
            account_id=args.account_id or DEFAULT_ACCOUNT_ID,
            api_token=args.token or DEFAULT_API_TOKEN,
            schemas=args.schemas,
            batch_polls=(args.batch_polls[0], args.batch_polls[1]),
            log=None if args.quiet else sys.stdout,
        )
    except (OSError, ValueError) as exc:
        print(f"workers-ai serve: cannot start on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    emu.banner()
    emu.serve_forever()
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
