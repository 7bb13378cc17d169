"""The request loop, once: retries, backoff, ``Retry-After``, the rate budget and deadlines as a flow; and
:class:`Reply`, a reply read whole, as the flows built on it hand it back.

:func:`exchange` is what every request runs, whichever driver answers its commands; the decisions are the
pure functions of :mod:`.retry` and :mod:`.ratelimit`, the waits are :class:`~.flow.Sleep` commands and each
attempt a :class:`~.flow.Send` (see :mod:`.flow`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._error_base import APIConnectionError
from .flow import Flow, Send, Sleep
from .ratelimit import Pace, throttled
from .retry import MAX_RETRY_AFTER, delay_after_failure, delay_after_status, retry_after
from .telemetry import attempt_done

if TYPE_CHECKING:  # a type checker's alone: a Protocol class costs its making at every import
    from typing import Protocol

    from .ratelimit import RateBudget

    class ExchangeConfig(Protocol):
        """What the loop reads from the client's configuration (``SessionConfig`` provides it)."""

        timeout: float
        account_id: str
        base_url: str
        _sources: tuple[str, str]  # where the account id and the token came from (named by some errors)
        max_retries: int
        max_response_bytes: int
        rate_budget: RateBudget

        def _headers(self, content_type: str | None, extra: Mapping[str, str] | None) -> dict[str, str]: ...
        def _failure(self, exc: APIConnectionError, method: str, url: str, queued: bool) -> APIConnectionError: ...
        def _log_retry(self, attempt: int, delay: float, method: str, url: str, why: str) -> None: ...


__all__ = ["Reply", "budget_wait", "exchange", "retry_slot"]


class Reply:
    """A whole reply: status, headers and the body bytes (read within the size limit)."""

    __slots__ = ("data", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data


def exchange(
    cfg: ExchangeConfig,
    method: str,
    url: str,
    body: bytes | None,
    content_type: str | None,
    headers: Mapping[str, str] | None,
    queued: bool,
    model_id: str | None,
    deadline: float | None,
    stream: bool,
) -> Flow[tuple[Any, bytes]]:
    """Send until a 2xx reply, retrying what is safe to retry; returns ``(response, body)``.

    Retried: connection failures, 408/409/429/5xx, after ``Retry-After`` (at most 60 s; a longer wait
    is not retried) or exponential backoff with jitter. A batch submission (``queued``) is re-sent only
    when the server surely did not take it. ``deadline`` (``time.monotonic()``) cuts every attempt and
    wait short. The rate budget's slot is booked before each attempt; a retry's pause covers it.
    """
    # The headers (the token among them) are built by the driver for each attempt and never held in a
    # local here or there: error reporters that record frame locals would store them.
    header_args = (content_type if body is not None else None, headers)
    build_headers = cfg._headers  # pyright: ignore[reportPrivateUsage]
    pace = cfg.rate_budget.pace(model_id) if model_id is not None else None
    attempt = 0
    booked = False  # a retry's pause already covered its slot in the rate budget
    while True:
        if pace is not None and not booked:
            ahead = budget_wait(pace, deadline)
            if ahead > 0:
                yield Sleep(ahead)
        booked = False
        started = time.monotonic()
        until = started + cfg.timeout
        if deadline is not None:
            until = min(until, deadline)
        try:
            resp, data = yield Send(
                method, url, build_headers, body, until, cfg.max_response_bytes, stream, header_args
            )
        except APIConnectionError as exc:
            attempt_done(cfg, method, url, None, exc, started, attempt, None, body, None)
            wait = delay_after_failure(
                attempt, cfg.max_retries, request_sent=exc.request_sent, retryable=exc.retryable, queued=queued
            )
            if wait is not None and pace is not None:
                wait, booked = retry_slot(pace, deadline, wait)
            if wait is not None and _time_left(deadline, wait):
                cfg._log_retry(attempt, wait, method, url, str(exc))  # pyright: ignore[reportPrivateUsage]
                yield Sleep(wait)
                attempt += 1
                continue
            raise cfg._failure(exc, method, url, queued) from None  # pyright: ignore[reportPrivateUsage]
        attempt_done(cfg, method, url, resp.status, None, started, attempt, resp.headers, body, data)
        if resp.status < 300:
            if pace is not None:
                pace.succeeded()
            return resp, data
        from .error_replies import error_from, is_quota  # here: a client that only succeeds never loads it

        server_wait = retry_after(resp.headers)
        quota = resp.status == 429 and is_quota(data)
        if pace is not None and not quota and throttled(resp.status, resp.headers, data):
            pace.slow_down(server_wait)
        wait = delay_after_status(attempt, cfg.max_retries, resp.status, server_wait, queued=queued, quota=quota)
        if wait is not None and pace is not None:
            # One pause covers both the server's wait and this request's slot (slow_down above already
            # holds the budget until Retry-After has passed).
            wait, booked = retry_slot(pace, deadline, wait)
        if wait is not None and _time_left(deadline, wait):
            cfg._log_retry(attempt, wait, method, url, f"HTTP {resp.status}")  # pyright: ignore[reportPrivateUsage]
            yield Sleep(wait)
            attempt += 1
            continue
        raise error_from(resp.status, resp.headers, data, model_id=model_id, retry_after=server_wait, client=cfg)


def budget_wait(pace: Pace, deadline: float | None) -> float:
    """Book an attempt's slot in the rate budget; the seconds to wait for it, never past ``deadline``
    (the attempt then times out as any other would). The budget may ask no longer than a server's
    ``Retry-After`` may (``MAX_RETRY_AFTER``): it raises ``RateLimitError`` with the wait it asks for
    instead (see :meth:`Pace.reserve`), so it never holds a call for an hour."""
    wait = pace.reserve(MAX_RETRY_AFTER)
    return wait if deadline is None else max(0.0, min(wait, deadline - time.monotonic()))


def retry_slot(pace: Pace, deadline: float | None, wait: float) -> tuple[float | None, bool]:
    """The pause before a retry when it must also cover the retry's slot in the rate budget, and whether
    the slot is booked; ``(None, False)`` (give up: the caller raises the error it has) when the budget
    asks for longer than a call waits."""
    from ..errors import RateLimitError  # here: only a retry with a rate budget gets this far

    try:
        return max(wait, budget_wait(pace, deadline)), True
    except RateLimitError:
        return None, False


def _time_left(deadline: float | None, wait: float) -> bool:
    return deadline is None or time.monotonic() + wait < deadline
