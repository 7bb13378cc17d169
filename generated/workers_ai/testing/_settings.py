"""The emulator's knobs, shared by the parts that read them (``Emulator`` exposes each as an attribute)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, cast

__all__ = ["Settings", "checked_setting"]


@dataclass
class Settings:
    """See :class:`~workers_ai.testing.Emulator` for what each one means."""

    account_id: str
    api_token: str
    batch_polls: tuple[int, int] = (1, 1)
    batch_delay: tuple[float, float] | None = None
    shuffle_batches: bool = True
    stream_interval: float = 0.0
    check_outputs: bool = False
    log: IO[str] | None = None
    keep_requests: int = 10_000
    keep_jobs: int = 10_000
    rate_limits: Any = None  # None, "published", requests/min, or {model id or task: requests/min} (._limits)
    latency: tuple[float, float] | None = None


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"Emulator({name}=...) takes a finite number of seconds >= 0, got {value!r}")
    return float(value)


def _count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"Emulator({name}=...) takes a whole number >= {least}, got {value!r}")
    return value


def _pair(name: str, value: Any) -> tuple[Any, Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (value, value)  # one number: as long queued as running
    if not isinstance(value, (tuple, list)) or len(value) != 2:  # pyright: ignore[reportUnknownArgumentType]
        raise ValueError(f"Emulator({name}=...) takes a pair (queued, running) or one number for both, got {value!r}")
    items = cast("Sequence[Any]", value)
    pair: tuple[Any, Any] = (items[0], items[1])
    return pair


_HEX32 = re.compile(r"[0-9a-f]{32}")


def checked_setting(name: str, value: Any) -> Any:
    """``value`` for the setting ``name`` in the form the emulator uses, or ``ValueError`` naming the option
    (so ``Emulator(batch_delay=30)`` fails where it is written, not as a 500 on the first batch)."""
    if name == "batch_polls":
        q, r = _pair(name, value)
        return (_count(name, q, 0), _count(name, r, 0))
    if name == "batch_delay":
        if value is None:
            return None
        q, r = _pair(name, value)
        return (_seconds(name, q), _seconds(name, r))
    if name == "rate_limits":
        from ._limits import check_rate_limits

        return check_rate_limits(value)
    if name == "latency":
        from ._limits import check_latency

        return None if value is None else check_latency(value)
    if name == "stream_interval":
        return _seconds(name, value)
    if name in ("keep_requests", "keep_jobs", "workers"):
        return _count(name, value, 1)
    if name == "port":
        if _count(name, value, 0) > 65535:
            raise ValueError(f"Emulator(port=...) takes 0 (any free port) to 65535, got {value!r}")
        return value
    if name in ("shuffle_batches", "check_outputs", "quiet"):
        if not isinstance(value, bool):
            raise ValueError(f"Emulator({name}=...) takes True or False, got {value!r}")
        return value
    if name == "account_id":
        if not isinstance(value, str) or _HEX32.fullmatch(value) is None:
            raise ValueError(f"Emulator(account_id=...) takes 32 hex characters, as the client does, got {value!r}")
        return value
    if name == "api_token":
        if not isinstance(value, str) or not value or value != value.strip() or any(c in value for c in "\r\n\0"):
            raise ValueError("Emulator(api_token=...) takes a non-empty string without whitespace around it")
        return value
    if name == "log":
        if value is not None and not callable(getattr(value, "write", None)):
            raise ValueError(f"Emulator(log=...) takes a text stream (with .write) or None, got {value!r}")
        return value
    return value
