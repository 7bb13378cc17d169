"""The journal of a bulk batch run (``batch_many(journal=PATH)``, ``workers-ai batch --journal``): an
append-only JSON Lines file, each record written and fsynced before the step it guards.

Records, one per line::

    {"t": "journal", "v": 1, "model": M, "count": N, "fingerprint": F}   # first line: what the run is for
    {"t": "intent", "b": 3, "r": [[0, 512]], "p": null}     # batch 3 holds requests 0..511: about to be sent
    {"t": "submitted", "b": 3, "id": "<request_id>"}                     # the API queued it; poll this id
    {"t": "finished"}                                                    # every result was delivered

``r`` lists the batch's requests as ``[start, end)`` ranges of input indexes; ``p`` names the batch a
retry batch re-sends failed items of. The order of writes is the guarantee: the ``intent`` is on disk
before the submission is sent and the ``submitted`` record (the request id) before any wait, so after a
crash

- a batch with both records is polled again, never re-sent;
- a batch with an ``intent`` and no ``submitted`` record was *in flight*: the API may or may not have
  queued it, and it has no idempotency key, so its requests are sent again (at most that one batch, per
  process that was killed, can be paid twice);
- requests in no batch were never sent and are sent now.

A journal written for another model or other requests (``fingerprint``: SHA-256 of the model id and every
encoded request) is refused, naming the difference. A torn last line (a crash in the middle of a write)
is dropped before appending. A journal is locked (``flock``) while a run has it open: a second run on the
same file is refused instead of interleaving records.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import IO, Any

import msgspec

from ..errors import ConfigurationError

__all__ = ["Fingerprint", "Journal", "JournalBatch", "JournalError"]

VERSION = 1


class JournalError(ConfigurationError):
    """The journal cannot be used for this run (another model, other requests, unreadable); nothing was sent."""


class Fingerprint:
    """SHA-256 over the model id and each encoded request, fed one request at a time (streams need no list)."""

    def __init__(self, model_id: str) -> None:
        self._hash = hashlib.sha256(model_id.encode() + b"\n")

    def add(self, body: bytes) -> None:
        self._hash.update(len(body).to_bytes(8, "little") + body)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class JournalBatch(msgspec.Struct):
    """A batch the journal knows: its number, request ranges, parent (for a retry batch) and request id
    (None when only its intent was written: it was in flight when the writer stopped)."""

    number: int
    ranges: list[tuple[int, int]]
    parent: int | None = None
    request_id: str | None = None

    def indexes(self) -> Iterable[int]:
        for start, end in self.ranges:
            yield from range(start, end)


class _Record(msgspec.Struct, omit_defaults=True):
    t: str
    v: int | None = None
    model: str | None = None
    count: int | None = None
    fingerprint: str | None = None
    b: int | None = None
    r: list[tuple[int, int]] | None = None
    p: int | None = None
    id: str | None = None


_decode = msgspec.json.Decoder(_Record).decode
_encode = msgspec.json.Encoder().encode


class Journal:
    """An open journal: what earlier runs recorded (``batches``, ``finished``) and the append side."""

    def __init__(self, path: str | os.PathLike[str], model_id: str, count: int, fingerprint: str) -> None:
        self.path = os.fspath(path)
        self.model_id = model_id
        self.batches: dict[int, JournalBatch] = {}
        self.finished = False
        self._fh: IO[bytes] | None = None
        header = {"t": "journal", "v": VERSION, "model": model_id, "count": count, "fingerprint": fingerprint}
        try:
            fh = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666), "r+b")
        except OSError as exc:
            raise JournalError(f"journal {self.path}: cannot open it: {exc.strerror or exc}") from None
        try:
            if not _lock(fh):
                raise JournalError(f"journal {self.path} is in use by another run (a process holds its lock)")
            data = fh.read()
            keep = len(data)
            if data and not data.endswith(b"\n"):
                keep = data.rfind(b"\n") + 1  # a torn last line: its write never completed
            lines = data[:keep].splitlines()
            if lines:
                self._read(lines, model_id, count, fingerprint)
            fh.truncate(keep)
            fh.seek(keep)
        except OSError as exc:
            fh.close()
            raise JournalError(f"journal {self.path}: cannot read it: {exc.strerror or exc}") from None
        except BaseException:
            fh.close()
            raise
        self._fh = fh
        if not lines:
            self._append(header)

    def _read(self, lines: list[bytes], model_id: str, count: int, fingerprint: str) -> None:
        try:
            head = _decode(lines[0])
        except msgspec.DecodeError:
            head = None
        if head is None or head.t != "journal":
            raise JournalError(f"journal {self.path}: not a workers-ai batch journal (its first line is not a header)")
        if head.v != VERSION:
            raise JournalError(f"journal {self.path}: version {head.v}, this SDK writes version {VERSION}")
        if head.model != model_id:
            raise JournalError(
                f"journal {self.path} was written for model {head.model}, not {model_id}: use another journal file"
            )
        if head.count != count:
            raise JournalError(
                f"journal {self.path} was written for {head.count} requests to {model_id}; this run has {count}: "
                "the requests differ, use another journal file"
            )
        if head.fingerprint != fingerprint:
            raise JournalError(
                f"journal {self.path} was written for other requests to {model_id} (same count, {count}; "
                f"fingerprint {str(head.fingerprint)[:12]} there, {fingerprint[:12]} here): use another journal file"
            )
        for n, line in enumerate(lines[1:], start=2):
            try:
                rec = _decode(line)
            except msgspec.DecodeError:
                raise JournalError(f"journal {self.path}: line {n} is not a journal record") from None
            if rec.t == "intent" and rec.b is not None and rec.r is not None:
                self.batches[rec.b] = JournalBatch(rec.b, [(s, e) for s, e in rec.r], rec.p)
            elif rec.t == "submitted" and rec.b is not None and rec.b in self.batches:
                self.batches[rec.b].request_id = rec.id
            elif rec.t == "finished":
                self.finished = True

    @property
    def next_number(self) -> int:
        return max(self.batches, default=-1) + 1

    def _append(self, record: dict[str, Any]) -> None:
        fh = self._fh
        if fh is None:
            raise JournalError(f"journal {self.path} is closed")
        try:
            fh.write(_encode(record) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        except OSError as exc:
            raise JournalError(f"journal {self.path}: cannot write it: {exc.strerror or exc}") from None

    def intent(self, number: int, ranges: list[tuple[int, int]], parent: int | None) -> None:
        """Before a batch is sent: its number and requests."""
        self._append({"t": "intent", "b": number, "r": ranges, "p": parent})
        self.batches[number] = JournalBatch(number, ranges, parent)

    def submitted(self, number: int, request_id: str) -> None:
        """After the API queued it, before any wait: its request id."""
        self._append({"t": "submitted", "b": number, "id": request_id})
        self.batches[number].request_id = request_id

    def finish(self) -> None:
        self._append({"t": "finished"})
        self.finished = True

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _lock(fh: IO[bytes]) -> bool:
    """Hold an exclusive lock on the open journal for as long as it is open (released when it is closed,
    or when the process dies); False when another process holds it. Where ``fcntl`` is missing, no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def ranges_of(indexes: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted indexes as ``[start, end)`` ranges."""
    out: list[tuple[int, int]] = []
    for i in indexes:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out
