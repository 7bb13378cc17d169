"""The asyncio request loop: :class:`AsyncSession`, the awaitable twin of :class:`~._session.Session`.

Configuration, URLs, headers and ``last_response`` come from the shared :class:`~._session.SessionConfig`;
every decision of the loop (retry or not, how long to wait, which error) is the same pure function of
:mod:`._retry`, :mod:`._envelope` and :mod:`.errors` the sync loop calls. Only the awaits differ.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

from .._core.envelope import checked
from .._core.ratelimit import throttled
from .._core.retry import delay_after_failure, delay_after_status, retry_after
from .._sync.session import Reply, SessionConfig
from ..errors import APIConnectionError, error_from, is_quota
from .transport import AiohttpTransport, AsyncResponse, AsyncTransport

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


class AsyncSession(SessionConfig):
    """Configuration and the asyncio transport shared by every call (no thread per call)."""

    _transport: AsyncTransport

    def _new_transport(self, transport: Any, max_connections: int, compress: bool) -> AsyncTransport:
        import asyncio  # here, not at import: ``import workers_ai`` stays free of asyncio

        self._local: Any = _TaskLocal()
        self._sleep_async: Callable[[float], Awaitable[None]] = asyncio.sleep
        return transport or AiohttpTransport(max_connections=max_connections, decompress=compress)

    async def aclose(self) -> None:
        """Close pooled connections."""
        await self._transport.aclose()

    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        *,
        content_type: str | None = "application/json",
        headers: Mapping[str, str] | None = None,
        queued: bool = False,
        model_id: str | None = None,
        deadline: float | None = None,
    ) -> Reply:
        """As :meth:`Session.request <._session.Session.request>`, awaited."""
        resp, data = await self._exchange(method, url, body, content_type, headers, queued, model_id, deadline, False)
        return Reply(resp.status, resp.headers, data)

    async def open_stream(
        self, url: str, body: bytes, *, headers: Mapping[str, str] | None = None, model_id: str | None = None
    ) -> AsyncResponse:
        """POST and return the 2xx reply with its body unread (retried like :meth:`request` until then)."""
        return (await self._exchange("POST", url, body, "application/json", headers, False, model_id, None, True))[0]

    async def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        content_type: str | None,
        headers: Mapping[str, str] | None,
        queued: bool,
        model_id: str | None,
        deadline: float | None,
        stream: bool,
    ) -> tuple[AsyncResponse, bytes]:
        if body is None:
            content_type = None
        pace = self.rate_budget.pace(model_id) if model_id is not None else None
        attempt = 0
        booked = False  # a retry's pause already covered its slot in the rate budget
        while True:
            if pace is not None and not booked:
                ahead = self._budget_wait(pace, deadline)
                if ahead > 0:
                    await self._sleep_async(ahead)
            booked = False
            until = time.monotonic() + self.timeout
            if deadline is not None:
                until = min(until, deadline)
            try:
                # The headers (the token among them) are built per attempt and never bound to a local name
                # here: error reporters that record frame locals would store them.
                resp = await self._transport.send(
                    method, url, self._headers(content_type, headers), body, deadline=until
                )
                if stream and resp.status < 300:
                    return resp, b""
                data = await resp.read_all(self.max_response_bytes)
            except APIConnectionError as exc:
                wait = delay_after_failure(
                    attempt, self.max_retries, request_sent=exc.request_sent, retryable=exc.retryable, queued=queued
                )
                if wait is not None and pace is not None:
                    wait, booked = self._retry_slot(pace, deadline, wait)
                if wait is not None and self._time_left(deadline, wait):
                    attempt = await self._pause(attempt, wait, method, url, str(exc))
                    continue
                raise self._failure(exc, method, url, queued) from None
            if resp.status < 300:
                if pace is not None:
                    pace.succeeded()
                return resp, data
            server_wait = retry_after(resp.headers)
            quota = resp.status == 429 and is_quota(data)
            if pace is not None and not quota and throttled(resp.status, resp.headers, data):
                pace.slow_down(server_wait)
            wait = delay_after_status(attempt, self.max_retries, resp.status, server_wait, queued=queued, quota=quota)
            if wait is not None and pace is not None:
                wait, booked = self._retry_slot(pace, deadline, wait)
            if wait is not None and self._time_left(deadline, wait):
                attempt = await self._pause(attempt, wait, method, url, f"HTTP {resp.status}")
                continue
            raise error_from(resp.status, resp.headers, data, model_id=model_id, retry_after=server_wait)

    async def _pause(self, attempt: int, delay: float, method: str, url: str, why: str) -> int:
        self._log_retry(attempt, delay, method, url, why)
        await self._sleep_async(delay)
        return attempt + 1

    async def get_json(self, path: str, query: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET an account API path; the checked envelope (``result``, ``result_info``, ...)."""
        reply = await self.request("GET", self.api_url(path, query), content_type=None)
        env, messages = checked(reply.status, reply.headers, reply.data, model_id=None)
        self.remember(reply.status, reply.headers, messages)
        return env
