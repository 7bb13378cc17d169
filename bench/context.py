"""What every measurement is given when it runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.envs import Envs

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    """The interpreters (``envs``), a scratch folder removed after the run (``work``), what building the
    wheel gave (``wheel_info``) and whether this is a ``--quick`` run."""

    envs: Envs
    work: Path
    wheel_info: dict[str, Any]
    quick: bool

    def pick(self, *, quick: T, full: T) -> T:
        """``quick`` under ``--quick`` (fewer repeats, to try the harness), else ``full``."""
        return quick if self.quick else full
