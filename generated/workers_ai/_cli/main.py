"""The ``workers-ai`` command: ``run``, ``models``, ``sync`` and ``serve``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .. import _listing, _registry
from ..errors import WorkersAIError
from .files import OutputError, OutputFile
from .input import CLIInputError, build_payload
from .live import add_live_commands
from .output import ProgressBar, binary_refusal, media_of, usage_line

if TYPE_CHECKING:
    from .._batch.jobs import BatchJob, BatchResult, BatchStatus
    from .._client import WorkersAI

__all__ = ["main"]


def _print_json(value: Any) -> None:
    if isinstance(value, (bytes, bytearray)):
        sys.stdout.buffer.write(bytes(value))
        return
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")


def _cmd_models(args: argparse.Namespace) -> int:
    """Every generated model: id, task, methods and price, from the registry (no schema files needed)."""
    wanted: str | None = args.task.lower() if args.task else None
    rows = [
        {"id": model_id, "task": task, "methods": list(methods), "price": price}
        for model_id, (task, methods, price) in sorted(_listing.DETAILS.items())
        if wanted is None or task.lower() == wanted
    ]
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print(f"no generated model has the task {args.task!r}", file=sys.stderr)
        return 1
    table: list[tuple[str, ...]] = []
    for r in rows:
        methods = ", ".join(r["methods"]) if args.wide else None
        cells = (str(r["id"]), str(r["task"]), methods, str(r["price"] or "unknown"))
        table.append(tuple(c for c in cells if c is not None))
    headers = ("MODEL", "TASK", "METHODS", "PRICE") if args.wide else ("MODEL", "TASK", "PRICE")
    for line in _table([headers, *table], None if args.wide else _NARROW):
        print(line)
    return 0


_NARROW = 100  # `workers-ai models` fits this many columns; --wide prints every column whole


def _table(rows: list[tuple[str, ...]], width: int | None) -> list[str]:
    """Rows as aligned text; with ``width``, the last column is cut (ending in "...") to fit it."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines: list[str] = []
    for row in rows:
        line = "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)) + "  " + row[-1]
        if width is not None and len(line) > width:
            line = line[: width - 3] + "..."
        lines.append(line.rstrip())
    return lines


_SPIN = "|/-\\"


class _Progress:
    """One status line on stderr while a batch waits: redrawn in place on a terminal, else one line per change."""

    def __init__(self, request_id: str) -> None:
        self.label = f"batch {request_id}"
        self.tty = sys.stderr.isatty()
        self.last = ""
        self.spin = 0

    def __call__(self, status: BatchStatus, elapsed: float) -> None:
        if self.tty:
            self.spin += 1
            sys.stderr.write(f"\r{self.label}: {status.state:<8} {elapsed:7.1f}s {_SPIN[self.spin % 4]}")
            sys.stderr.flush()
        elif status.state != self.last:
            sys.stderr.write(f"{self.label}: {status.state} after {elapsed:.1f}s\n")
        self.last = status.state

    def end(self) -> None:
        if self.tty and self.last:
            sys.stderr.write("\n")


def _batch_json(job: BatchJob[Any], result: BatchResult[Any]) -> dict[str, Any]:
    items = [
        {
            "id": i.id,
            "success": i.success,
            "external_reference": i.external_reference,
            "result": msgspec.to_builtins(i.result),
            "errors": [{"code": e.code, "message": e.message} for e in i.errors],
        }
        for i in result.items
    ]
    usage = msgspec.to_builtins(result.usage) if result.usage is not None else None
    return {"request_id": job.request_id, "model": job.model, "items": items, "usage": usage}


def _run_batch(ai: WorkersAI, args: argparse.Namespace, payload: Any) -> int:
    """``run --queue``: submit (or resume ``--request-id``), wait with a status line, print every item.

    Exit status 0 when every request succeeded, 1 when the job or any request failed.
    """
    if args.request_id:
        job = ai.batch_job(args.model, args.request_id)
    else:
        job = ai.run(args.model, payload, queue_request=True)
        print(f"workers-ai: queued batch {job.request_id} for {job.model}", file=sys.stderr)
    if args.no_wait:
        _print_json({"request_id": job.request_id, "model": job.model})
        return 0
    progress = _Progress(job.request_id)
    try:
        result = job.wait(timeout=args.timeout, poll_interval=args.poll_interval, on_progress=progress)
    finally:
        progress.end()
    _print_json(_batch_json(job, result))
    return 0 if result.ok else 1


