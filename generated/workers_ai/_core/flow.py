"""Flows: the runtime's rules written once, as generators that ask for I/O instead of doing it.

A flow yields commands and receives their answers:

- :class:`Send`: one HTTP attempt. The answer is ``(response, body)``: the body read whole (within
  ``limit``), or ``b""`` with the body left unread for a 2xx ``stream``. A connection failure
  (:class:`~..errors.APIConnectionError`) is thrown into the flow at the ``yield``.
- :class:`Sleep`: wait ``seconds``; the answer is None.

The flow returns its result (``StopIteration.value``). The sync session runs flows with a blocking
loop over urllib3 (``Session.drive``), the async session with an awaiting loop over aiohttp
(``AsyncSession.drive``); neither holds a rule of its own. Tests feed answers by hand.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, TypeAlias, TypeVar

__all__ = ["Command", "Flow", "Send", "Sleep", "T"]

T = TypeVar("T")


class Send:
    """One attempt of an HTTP request (see the module docstring for the answer)."""

    __slots__ = ("body", "deadline", "headers", "limit", "method", "stream", "url")

    def __init__(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float,
        limit: int,
        stream: bool,
    ) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.deadline = deadline
        self.limit = limit
        self.stream = stream


class Sleep:
    """Wait before the next step (a retry's backoff, the rate budget's pace, a batch poll interval)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


Command: TypeAlias = Send | Sleep
# A flow's answers are a (response, body) pair for Send and None for Sleep.
Flow: TypeAlias = Generator[Command, Any, T]
