"""The asyncio driver: :class:`AsyncSession` runs the shared flows over aiohttp.

Configuration, URLs, headers and ``last_response`` come from :class:`~.._core.config.SessionConfig`;
every decision (retry or not, how long to wait, which error) is a flow of :mod:`.._core` that the sync
``Session`` runs too. The driver is printed from the sync one; written here: ``last_response`` per task,
blocking work in the loop's executor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .._core.config import SessionConfig
from .._core.flow import Call, Flow, Send, T
from ..errors import APIConnectionError
from .transport import AiohttpTransport

if TYPE_CHECKING:
    from .transport import AsyncTransport

__all__ = ["AsyncSession"]

# ``last_response`` per asyncio task (the sync session keeps it per thread): the owner is kept with the
# value, so a task that uses two clients sees each one's own last reply or None.
_LAST: ContextVar[tuple[object, Any] | None] = ContextVar("workers_ai_last_response", default=None)


class _TaskLocal:
    """Stands in for the session's ``threading.local``: ``last`` lives in the current task's context."""

    __slots__ = ()

    @property
    def last(self) -> Any:
        got = _LAST.get()
        return got[1] if got is not None and got[0] is self else None

    @last.setter
    def last(self, value: Any) -> None:
        _LAST.set((self, value))


async def _off_loop(command: Call) -> Any:
    """``command.fn(*args)`` in the loop's default executor. Cancelled meanwhile, it still waits for the
    call to end (a journal record is written whole or not at all before the flow is closed)."""
    import asyncio

    done = asyncio.get_running_loop().run_in_executor(None, command.fn, *command.args)
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        await asyncio.wait([done])
        raise


class AsyncSession(SessionConfig):
    """Configuration and the asyncio transport shared by every call (no thread per call)."""

    def _new_transport(self, transport: Any, max_connections: int, compress: bool) -> AsyncTransport:
        import asyncio  # here, not at import: ``import workers_ai`` stays free of asyncio

        self._local: Any = _TaskLocal()
        self._sleep_async: Callable[[float], Awaitable[None]] = asyncio.sleep
        return transport or AiohttpTransport(max_connections=max_connections, decompress=compress, network=self.network)

    # generated from _sync/session.py:Session by codegen.twins, to the end of the class
    _transport: AsyncTransport

    async def aclose(self) -> None:
        """Close pooled connections (a ``with_options`` copy leaves the ones it shares to their owner)."""
        if self._owns_transport:
            await self._transport.aclose()

    async def _drive(self, flow: Flow[T]) -> T:
        """Run ``flow`` to its result, answering its commands with awaited I/O (the driver: what every
        call of this client runs)."""
        send = self._transport.send
        answer: Any = None
        try:
            command = flow.send(None)
            while True:
                if isinstance(command, Send):
                    try:
                        resp = await send(
                            command.method, command.url, command.headers, command.body, deadline=command.deadline
                        )
                        data = b"" if command.stream and resp.status < 300 else await resp.read_all(command.limit)
                    except APIConnectionError as exc:
                        command = flow.throw(exc)
                        continue
                    answer = (resp, data)
                elif isinstance(command, Call):
                    try:
                        answer = await _off_loop(command)
                    except Exception as exc:
                        command = flow.throw(exc)
                        continue
                else:
                    await self._sleep_async(command.seconds)
                    answer = None
                command = flow.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            flow.close()