def _cmd_run(args: argparse.Namespace) -> int:
    from .._client import WorkersAI

    given = args.json is not None or args.pairs or args.file is not None
    if not given and not args.request_id:
        print(
            "workers-ai run: give the input: --json JSON (or - for stdin, @file.json), key=value pairs, "
            "--file PATH; or --queue --request-id ID to resume a batch",
            file=sys.stderr,
        )
        return 2
    try:
        payload = build_payload(args.model, args.json, args.pairs, args.file)
    except CLIInputError as exc:
        print(f"workers-ai run: {exc}", file=sys.stderr)
        return 2
    data = payload.data
    stream = bool(args.stream)
    if data is not None and data.get("stream") is True:
        del data["stream"]  # `"stream": true` inside the JSON means the same as --stream
        stream = True
    ai = WorkersAI(base_url=args.base_url, strict_inputs=args.strict)
    warnings.formatwarning = _warning_line
    binary = _binary_only(ai, args.model)
    if args.output is None and not stream and binary and sys.stdout.isatty():
        print(binary_refusal(binary), file=sys.stderr)  # refused before anything is sent (or billed)
        return 2
    queue = bool(args.queue or args.request_id)
    try:
        # Opened before the call: a folder that does not exist or cannot be written is refused unbilled.
        out = OutputFile(args.output) if args.output not in (None, "-") and not queue else None
    except OutputError as exc:
        print(f"workers-ai run: {exc}", file=sys.stderr)
        return 2
    try:
        if queue:
            return _run_batch(ai, args, data if payload.body is None else payload.body)
        return _run_payload(ai, args, data if payload.body is None else payload.body, stream, out)
    except BaseException:
        if out is not None:
            out.discard()  # a failed call or a broken stream leaves no partial file
        raise
    finally:
        print(usage_line(ai.usage), file=sys.stderr)


