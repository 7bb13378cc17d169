"""When to try a request again and how long to wait: pure decisions, no I/O.

Kept free of sockets and clocks so a synchronous and an asyncio client share them. The bound on one
call: ``(max_retries + 1) * timeout + max_retries * MAX_RETRY_AFTER`` seconds (a longer ``Retry-After``
is not waited for: the error is raised instead; backoff waits are shorter than ``MAX_RETRY_AFTER``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping

from .._error_base import ConfigurationError

__all__ = [
    "MAX_RETRY_AFTER",
    "MAX_SERVER_WAIT",
    "RETRYABLE_STATUS",
    "SAFE_FOR_QUEUE",
    "backoff",
    "call_bound",
    "check_seconds",
    "delay_after_failure",
    "delay_after_status",
    "retry_after",
]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524})
# Statuses that mean "not accepted": the only ones after which a batch submission may be re-sent.
SAFE_FOR_QUEUE = frozenset({429, 503})
MAX_RETRY_AFTER = 60.0


def backoff(attempt: int, *, base: float = 0.5, cap: float = 8.0) -> float:
    """Exponential delay for ``attempt`` (0-based) with up to 25% jitter taken off."""
    delay: float = min(cap, base * (2.0**attempt))
    return delay * (1.0 - 0.25 * random.random())


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, or ``Retry-After`` in seconds or as
    an HTTP date), or None when it did not say or said something unreadable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return _seconds(float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return _seconds(float(value))
    except ValueError:
        pass
    try:
        # Imported here: the email package costs ~10 ms at import and HTTP-date Retry-After is rare.
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(value)
        return _seconds(when.timestamp() - (time.time() if now is None else now))
    except (TypeError, ValueError, IndexError, OverflowError):  # absurd offsets overflow datetime
        return None


MAX_SERVER_WAIT = 366 * 86400.0
"""The longest ``Retry-After`` kept as said (a year); a longer one (``1e12``) is read as this much. No
wait that long is ever slept: it only makes the call raise (see :func:`delay_after_status`)."""


def _seconds(value: float) -> float | None:
    if math.isnan(value):
        return None
    return min(max(0.0, value), MAX_SERVER_WAIT)


def check_seconds(value: object, name: str) -> float:
    """``value`` as a number of seconds: finite and above zero, else ``ConfigurationError`` (there is
    no "no timeout": NaN, infinities, zero and negative numbers are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{name} must be a number of seconds, got {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigurationError(f"{name} must be a finite number of seconds above 0, got {value!r}")
    return seconds


def call_bound(timeout: float, max_retries: int) -> float:
    """The longest one call can take: every attempt used up, every wait as long as accepted."""
    return (max_retries + 1) * timeout + max_retries * MAX_RETRY_AFTER


def delay_after_failure(
    attempt: int, max_retries: int, *, request_sent: bool, retryable: bool, queued: bool
) -> float | None:
    """Seconds to wait before retrying after a failed connection or read, or None to give up.

    A request that surely never reached the server is always safe to send again; otherwise a batch
    submission (``queued``) is not re-sent, since it may already be queued.
    """
    if attempt >= max_retries or not retryable or (queued and request_sent):
        return None
    return backoff(attempt)


def delay_after_status(
    attempt: int, max_retries: int, status: int, wait: float | None, *, queued: bool, quota: bool
) -> float | None:
    """Seconds to wait before retrying after an error status, or None to raise it.

    ``wait`` is the server's ``Retry-After``: honoured up to ``MAX_RETRY_AFTER``, beyond which the error
    is raised. ``quota`` (a 429 for the daily allocation) is never retried; a batch submission only after
    429 or 503, which prove it was not taken.
    """
    if attempt >= max_retries or status not in RETRYABLE_STATUS or quota:
        return None
    if queued and status not in SAFE_FOR_QUEUE:
        return None
    if wait is not None and wait > MAX_RETRY_AFTER:
        return None
    return backoff(attempt) if wait is None else wait
