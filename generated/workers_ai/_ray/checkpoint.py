"""Checkpoints of ``workers_ai.ray`` jobs: each batch of rows as ``DIR/<hash>.parquet``, failed rows too.

The hash covers the model, the options (or method) and the batch's inputs, so a later run with the same
``output_path`` finds the file of a batch it has seen. The file holds every row's result and its error
(None for a row that succeeded): a re-run takes the rows that succeeded from it and calls the API only
for the rows that failed, then writes the file again. Writing is all or nothing (a temporary file
renamed over the old one), so a crash never leaves half a batch behind. ``attempt`` (in the file's
metadata) counts the runs that wrote it: a queued re-run journals under a new name each time (see
``workers_ai._ray.actors``).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import msgspec

__all__ = ["ERRORS", "Checkpoint", "attempt_of"]

# pyarrow ships no type information: it is reached through these two untyped handles.
pa: Any = importlib.import_module("pyarrow")
pq: Any = importlib.import_module("pyarrow.parquet")

ERRORS = "errors"
_ATTEMPT = b"workers_ai.attempt"
_ENCODER = msgspec.json.Encoder()


class Checkpoint:
    """Finished batches as parquet files named by a hash of their inputs (see the module docs)."""

    def __init__(self, path: str | None, salt: bytes) -> None:
        self.path = path
        self.salt = salt
        if path is not None:
            os.makedirs(path, exist_ok=True)

    def file(self, inputs: Sequence[Any]) -> str | None:
        if self.path is None:
            return None
        digest = hashlib.sha256(self.salt)
        for value in inputs:
            part = _ENCODER.encode(value)
            digest.update(len(part).to_bytes(8, "little") + part)
        return os.path.join(self.path, digest.hexdigest()[:32] + ".parquet")

    def load(self, file: str | None) -> Any:
        """The batch's table, or None when it was never written."""
        if file is None or not os.path.exists(file):
            return None
        return pq.read_table(file)

    def save(self, file: str | None, columns: dict[str, Any], attempt: int) -> bool:
        """Write the batch (``columns``: name -> Arrow array); False when Arrow cannot hold a column."""
        if file is None:
            return True
        try:
            table = pa.table(columns).replace_schema_metadata({_ATTEMPT: str(attempt).encode()})
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return False  # values Arrow cannot hold as one column are not checkpointed
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file), suffix=".part")
        os.close(fd)
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, file)  # all or nothing: a crash never leaves a half-written batch behind
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return True


def errors_of(table: Any, rows: int) -> list[str | None]:
    """The rows' errors as saved (a file written before errors were kept holds successful rows only)."""
    if ERRORS not in table.column_names:
        return [None] * rows
    saved: list[str | None] = table.column(ERRORS).to_pylist()
    return saved


def attempt_of(table: Any) -> int:
    """How many runs wrote this batch's file (0 for none)."""
    if table is None:
        return 0
    meta: dict[bytes, bytes] = table.schema.metadata or {}
    try:
        return int(meta.get(_ATTEMPT, b"1"))
    except ValueError:
        return 1
