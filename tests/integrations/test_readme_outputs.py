"""The pages' examples print what the pages say they print.

Every ```python block of README.md or docs/*.md followed by a ```text block is a program and its output:
the program runs in a fresh interpreter with ``CLOUDFLARE_*`` pointing at an emulator, in an empty folder,
and its stdout must equal the text block exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai.testing import Emulator

from tests._docs import Block, shown_outputs

PAIRS = shown_outputs()


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def test_the_readme_shows_outputs() -> None:
    assert any(block.page == "README.md" for block, _ in PAIRS), "no python block followed by its output in README.md"


@pytest.mark.parametrize(("block", "shown"), PAIRS, ids=[block.slug for block, _ in PAIRS])
def test_an_example_prints_what_its_page_shows(emu: Emulator, tmp_path: Path, block: Block, shown: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}
    env.update(
        CLOUDFLARE_ACCOUNT_ID=emu.account_id, CLOUDFLARE_API_TOKEN=emu.api_token, CLOUDFLARE_BASE_URL=emu.base_url
    )
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{block.page}, line {block.line}:\n{done.stderr[-3000:]}"
    assert done.stdout == shown, f"{block.page}, line {block.line}"
