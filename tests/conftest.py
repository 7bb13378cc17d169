"""Shared fixtures. Every server here listens on 127.0.0.1 and is started by the test that uses it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._server import ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT.parent / "shared" / "catalog"
pytest_plugins = ["workers_ai.testing.pytest_plugin"]  # the workers_ai_emulator fixture
TOKEN = "tok-SECRET-1234567890"
ACCOUNT = "acc123"


@pytest.fixture(autouse=True)
def _no_cloudflare_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never pick up real credentials from the environment."""
    for name in ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def catalog_dir() -> Path:
    if not CATALOG.is_dir():
        pytest.skip(f"public catalog not found at {CATALOG} (CI provides ../shared/catalog)")
    return CATALOG


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")
