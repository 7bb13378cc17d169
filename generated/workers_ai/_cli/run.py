"""``workers-ai run``: one call (JSON, key=value pairs or a file in; JSON, text or bytes out), a stream, or
an async batch waited for with a status line."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING, Any

import msgspec

from .. import _registry
from .files import OutputFile, output_file
from .input import build_payload
from .output import UsageError, binary_refusal, media_of, new_client, print_json

if TYPE_CHECKING:
    from .._batch.jobs import BatchJob, BatchResult, BatchStatus
    from .._client import WorkersAI

__all__ = ["cmd_run"]


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
        print_json({"request_id": job.request_id, "model": job.model})
        return 0
    progress = _Progress(job.request_id)
    try:
        result = job.wait(timeout=args.timeout, poll_interval=args.poll_interval, on_progress=progress)
    finally:
        progress.end()
    print_json(_batch_json(job, result))
    return 0 if result.ok else 1


def cmd_run(args: argparse.Namespace) -> int:
    given = args.json is not None or args.pairs or args.file is not None
    if not given and not args.request_id:
        raise UsageError(
            "give the input: --json JSON (or - for stdin, @file.json), key=value pairs, "
            "--file PATH; or --queue --request-id ID to resume a batch"
        )
    payload = build_payload(args.model, args.json, args.pairs, args.file)
    data = payload.data
    stream = bool(args.stream)
    if data is not None and data.get("stream") is True:
        del data["stream"]  # `"stream": true` inside the JSON means the same as --stream
        stream = True
    ai = new_client(args, strict_inputs=args.strict)
    warnings.formatwarning = _warning_line
    binary = _binary_only(ai, args.model)
    if args.output is None and not stream and binary and sys.stdout.isatty():
        raise UsageError(binary_refusal(binary))  # refused before anything is sent (or billed)
    queue = bool(args.queue or args.request_id)
    # Opened before the call: a folder that does not exist or cannot be written is refused unbilled.
    out = output_file(args.output) if args.output not in (None, "-") and not queue else None
    try:
        if queue:
            return _run_batch(ai, args, data if payload.body is None else payload.body)
        return _run_payload(ai, args, data if payload.body is None else payload.body, stream, out)
    except BaseException:
        if out is not None:
            out.discard()  # a failed call or a broken stream leaves no partial file
        raise


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
            raise UsageError("--stream needs a JSON payload")
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
            raise UsageError(binary_refusal(kind, len(result)))
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
    print_json(result)
    return 0
