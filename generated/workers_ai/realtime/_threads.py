"""What the blocking realtime session runs on: a ``websockets`` sync connection, a bounded inbox, an event,
a lock and threads.

Every name here has a twin of the same name and use in :mod:`._tasks` (asyncio): the session, written once
in :mod:`._sync` against these names, is printed for asyncio with this module's name changed and the calls
that wait awaited (docs/architecture.md, "One source for each face"). What the two differ in lives in these two modules.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any, Protocol

from ._core import SessionCore
from ._wsopts import connect_options, websockets_module

__all__ = ["NOTHING", "Done", "Inbox", "Lock", "Socket", "Worker", "open_socket", "sleep", "spawn", "stop"]

NOTHING: Any = object()  # what a wait gives when nothing came
sleep = time.sleep
_TICK = 0.25  # how often a thread blocked on the inbox looks whether the session is over


class _Connection(Protocol):
    """What a session uses of ``websockets.sync.client.ClientConnection``."""

    @property
    def close_code(self) -> int | None: ...

    @property
    def close_reason(self) -> str | None: ...

    def __iter__(self) -> Iterator[str | bytes]: ...

    def send(self, message: str | bytes) -> None: ...


class Socket:
    """An open connection: frames sent and received, and how it ended."""

    def __init__(self, connection: _Connection, stack: ExitStack) -> None:
        self._connection = connection
        self._stack = stack

    def send(self, frame: str | bytes) -> None:
        """Send one frame; blocks while the socket is backed up."""
        self._connection.send(frame)

    def frames(self) -> Iterator[str | bytes]:
        """The frames as they come; ends at a clean close, raises ``ConnectionClosed`` on any other."""
        return iter(self._connection)

    @property
    def close_code(self) -> int | None:
        return self._connection.close_code

    @property
    def close_reason(self) -> str | None:
        return self._connection.close_reason

    def close(self) -> None:
        """The closing handshake (within ``close_timeout``); the socket is closed either way."""
        self._stack.close()


def open_socket(core: SessionCore) -> Socket:
    """Connect to ``core.url`` (a refused handshake raises websockets' exception; see ``handshake_error``)."""
    connect = websockets_module("sync.client").connect  # a function in websockets 15-16, a class in 17
    stack = ExitStack()
    # Entered as a context manager (websockets >= 17 warns otherwise); left in close().
    connection: _Connection = stack.enter_context(connect(core.url, **connect_options(core)))
    return Socket(connection, stack)


class Inbox:
    """Frames read ahead of the caller, at most ``size``: while it is full the reader waits, the socket is
    no longer read and the server is held back."""

    def __init__(self, size: int) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(size)
        self._closed = False

    def put(self, item: Any) -> None:
        """Add ``item``, waiting for room (not once the inbox is closed)."""
        try:
            self._queue.put_nowait(item)
            return
        except queue.Full:
            pass
        while not self._closed:
            try:
                self._queue.put(item, timeout=_TICK)
                return
            except queue.Full:
                continue

    def get(self, timeout: float | None) -> Any:
        """The next item, waiting at most ``timeout`` seconds (None: until one comes or the inbox closes);
        :data:`NOTHING` when none came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _TICK if deadline is None else min(_TICK, max(0.0, deadline - time.monotonic()))
            try:
                return self._queue.get(timeout=wait)
            except queue.Empty:
                if self._closed or (deadline is not None and time.monotonic() >= deadline):
                    return NOTHING

    def get_nowait(self) -> Any:
        """The next item if one is there, else :data:`NOTHING`."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return NOTHING

    def close(self) -> None:
        """Stop waiting: a reader waiting for room and a caller waiting for an item both return."""
        self._closed = True


class Done:
    """Set once: the connection is over."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Whether it was set within ``timeout`` seconds."""
        return self._event.wait(timeout)


Lock = threading.Lock  # the session's frames are built one at a time: the keepalive thread builds them too
Worker = threading.Thread


def spawn(work: Callable[[], None], name: str) -> Worker:
    """Run ``work`` beside the caller (a daemon thread: a session never keeps the program alive)."""
    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    return worker


def stop(workers: Sequence[Worker]) -> None:
    """Wait a moment for ``workers`` to end (they end on their own once the connection is over)."""
    for worker in workers:
        if worker is not threading.current_thread():
            worker.join(1.0)
