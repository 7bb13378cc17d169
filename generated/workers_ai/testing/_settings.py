"""The emulator's knobs, shared by the parts that read them (``Emulator`` exposes each as an attribute)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

__all__ = ["Settings"]


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