def _warning_line(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> str:
    """Warnings (an unknown input key) as one plain line on stderr, without the source line."""
    return f"workers-ai: warning: {message}\n"


def _binary_only(ai: WorkersAI, model_id: str) -> str:
    """The content type when every output the model's schema declares is binary (an image, audio), else ''."""
    if model_id not in _registry.MODELS:
        return ""
    decoder = ai.model(model_id).decoder
    return decoder.binary_types[0] if decoder.binary_types and not decoder.variants else ""


def _run_payload(ai: WorkersAI, args: argparse.Namespace, payload: Any, stream: bool, out: OutputFile | None) -> int:
    if stream:
        if not isinstance(payload, dict):
            print("workers-ai run: --stream needs a JSON payload", file=sys.stderr)
            return 2
        with ai.run(args.model, payload, stream=True) as events:
            for event in events:
                if out is not None:
                    out.write(event.text.encode())
                else:
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
        if out is not None:
            out.write(b"\n")
            out.commit()
        else:
            sys.stdout.write("\n")
        return 0
    model: str = args.model
    result: object = ai.run(model, payload)
    if not isinstance(result, (bytes, bytearray)) and out is not None and not args.output.endswith(".json"):
        media = media_of(result)  # base64 JSON ({"image": ...}, {"audio": ...}): the file gets the bytes
        if media is not None:
            result = media
    if isinstance(result, (bytes, bytearray)):
        kind = getattr(result, "content_type", "") or "decoded base64"
        if out is None and sys.stdout.isatty():
            print(binary_refusal(kind, len(result)), file=sys.stderr)
            return 2
        if out is None:
            sys.stdout.buffer.write(bytes(result))
            sys.stdout.buffer.flush()
            return 0
        out.write(bytes(result))
        out.commit()
        print(f"workers-ai: wrote {len(result)} bytes of {kind} to {args.output}", file=sys.stderr)
        return 0
    if out is not None:
        out.write(msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n")
        out.commit()
        return 0
    _print_json(result)
    return 0


def _cmd_embed(args: argparse.Namespace) -> int:
    """``embed MODEL --texts FILE``: one text per line through ``embed_many``, a progress bar on stderr;
    prints one JSON array per text, one per line, in the order of the texts."""
    from .._client import WorkersAI

    try:
        raw = sys.stdin.buffer.read() if args.texts == "-" else Path(args.texts).read_bytes()
    except OSError as exc:
        print(f"workers-ai embed: cannot read {args.texts}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    texts = [line for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]
    if not texts:
        print(f"workers-ai embed: {args.texts} has no text (one text per line)", file=sys.stderr)
        return 2
    try:
        out = OutputFile(args.output) if args.output not in (None, "-") else None
    except OutputError as exc:
        print(f"workers-ai embed: {exc}", file=sys.stderr)
        return 2
    ai = WorkersAI(base_url=args.base_url)
    bar = ProgressBar()
    try:
        model_id: str = args.model
        handle = ai.model(model_id)
        vectors = handle.embed_many(
            texts, batch_size=args.batch_size, on_progress=bar, timeout=args.timeout, poll_interval=args.poll_interval
        )
    except BaseException:
        if out is not None:
            out.discard()
        raise
    finally:
        bar.end()
        print(usage_line(ai.usage), file=sys.stderr)
    encoded = b"".join(msgspec.json.encode(vector) + b"\n" for vector in vectors)
    if out is not None:
        with out:
            out.write(encoded)
    else:
        sys.stdout.buffer.write(encoded)
    return 0


def _serve(argv: list[str]) -> int:
    """``workers-ai serve ...``: every option goes to the emulator's own command line, which defines them."""
    try:  # imported by name: a lean vendored copy has no emulator, and must type-check without one
        module = importlib.import_module(f"{_registry.__package__}.testing.__main__")
    except ImportError as exc:
        print(f"workers-ai serve: the emulator is not available here ({exc})", file=sys.stderr)
        return 2
    serve: Callable[..., int] = module.main
    return serve(argv, prog="workers-ai serve")


# Commands of the schema generator, which this package never imports by name: a generator that is
# installed registers them in this entry point group (see the README's "Vendoring and the generator").
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
        print(
            f"workers-ai sync: the schema generator is registered but cannot be imported here ({exc}); "
            "run it at the root of a workers-ai checkout (`make sync`)",
            file=sys.stderr,
        )
        return 2
    from .._clients.sync import BaseClient
    from ..errors import APIError

    client = BaseClient(base_url=args.base_url)
    try:
        code = run_live(args, client.get_json, (APIError,))
    finally:
        client.close()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workers-ai", description="Cloudflare Workers AI from the command line")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser(
        "run",
        help="run a model",
        description="Inputs: --json, key=value pairs (typed by the model's schema; key=@PATH reads a file, "
        "key:=JSON takes raw JSON) and --file PATH (binary input: audio, an image).",
    )
    p_run.add_argument("model")
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
    p_run.add_argument("--base-url", default=None)
    p_run.add_argument(
        "--strict", action="store_true", help="refuse input keys the model's schema does not know (default: warn)"
    )
    p_run.set_defaults(func=_cmd_run)
    p_embed = sub.add_parser("embed", help="embed many texts (one per line) through the batch API")
    p_embed.add_argument("model")
    p_embed.add_argument("--texts", required=True, help="a file with one text per line; - reads stdin")
    p_embed.add_argument("-o", "--output", help="write the vectors (JSON) to this file")
    p_embed.add_argument("--batch-size", type=int, default=None, help="texts per request (default: the schema's)")
    p_embed.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for every batch")
    p_embed.add_argument("--poll-interval", type=float, default=1.0, help="first wait between batch polls")
    p_embed.add_argument("--base-url", default=None)
    p_embed.set_defaults(func=_cmd_embed)
    p_models = sub.add_parser("models", help="list the models this package knows (id, task, methods, price)")
    p_models.add_argument("--task", help="only models of this task, e.g. 'Text Embeddings'")
    p_models.add_argument("--json", action="store_true", help="print JSON for scripts")
    p_models.add_argument("--wide", action="store_true", help="every column whole (the methods too), however wide")
    p_models.set_defaults(func=_cmd_models)
    sub.add_parser("serve", help="start the local emulator (options: workers-ai serve --help)", add_help=False)
    generator = _generator_command("sync")
    if generator is not None:  # offered only where a generator is installed
        p_sync = sub.add_parser("sync", help="download the account's model schemas and regenerate")
        p_sync.add_argument("--schemas", default="schemas", help="folder the schema files go to (default: schemas)")
        p_sync.add_argument("--out", default="generated", help="folder the package is generated into")
        p_sync.add_argument("--package", default="workers_ai", help="dotted name of the generated package")
        p_sync.add_argument("--base-url", default=None)
        p_sync.add_argument("--exit-code", action="store_true", help="exit 1 when anything changed")
        p_sync.add_argument("--no-generate", action="store_true", help="write schemas only")
        p_sync.add_argument(
            "--prune", action="store_true", help="delete schema files of models the account no longer lists"
        )
        p_sync.add_argument("--per-page", type=int, default=50, help="page size for models/search")
        p_sync.set_defaults(func=_cmd_sync, generator=generator)
    add_live_commands(sub)  # listen, speak (realtime sessions: _cli/live.py)
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["serve"]:
        return _serve(given[1:])
    args, extra = parser.parse_known_args(argv)
    if args.command == "run" and extra:  # key=value pairs given after an option
        pairs = [e for e in extra if "=" in e and not e.startswith("-")]
        if len(pairs) != len(extra):
            parser.error(f"unrecognized arguments: {' '.join(e for e in extra if e not in pairs)}")
        args.pairs = [*args.pairs, *pairs]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        code: int = args.func(args)
        sys.stdout.flush()
    except WorkersAIError as exc:
        print(f"workers-ai: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except OutputError as exc:
        print(f"workers-ai: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return _closed_pipe()
    return code


def _closed_pipe() -> int:
    """The reader went away (``workers-ai models | head -1``): stop quietly, as ``cat`` does.

    stdout is pointed at /dev/null so the interpreter's own flush at exit cannot fail again; the exit
    status is the shell's for a SIGPIPE death (128 + 13)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141
