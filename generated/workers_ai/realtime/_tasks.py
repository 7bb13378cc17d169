"""What the asyncio realtime session runs on: a ``websockets`` asyncio connection, a bounded inbox, an event,
a lock and tasks: the twins, name for name, of :mod:`._threads` (whose docstring says why).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, Protocol

from ._core import SessionCore
from ._wsopts import connect_options, websockets_module

__all__ = ["NOTHING", "Done", "Inbox", "Lock", "Socket", "Worker", "open_socket", "sleep", "spawn", "stop"]

NOTHING: Any = object()  # what a wait gives when nothing came
sleep = asyncio.sleep
_TICK = 0.25  # how often a task waiting on the inbox looks whether the session is over


class _Connection(Protocol):
    """What a session uses of ``websockets.asyncio.client.ClientConnection``."""

    @property
    def close_code(self) -> int | None: ...

    @property
    def close_reason(self) -> str | None: ...

    def __aiter__(self) -> AsyncIterator[str | bytes]: ...

    async def send(self, message: str | bytes) -> None: ...

    async def close(self) -> None: ...


class Socket:
    """An open connection: frames sent and received, and how it ended."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    async def send(self, frame: str | bytes) -> None:
        """Send one frame; waits while more than ``write_limit`` bytes are buffered."""
        await self._connection.send(frame)

    def frames(self) -> AsyncIterator[str | bytes]:
        """The frames as they come; ends at a clean close, raises ``ConnectionClosed`` on any other."""
        return self._connection.__aiter__()

    @property
    def close_code(self) -> int | None:
        return self._connection.close_code

    @property
    def close_reason(self) -> str | None:
        return self._connection.close_reason

    async def close(self) -> None:
        """The closing handshake (within ``close_timeout``); the socket is closed either way."""
        await self._connection.close()


async def open_socket(core: SessionCore) -> Socket:
    """Connect to ``core.url`` (a refused handshake raises websockets' exception; see ``handshake_error``)."""
    connect = websockets_module("asyncio.client").connect
    options = connect_options(core)
    options["write_limit"] = core.limits.write_limit
    connection: _Connection = await connect(core.url, **options)
    return Socket(connection)


class Inbox:
    """Frames read ahead of the caller, at most ``size``: while it is full the reader waits, the socket is
    no longer read and the server is held back."""

    def __init__(self, size: int) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue(size)
        self._closed = False

    async def put(self, item: Any) -> None:
        """Add ``item``, waiting for room (not once the inbox is closed)."""
        try:
            self._queue.put_nowait(item)
            return
        except asyncio.QueueFull:
            pass
        while not self._closed:
            try:
                await asyncio.wait_for(self._queue.put(item), _TICK)
                return
            except asyncio.TimeoutError:
                continue

    async def get(self, timeout: float | None) -> Any:
        """The next item, waiting at most ``timeout`` seconds (None: until one comes or the inbox closes);
        :data:`NOTHING` when none came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _TICK if deadline is None else min(_TICK, max(0.0, deadline - time.monotonic()))
            try:
                return await asyncio.wait_for(self._queue.get(), wait)
            except asyncio.TimeoutError:
                if self._closed or (deadline is not None and time.monotonic() >= deadline):
                    return NOTHING

    def get_nowait(self) -> Any:
        """The next item if one is there, else :data:`NOTHING`."""
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return NOTHING

    def close(self) -> None:
        """Stop waiting: a reader waiting for room and a caller waiting for an item both return."""
        self._closed = True


class Done:
    """Set once: the connection is over."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self, timeout: float) -> bool:
        """Whether it was set within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True


class Lock:
    """The thread lock's stand-in: a task builds a frame without yielding to another, so nothing to hold."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        return None


Worker = asyncio.Task[None]


def spawn(work: Callable[[], Coroutine[Any, Any, None]], name: str) -> Worker:
    """Run ``work`` beside the caller, as a task of the running loop."""
    return asyncio.get_running_loop().create_task(work(), name=name)


async def stop(workers: Sequence[Worker]) -> None:
    """Cancel ``workers`` and wait until they have ended."""
    for worker in workers:
        worker.cancel()
    for worker in workers:
        try:
            await worker
        except (asyncio.CancelledError, Exception):
            pass
