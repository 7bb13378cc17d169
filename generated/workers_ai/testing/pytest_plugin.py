"""pytest fixtures for code that calls Workers AI: enable with
``pytest_plugins = ["workers_ai.testing.pytest_plugin"]`` in your ``conftest.py``.

- ``workers_ai_emulator``: a fresh :class:`~workers_ai.testing.Emulator` per test. Errors it contained
  (``Emulator.errors``: its own bugs, or a ``match`` predicate's) are reported after the test as a
  ``RuntimeWarning`` (an error under ``-W error``); a server that stopped fails the test's teardown.
- ``workers_ai_client``: a ``WorkersAI`` client pointed at it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .._client import WorkersAI
    from ._emulator import Emulator

__all__ = ["workers_ai_client", "workers_ai_emulator"]


@pytest.fixture
def workers_ai_emulator() -> Iterator[Emulator]:
    """A running emulator on a free port of 127.0.0.1, closed after the test."""
    from ._emulator import Emulator

    with Emulator(check_outputs=True) as emu:
        yield emu
    if emu.errors:
        shown = "\n".join(e.traceback for e in emu.errors[:3])
        message = f"the emulator contained {len(emu.errors)} error(s) during the test:\n{shown}"
        warnings.warn(message, RuntimeWarning, stacklevel=1)  # raised at the fixture's teardown: no caller to name


@pytest.fixture
def workers_ai_client(workers_ai_emulator: Emulator) -> Iterator[WorkersAI]:
    """A ``WorkersAI`` client for ``workers_ai_emulator``."""
    client = workers_ai_emulator.client()
    try:
        yield client
    finally:
        client.close()
