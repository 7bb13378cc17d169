"""The ``workers-ai`` command line: its parser, ``serve`` and ``sync``, and the dispatch to each command's
module (``run``, ``embed``, ``models``; ``listen`` and ``speak`` in :mod:`.live`).

How every command ends is decided here, once: a usage error (:class:`.output.UsageError`, argparse's
own included, and an input the model's schema refuses before anything is sent) is one line, ``workers-ai
COMMAND: message``, and exit 2; an SDK error one line and exit 1; a command that made its client
(:func:`.output.new_client`) ends with the usage line when it succeeded or a call of it did (in the one
``interrupted`` line on Ctrl-C)."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__, _registry
from ..errors import InputValidationError, WorkersAIError
from .embed import cmd_embed
from .files import OutputError
from .live import add_live_commands
from .models import cmd_models
from .output import ENVIRONMENT, Parser, UsageError, add_base_url, usage_line
from .run import cmd_run

__all__ = ["main"]


def _serve(argv: list[str]) -> int:
    """``workers-ai serve ...``: every option goes to the emulator's own command line, which defines them."""
    try:  # imported by name: a lean vendored copy has no emulator, and must type-check without one
        module = importlib.import_module(f"{_registry.__package__}.testing.__main__")
    except ImportError as exc:
        raise UsageError(f"the emulator is not available here ({exc})") from None
    serve: Callable[..., int] = module.main
    return serve(argv, prog="workers-ai serve", parser_class=Parser)


# Commands of the schema generator, which this package never imports by name: a generator that is
# installed registers them in this entry point group (docs/architecture.md, "The generator is not part of the runtime").
COMMANDS_GROUP = "workers_ai.commands"


def _generator_command(name: str) -> Any:
    """The entry point a generator registered for ``name``; None when none is registered or its package
    cannot be found here (looked up without importing it)."""
    from importlib.metadata import entry_points
    from importlib.util import find_spec

    for ep in entry_points(group=COMMANDS_GROUP):
        if ep.name == name and find_spec(ep.module.split(".")[0]) is not None:
            return ep
    return None


def _cmd_sync(args: argparse.Namespace) -> int:
    try:
        run_live: Callable[..., int] = args.generator.load()
    except ImportError as exc:
        # The extra is named after the generator's package: read from the entry point, never written here.
        dist = getattr(args.generator.dist, "name", None) or "workers-ai"
        extra = str(args.generator.module).split(".")[0]
        raise UsageError(
            f"the schema generator is installed but cannot be imported ({exc}); "
            f"it needs its extra: pip install '{dist}[{extra}]'"
        ) from None
    from .._clients.sync import BaseClient
    from .._core.requests import get_json_flow
    from ..errors import APIError

    client = BaseClient(base_url=args.base_url)
    get_json: Callable[..., dict[str, Any]] = lambda *a: client._drive(get_json_flow(client, *a))  # noqa: E731  # pyright: ignore[reportPrivateUsage]
    try:
        code = run_live(args, get_json, (APIError,))
    finally:
        client.close()
    return code


def _cmd_batch(args: argparse.Namespace) -> int:
    from .batch import cmd_batch  # the batch machinery loads only for this command

    return cmd_batch(args)


