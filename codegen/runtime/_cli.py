"""The ``workers-ai`` command: ``run``, ``models``, ``sync`` and ``serve``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import msgspec

from . import _registry
from .errors import WorkersAIError

__all__ = ["main"]


def _print_json(value: Any) -> None:
    if isinstance(value, (bytes, bytearray)):
        sys.stdout.buffer.write(bytes(value))
        return
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")


def _cmd_models(args: argparse.Namespace) -> int:
    for model_id in sorted(_registry.MODELS):
        print(model_id)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from ._client import WorkersAI

    try:
        payload = msgspec.json.decode(args.json)
    except msgspec.DecodeError as exc:
        print(f"workers-ai run: --json is not valid JSON: {exc}", file=sys.stderr)
        return 2
    ai = WorkersAI(base_url=args.base_url)
    if args.stream:
        with ai.run(args.model, payload, stream=True) as events:
            for event in events:
                sys.stdout.write(event.text)
                sys.stdout.flush()
        sys.stdout.write("\n")
        return 0
    result = ai.run(args.model, payload)
    _print_json(result)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .testing.__main__ import main as serve

    return serve(["--port", str(args.port), "--host", args.host])


def _cmd_sync(args: argparse.Namespace) -> int:
    from ._sync import main as sync

    return sync(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workers-ai", description="Cloudflare Workers AI from the command line")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a model with a JSON payload")
    p_run.add_argument("model")
    p_run.add_argument("--json", required=True, help="the input payload as JSON")
    p_run.add_argument("--stream", action="store_true", help="stream text as it is generated")
    p_run.add_argument("--base-url", default=None)
    p_run.set_defaults(func=_cmd_run)
    p_models = sub.add_parser("models", help="list the models this package knows")
    p_models.set_defaults(func=_cmd_models)
    p_serve = sub.add_parser("serve", help="start the local emulator")
    p_serve.add_argument("--port", type=int, default=8787)
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.set_defaults(func=_cmd_serve)
    p_sync = sub.add_parser("sync", help="download the account's model schemas and regenerate")
    p_sync.add_argument("--schemas", default="schemas")
    p_sync.add_argument("--out", default="generated")
    p_sync.add_argument("--package", default="workers_ai")
    p_sync.add_argument("--base-url", default=None)
    p_sync.add_argument("--exit-code", action="store_true", help="exit 1 when anything changed")
    p_sync.add_argument("--no-generate", action="store_true", help="write schemas only")
    p_sync.set_defaults(func=_cmd_sync)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except WorkersAIError as exc:
        print(f"workers-ai: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return code
