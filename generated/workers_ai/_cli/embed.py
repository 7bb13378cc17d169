"""``workers-ai embed``: many texts through the batch API with a progress bar, one JSON vector per line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from .files import output_file
from .output import ProgressBar, UsageError, new_client

__all__ = ["cmd_embed"]


def cmd_embed(args: argparse.Namespace) -> int:
    """``embed MODEL --texts FILE``: one text per line through ``embed_many``, a progress bar on stderr;
    prints one JSON array per text, one per line, in the order of the texts."""
    try:
        raw = sys.stdin.buffer.read() if args.texts == "-" else Path(args.texts).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {args.texts}: {exc.strerror or exc}") from None
    texts = raw.decode("utf-8", "replace").splitlines()
    if not texts:
        raise UsageError(f"{args.texts} has no text (one text per line)")
    # One vector per line, in order: a blank line is refused, never skipped (the outputs would no
    # longer line up with the lines).
    blank = [str(number) for number, line in enumerate(texts, 1) if not line.strip()]
    if blank:
        where = ", ".join(blank[:10]) + (f" and {len(blank) - 10} more" if len(blank) > 10 else "")
        lines = f"lines {where} are" if len(blank) > 1 else f"line {where} is"
        raise UsageError(
            f"{args.texts}: {lines} blank; every line is one text and gets one vector,"
            " so remove the line or give it text"
        )
    out = output_file(args.output) if args.output not in (None, "-") else None
    ai = new_client(args)
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
    encoded = b"".join(msgspec.json.encode(vector) + b"\n" for vector in vectors)
    if out is not None:
        with out:
            out.write(encoded)
    else:
        sys.stdout.buffer.write(encoded)
    return 0
