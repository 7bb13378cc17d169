"""``workers-ai batch MODEL --input requests.jsonl -o results.jsonl [--journal FILE]``: a JSON Lines file
of requests through the batch queue (:mod:`.._batch.many`), one result line per request line, in order.

Memory does not grow with the number of requests: the input is read twice, a line at a time (first to
check every request and fingerprint them, nothing sent when one is bad; then to send them), and the
results are written as each batch at the front settles. The output goes to a temporary file in the same
folder and replaces ``-o`` only when complete. With ``--journal`` the same command resumes after a crash
(known batches are polled, nothing queued is sent again) and, once a run has finished and its output is
in place, does nothing at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from typing import Any

import msgspec

from .files import output_file
from .output import ProgressBar, UsageError, new_client

__all__ = ["cmd_batch"]


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line, one at a time."""
    with open(path, "rb") as fh:
        yield from enumerate(fh, start=1)


class FileSource:
    """The requests of a JSON Lines file, checked and fingerprinted on the first pass, re-read to send."""

    def __init__(self, handle: Any, path: str, max_bytes: int) -> None:
        from .._batch.journal import Fingerprint
        from .._batch.many import encode_unit
        from .._batch.wire import batch_item_types
        from ..errors import InputValidationError

        self.handle = handle
        self.path = path
        self.max_bytes = max_bytes
        fp = Fingerprint(handle.model_id)
        kinds = batch_item_types(handle)
        count = 0
        for n, line in _lines(path):
            where = f"{path}:{n}"
            if not line.strip():
                raise InputValidationError(handle.model_id, where, "an empty line (one JSON request per line)")
            try:
                item = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise InputValidationError(handle.model_id, where, f"not JSON: {exc}") from None
            if not isinstance(item, dict):
                raise InputValidationError(handle.model_id, where, "expected a JSON object (one request)")
            fp.add(encode_unit(handle, item, count, kinds, max_bytes, where).body)
            count += 1
        if not count:
            raise InputValidationError(handle.model_id, path, "no requests (one JSON request per line)")
        self.count = count
        self.fingerprint = fp.hexdigest()

    def __iter__(self) -> Iterator[Any]:
        from .._batch.many import encode_unit

        index = 0
        for n, line in _lines(self.path):
            # Checked on the first pass: a mapping encodes to the same bytes without the check.
            yield encode_unit(self.handle, msgspec.json.decode(line), index, (), self.max_bytes, f"{self.path}:{n}")
            index += 1


def cmd_batch(args: argparse.Namespace) -> int:
    from .._batch.jobs import BatchItem, BatchJob
    from .._batch.journal import Journal
    from .._batch.many import ManyOptions, many_flow
    from .._batch.wire import MAX_BATCH_BYTES, require_batch

    ai = new_client(args)
    model_id: str = args.model
    handle: Any = ai.model(model_id)
    require_batch(handle)
    try:
        source = FileSource(handle, args.input, MAX_BATCH_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {args.input}: {exc.strerror or exc}") from None
    if args.journal is not None and os.path.exists(args.output):
        book = Journal(args.journal, model_id, source.count, source.fingerprint)
        done = book.finished
        book.close()
        if done:
            print(
                f"workers-ai batch: {args.output} is complete ({source.count} results, journal {args.journal}); "
                "nothing sent",
                file=sys.stderr,
            )
            return 0
    out = output_file(args.output)
    encode = msgspec.json.Encoder().encode
    failed = 0

    def sink(item: BatchItem[Any]) -> None:
        nonlocal failed
        if item.success:
            line = {"id": item.id, "external_reference": item.external_reference, "result": item.result}
        else:
            failed += 1
            line = {"id": item.id, "external_reference": item.external_reference, "error": item.error}
        out.write(encode(line) + b"\n")

    bar = ProgressBar(unit="requests") if sys.stderr.isatty() else None
    options = ManyOptions(
        timeout=args.timeout,
        poll_interval=args.poll_interval,
        batch_size=args.batch_size,
        max_in_flight=args.max_in_flight,
    )
    try:
        flow = many_flow(handle, BatchJob[Any], source, sink, journal=args.journal, on_progress=bar, options=options)
        sent: int = handle.client._drive(flow)  # pyright: ignore[reportPrivateUsage]
    except BaseException:
        out.discard()
        raise
    finally:
        if bar is not None:
            bar.end()
    out.commit()
    print(
        f"workers-ai batch: {source.count} results in {args.output} ({failed} failed); "
        f"{sent} {'batch' if sent == 1 else 'batches'} sent",
        file=sys.stderr,
    )
    return 1 if failed else 0
