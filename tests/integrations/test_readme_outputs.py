"""README's examples print what README says they print.

Every ```python block of README.md immediately followed by a ```text block is a program and its output:
the program runs in a fresh interpreter with ``CLOUDFLARE_*`` pointing at an emulator, in an empty
folder, and its stdout must equal the text block exactly.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai.testing import Emulator

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```\n", (ROOT / "README.md").read_text(), re.S | re.M)
PAIRS = [
    (code, shown)
    for (lang, code), (next_lang, shown) in itertools.pairwise(BLOCKS)
    if lang == "python" and next_lang == "text"
]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def test_the_readme_shows_outputs() -> None:
    assert PAIRS, "no python block followed by its output in README.md"


@pytest.mark.parametrize(("code", "shown"), PAIRS, ids=[f"example{i}" for i in range(len(PAIRS))])
def test_a_readme_example_prints_what_the_readme_shows(emu: Emulator, tmp_path: Path, code: str, shown: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}
    env.update(
        CLOUDFLARE_ACCOUNT_ID=emu.account_id, CLOUDFLARE_API_TOKEN=emu.api_token, CLOUDFLARE_BASE_URL=emu.base_url
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == shown
