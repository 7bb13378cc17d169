"""Where the public catalog (test data, never part of the project) is, decided in one place.

``WORKERS_AI_CATALOG`` names it; otherwise it is ``../shared/catalog`` next to the repository. When it is
missing a test needing it is skipped with the reason, except under CI (env ``CI`` set to anything but
``""``, ``"0"`` or ``"false"``), where it fails: a CI run must not silently run fewer tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "catalog"
ENV = "WORKERS_AI_CATALOG"


def catalog_path() -> Path:
    """Where the catalog should be (it may be missing)."""
    return Path(os.environ.get(ENV) or DEFAULT)


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def catalog_dir() -> Path:
    """The catalog folder; skips the calling test when it is missing, or fails it under CI."""
    where = catalog_path()
    if not where.is_dir():
        if under_ci():
            pytest.fail(f"public catalog not found at {where}; CI must provide it (set {ENV} or ../shared/catalog)")
        pytest.skip(f"public catalog not found at {where} (set {ENV} or provide ../shared/catalog)")
    return where


def catalog_files() -> list[Path]:
    """The catalog's model files, for parametrising at collection time; empty when it is missing."""
    where = catalog_path()
    return sorted(where.glob("*.json")) if where.is_dir() else []
