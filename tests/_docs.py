"""The documentation pages whose code blocks the tests run: README.md and every page of docs/.

A block is found by its fence: ```` ```python ```` (indented too, inside a list item) for the type checks,
an unindented ```` ```python ```` followed by a ```` ```text ```` (nothing but blank lines between) for the
programs and their output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_PYTHON = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)
_FENCED = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: str  # path from the repository's root, e.g. "docs/async.md"
    line: int  # the fence's line in the page
    indent: str
    code: str

    @property
    def slug(self) -> str:
        """A module name for the block: page and line, e.g. ``docs_async_L12``."""
        return re.sub(r"\W", "_", self.page.removesuffix(".md")) + f"_L{self.line}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def python_blocks(pages: list[Path] = PAGES) -> list[Block]:
    blocks: list[Block] = []
    for page in pages:
        text = page.read_text()
        name = page.relative_to(ROOT).as_posix()
        blocks += [Block(name, _line(text, m.start()), m[1], m[2]) for m in _PYTHON.finditer(text)]
    return blocks


def shown_outputs(pages: list[Path] = PAGES) -> list[tuple[Block, str]]:
    """Each python block followed by a text block: the program and what it prints."""
    pairs: list[tuple[Block, str]] = []
    for page in pages:
        text = page.read_text()
        name = page.relative_to(ROOT).as_posix()
        found = list(_FENCED.finditer(text))
        for m, after in pairwise(found):
            if m[1] == "python" and after[1] == "text" and not text[m.end() : after.start()].strip():
                pairs.append((Block(name, _line(text, m.start()), "", m[2]), after[2]))
    return pairs
