"""Where ``workers-ai`` writes a reply: a file checked before the (billed) call and written atomically.

:class:`OutputFile` opens a temporary file next to the target when it is made, so a missing folder, a
folder given as the file or a read-only place is refused before anything is sent. The reply goes into
the temporary file and replaces the target only when it is complete (``os.replace``): a broken stream or
a full disk leaves no partial file and the previous content, if any, stays. A target that exists and is
not a regular file (``/dev/full``, ``/dev/stdout``, a FIFO, a symlink to one) is written in place: a
rename would replace the device with a file. Any failed write says the output was not written, and the
command exits non-zero.
"""

from __future__ import annotations

import os
import stat
import tempfile
from types import TracebackType
from typing import IO

from .output import UsageError

__all__ = ["OutputError", "OutputFile", "output_file"]


class OutputError(Exception):
    """The output file cannot be written; the message names it."""


def output_file(path: str) -> OutputFile:
    """``-o PATH`` opened before anything is sent; a place it cannot be written is a usage error."""
    try:
        return OutputFile(path)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


class OutputFile:
    """A target path with its temporary file already open (binary); use in ``with``: the target is
    replaced on a clean exit, the temporary file removed on any error."""

    def __init__(self, path: str) -> None:
        self.path = path
        target = os.path.abspath(os.path.expanduser(path))
        folder = os.path.dirname(target)
        if os.path.isdir(target):
            raise OutputError(f"-o {path}: is a folder; name a file in it")
        if not os.path.isdir(folder):
            raise OutputError(f"-o {path}: the folder {folder} does not exist")
        self._target = target
        self._temp: str | None = None
        self.size = 0
        try:
            mode = os.stat(target).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):  # a device or a pipe: written in place
            try:
                self.fh: IO[bytes] = open(target, "wb")  # closed by commit or discard
            except OSError as exc:
                raise OutputError(f"-o {path}: cannot write it: {exc.strerror or exc}") from None
            return
        try:
            fd, self._temp = tempfile.mkstemp(dir=folder, prefix=".workers-ai-", suffix=".part")
        except OSError as exc:
            raise OutputError(f"-o {path}: cannot write in {folder}: {exc.strerror or exc}") from None
        self.fh = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        try:
            self.fh.write(data)
        except OSError as exc:
            self.discard()
            raise OutputError(f"-o {self.path}: {exc.strerror or exc}; the output was not written") from None
        self.size += len(data)

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def commit(self) -> None:
        try:
            self.fh.flush()
            if self._temp is None:
                self.fh.close()
                return
            os.fsync(self.fh.fileno())
            self.fh.close()
            os.chmod(self._temp, 0o666 & ~_umask())
            os.replace(self._temp, self._target)
        except OSError as exc:
            self.discard()
            raise OutputError(f"-o {self.path}: {exc.strerror or exc}; the output was not written") from None

    def discard(self) -> None:
        try:
            self.fh.close()
        except OSError:  # the buffered rest could not be written either: it is dropped with the file
            pass
        if self._temp is None:
            return
        try:
            os.unlink(self._temp)
        except OSError:
            pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