_MODEL_HELP = "a model id, e.g. @cf/meta/llama-3.1-8b-instruct (workers-ai models lists them)"


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="workers-ai", description="Cloudflare Workers AI from the command line", epilog=ENVIRONMENT)
    parser.add_argument("--version", action="version", version=f"workers-ai {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, help="what to do (workers-ai COMMAND --help)")
    p_run = sub.add_parser(
        "run",
        help="run a model",
        description="Inputs: --json, key=value pairs (typed by the model's schema; key=@PATH reads a file, "
        "key:=JSON takes raw JSON) and --file PATH (binary input: audio, an image).",
        epilog=ENVIRONMENT,
    )
    p_run.add_argument("model", help=_MODEL_HELP)
    p_run.add_argument("pairs", nargs="*", metavar="key=value", help="input fields, e.g. prompt='a cat' max_tokens=64")
    p_run.add_argument("--json", help="the input payload as JSON; - reads stdin, @FILE reads a file")
    p_run.add_argument("--file", help="a binary input: the request body, or the model's one binary field")
    p_run.add_argument("-o", "--output", help="write the reply (binary or JSON) to this file")
    p_run.add_argument("--stream", action="store_true", help="stream text as it is generated")
    p_run.add_argument("--queue", action="store_true", help='queue {"requests": [...]} as an async batch and wait')
    p_run.add_argument("--request-id", help="resume waiting for an already queued batch")
    p_run.add_argument("--no-wait", action="store_true", help="with --queue: print the request id and exit")
    p_run.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a batch (default 600)")
    p_run.add_argument("--poll-interval", type=float, default=1.0, help="first wait between batch polls (grows)")
    add_base_url(p_run)
    p_run.add_argument(
        "--strict", action="store_true", help="refuse input keys the model's schema does not know (default: warn)"
    )
    p_run.set_defaults(func=cmd_run)
    p_embed = sub.add_parser("embed", help="embed many texts (one per line) through the batch API", epilog=ENVIRONMENT)
    p_embed.add_argument("model", help=_MODEL_HELP)
    p_embed.add_argument("--texts", required=True, help="a file with one text per line; - reads stdin")
    p_embed.add_argument("-o", "--output", help="write the vectors (JSON) to this file")
    p_embed.add_argument("--batch-size", type=int, default=None, help="texts per request (default: the schema's)")
    p_embed.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for every batch")
    p_embed.add_argument("--poll-interval", type=float, default=1.0, help="first wait between batch polls")
    add_base_url(p_embed)
    p_embed.set_defaults(func=cmd_embed)
    p_batch = sub.add_parser(
        "batch",
        help="many requests (JSON Lines) through the batch queue, one result line per request, resumable",
        description="Each line of --input is one request (JSON); -o gets one line per request, in order: "
        '{"id", "external_reference", "result"} or {"id", "external_reference", "error"}. With --journal the '
        "same command resumes after a crash without sending a queued batch again (docs/bulk-queue.md).",
        epilog=ENVIRONMENT,
    )
    p_batch.add_argument("model", help=_MODEL_HELP)
    p_batch.add_argument("--input", required=True, help="the requests, one JSON object per line")
    p_batch.add_argument("-o", "--output", required=True, help="the results file (written when complete)")
    p_batch.add_argument("--journal", default=None, help="the run's journal: resume from it, record in it")
    p_batch.add_argument("--batch-size", type=int, default=1000, help="requests per batch (default 1000)")
    p_batch.add_argument("--max-in-flight", type=int, default=8, help="batches queued at once (default 8)")
    p_batch.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole run (default 3600)")
    p_batch.add_argument("--poll-interval", type=float, default=1.0, help="first wait between polls (grows)")
    add_base_url(p_batch)
    p_batch.set_defaults(func=_cmd_batch)
    p_models = sub.add_parser("models", help="list the models this package knows (id, task, methods, price)")
    p_models.add_argument("--task", help="only models of this task, e.g. 'Text Embeddings'")
    p_models.add_argument("--json", action="store_true", help="print JSON for scripts")
    p_models.add_argument("--wide", action="store_true", help="every column whole (the methods too), however wide")
    p_models.set_defaults(func=cmd_models)
    sub.add_parser("serve", help="start the local emulator (options: workers-ai serve --help)", add_help=False)
    generator = _generator_command("sync")
    if generator is not None:  # offered only where a generator is installed
        p_sync = sub.add_parser("sync", help="download the account's model schemas and regenerate", epilog=ENVIRONMENT)
        p_sync.add_argument("--schemas", default="schemas", help="folder the schema files go to (default: schemas)")
        p_sync.add_argument("--out", default="generated", help="folder the package is generated into")
        p_sync.add_argument("--package", default="workers_ai", help="dotted name of the generated package")
        add_base_url(p_sync)
        p_sync.add_argument("--exit-code", action="store_true", help="exit 1 when anything changed")
        p_sync.add_argument("--no-generate", action="store_true", help="write schemas only")
        p_sync.add_argument(
            "--prune", action="store_true", help="delete schema files of models the account no longer lists"
        )
        p_sync.add_argument("--per-page", type=int, default=50, help="page size for models/search")
        p_sync.set_defaults(func=_cmd_sync, generator=generator)
    add_live_commands(sub)  # listen, speak (realtime sessions: _cli/live.py)
    return parser


def _parse(given: list[str]) -> argparse.Namespace:
    parser = _parser()
    args, extra = parser.parse_known_args(given)
    if args.command == "run" and extra:  # key=value pairs given after an option
        pairs = [e for e in extra if "=" in e and not e.startswith("-")]
        extra = [e for e in extra if e not in pairs]
        args.pairs = [*args.pairs, *pairs]
    if extra:  # the command's own words: its --help says what it takes
        prog = f"workers-ai {args.command}"
        raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see {prog} --help)", prog)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    prog = "workers-ai serve" if given[:1] == ["serve"] else "workers-ai"
    args = argparse.Namespace()

    def usage(code: int, line: str = "") -> int:
        """``line`` (if any) after the usage line of the command's client, if it made one: a command that
        fails before any call succeeded is its error line alone (no "usage: 0 calls")."""
        meter = getattr(args, "usage_meter", None)
        if meter is not None and (code == 0 or meter.calls):
            print(usage_line(meter), file=sys.stderr)
        if line:
            print(line, file=sys.stderr)
        return code

    try:
        if prog == "workers-ai serve":
            return _serve(given[1:])
        args = _parse(given)
        prog = f"workers-ai {args.command}"
        code: int = args.func(args)
        sys.stdout.flush()
    except UsageError as exc:
        return usage(2, f"{exc.prog or prog}: {exc}")
    except InputValidationError as exc:  # bad input, refused before anything was sent: a usage error
        return usage(2, f"{prog}: {exc}")
    except WorkersAIError as exc:
        return usage(1, f"workers-ai: {type(exc).__name__}: {exc}")
    except OutputError as exc:
        return usage(1, f"workers-ai: {exc}")
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:  # Ctrl-C: one line, and the shell's status for SIGINT (128 + 2)
        start = "\n" if sys.stderr.isatty() else ""  # after a streamed partial line on the terminal
        meter = getattr(args, "usage_meter", None)
        used = f"; usage: {meter.summary()}" if meter is not None and meter.calls else ""
        print(f"{start}workers-ai: interrupted{used}", file=sys.stderr)
        return 130
    except OSError as exc:  # stdout itself could not be written (`> /dev/full`)
        if exc.errno not in _WRITE_ERRORS:
            raise
        _drop_stdout()
        return usage(1, f"workers-ai: cannot write the output: {exc.strerror}; the output was not written")
    return usage(code)


_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EROFS})


def _drop_stdout() -> None:
    # stdout is pointed at /dev/null so the interpreter's own flush at exit cannot fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _closed_pipe() -> int:
    """The reader went away (``workers-ai models | head -1``): stop quietly, as ``cat`` does.

    stdout is pointed at /dev/null so the interpreter's own flush at exit cannot fail again; the exit
    status is the shell's for a SIGPIPE death (128 + 13)."""
    _drop_stdout()
    return 141
