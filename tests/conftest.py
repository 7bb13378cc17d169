"""Shared fixtures. Every server here listens on 127.0.0.1 and is started by the test that uses it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from workers_ai.testing import Emulator

from tests._catalog import catalog_dir, catalog_path, under_ci
from tests._server import ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
CATALOG = catalog_path()  # kept for imports from here; tests/_catalog.py decides
pytest_plugins = ["workers_ai.testing.pytest_plugin"]  # the workers_ai_emulator fixture
TOKEN = "tok-SECRET-1234567890"
ACCOUNT = "0123456789abcdef0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_cloudflare_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never pick up real credentials from the environment."""
    for name in ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def emulator_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """An emulator the ``CLOUDFLARE_*`` variables point at, as ``workers-ai serve`` tells a user to set them:
    for code that reads the environment (the command line)."""
    from workers_ai.testing import Emulator

    with Emulator() as emu:
        monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", emu.account_id)
        monkeypatch.setenv("CLOUDFLARE_API_TOKEN", emu.api_token)
        monkeypatch.setenv("CLOUDFLARE_BASE_URL", emu.base_url)
        yield emu


def env_flag(name: str) -> bool:
    """Whether env ``name`` is set to something other than ``""``, ``"0"`` or ``"false"``."""
    return under_ci() if name == "CI" else os.environ.get(name, "").strip().lower() not in ("", "0", "false")


__all__ = ["ACCOUNT", "CATALOG", "ROOT", "TOKEN", "catalog_dir", "env_flag"]
