"""Rate budgets shared by processes (docs/bulk.md, "The rate budget").

A client's ``rate_limit`` paces the threads and tasks of that client. To keep several processes to one
limit together, give each client the same shared budget instead of dividing the limit by hand:

- :func:`host_budget`: every process on this host (``multiprocessing``, Spark tasks, separate commands);
- ``workers_ai.ray.cluster_budget``: every actor and task of a Ray job (``workers_ai.ray``'s helpers make
  one from the client's own ``rate_limit``).

``WorkersAI(rate_limit=host_budget(3000))``: 3000 requests a minute per model for all of them together.

A host budget is the schedules of ``_core/shared_pace`` in a locked file. Why a locked file: every
process of the host can reach it by name (unrelated ones too: Spark's Python workers, separate
``python`` commands), it needs no server to start or stop, and the lock is the kernel's (``flock``): it
goes with the process that holds it, so a process killed with ``SIGKILL`` in the middle of a lease never
leaves the budget locked. Shared memory would need a lock handed down from one parent (a killed holder
leaves it held); a local server would need starting, stopping and a port. Each lease is one lock, one
read and one write of a small JSON line (tens of microseconds), once per few requests. The times in it
are ``time.monotonic()``, one clock for the whole host.

The file holds only rates and times (no token): ``<directory>/workers-ai-budget-<name>.json``, readable
by its owner only.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from typing import IO, Any

import msgspec

from ._core.ratelimit import RateBudget, RateLimit
from ._core.shared_pace import Grant, Ledger, holder_id
from .errors import ConfigurationError

__all__ = ["HostKeeper", "RateBudget", "RateLimit", "host_budget"]

_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def host_budget(
    limit: RateLimit | str = "published", *, name: str = "default", directory: str | None = None
) -> RateBudget:
    """A rate budget shared by every process on this host that uses it: ``limit`` as ``rate_limit=`` takes it
    (the published limits by default, a number, or a mapping by model id), kept under ``name`` in
    ``directory`` (default: the system's temporary folder). Give it to ``WorkersAI(rate_limit=...)``; a
    client pickled with it shares it wherever it is unpickled on this host."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"a host budget's name is 1-100 letters, digits, '.', '_' or '-', got {name!r}")
    folder = directory if directory is not None else tempfile.gettempdir()
    if not os.path.isdir(folder):
        raise ConfigurationError(f"host budget {name!r}: {folder!r} is not a folder")
    return RateBudget(limit, keeper=HostKeeper(os.path.join(folder, f"workers-ai-budget-{name}.json")))


class HostKeeper:
    """The :class:`~.shared_pace.Keeper` of a host budget: a :class:`~.shared_pace.Ledger` in the file at
    ``path``, read and written under an exclusive lock. Pickles as its path."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._pid = -1
        self._holder = ""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HostKeeper({self.path!r})"

    def __reduce__(self) -> tuple[type[HostKeeper], tuple[str]]:
        return (HostKeeper, (self.path,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostKeeper) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def _guard(self) -> threading.Lock:
        if self._pid != os.getpid():  # first use in this process (a forked child: the lock may have been held)
            self._lock, self._pid, self._holder = threading.Lock(), os.getpid(), holder_id()
        return self._lock

    def _update(self, change: Any) -> Any:
        """``change(ledger, now)`` on the file's ledger, under the lock; its result. The file is opened for
        each change (a few microseconds), so nothing stays open."""
        with self._guard():
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise ConfigurationError(f"host budget {self.path}: cannot open it ({exc.strerror})") from None
            with os.fdopen(fd, "r+b", buffering=0) as fh:
                _lock(fh)
                try:
                    line = fh.read().split(b"\n", 1)[0]  # a write cut short by a crash leaves a tail after it
                    try:
                        ledger = Ledger.from_builtins(msgspec.json.decode(line)) if line else Ledger()
                    except msgspec.DecodeError:
                        ledger = Ledger()
                    result = change(ledger, time.monotonic())
                    data = msgspec.json.encode(ledger.to_builtins()) + b"\n"
                    os.pwrite(fd, data, 0)
                    os.ftruncate(fd, len(data))
                    return result
                finally:
                    _unlock(fh)

    def lease(self, model_id: str, rpm: float, want: int, successes: int) -> Grant:
        grant: Grant = self._update(
            lambda ledger, now: ledger.lease(now, model_id, rpm, want, self._holder, successes)  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
        )
        return grant

    def throttle(self, model_id: str, rpm: float, retry_after: float | None, age: float | None) -> None:
        self._update(lambda ledger, now: ledger.throttle(now, model_id, rpm, retry_after, age))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]

    def release(self, model_id: str, rpm: float, offsets: list[float]) -> None:
        self._update(lambda ledger, now: ledger.release(now, model_id, rpm, offsets))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]


def _lock(fh: IO[bytes]) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: a byte-range lock on the first byte (waits, retrying, as flock does)
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)


def _unlock(fh: IO[bytes]) -> None:
    try:
        import fcntl
    except ImportError:
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
