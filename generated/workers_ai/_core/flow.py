"""Flows: the runtime's rules written once, as generators that ask for I/O instead of doing it.

A flow yields commands and receives their answers:

- :class:`Send`: one HTTP attempt. The answer is ``(response, body)``: the body read whole (within
  ``limit``), or ``b""`` with the body left unread for a 2xx ``stream``. A connection failure
  (:class:`~..errors.APIConnectionError`) is thrown into the flow at the ``yield``.
- :class:`Sleep`: wait ``seconds``; the answer is None.
- :class:`Call`: blocking work that is not HTTP (a journal's write and fsync); the answer is what
  ``fn(*args)`` returns, and what it raises is thrown into the flow at the ``yield``. The sync driver
  calls it in place, the async driver in a worker thread, so the event loop is never blocked by it.

The flow returns its result (``StopIteration.value``). The sync session runs flows with a blocking
loop over urllib3 (``Session.drive``), the async session with an awaiting loop over aiohttp
(``AsyncSession.drive``); neither holds a rule of its own. Tests feed answers by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeAlias, TypeVar

__all__ = ["Call", "Command", "Flow", "Send", "Sleep", "T", "call"]

T = TypeVar("T")


class Send:
    """One attempt of an HTTP request (see the module docstring for the answer).

    ``headers`` is a mapping, or a function that builds them from ``header_args``: called by the driver
    as it hands them to the transport, so headers carrying the token never sit in a flow's or a
    driver's frame (reporters that record frame locals would store them). The repr shows no headers.
    """

    __slots__ = ("_headers", "body", "deadline", "header_args", "limit", "method", "stream", "url")

    def __init__(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | Callable[..., Mapping[str, str]],
        body: bytes | None,
        deadline: float,
        limit: int,
        stream: bool,
        header_args: tuple[Any, ...] = (),
    ) -> None:
        self.method = method
        self.url = url
        self._headers = headers
        self.header_args = header_args
        self.body = body
        self.deadline = deadline
        self.limit = limit
        self.stream = stream

    @property
    def headers(self) -> Mapping[str, str]:
        """The request's headers (built now when given as a function)."""
        headers = self._headers
        return headers(*self.header_args) if callable(headers) else headers

    def __repr__(self) -> str:
        return f"<Send {self.method} {self.url}>"


class Sleep:
    """Wait before the next step (a retry's backoff, the rate budget's pace, a batch poll interval)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Call:
    """Blocking work off the HTTP path, run by the driver: ``fn(*args)`` (see the module docstring)."""

    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args


Command: TypeAlias = Send | Sleep | Call
# A flow's answers are a (response, body) pair for Send, None for Sleep and fn's result for Call.
Flow: TypeAlias = Generator[Command, Any, T]


def call(fn: Callable[..., T], *args: Any) -> Flow[T]:
    """``yield from call(fn, *args)`` in a flow: ``fn(*args)`` run by the driver, its result returned."""
    result: T = yield Call(fn, args)
    return result
