"""When and how long to wait before trying a request again."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

__all__ = ["RETRYABLE_STATUS", "SAFE_FOR_QUEUE", "backoff", "retry_after"]

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
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
