"""The documentation pages whose code blocks the tests run: README.md and every page of docs/.

A block is found by its fence: ```` ```python ```` (indented too, inside a list item, and then dedented).
A python block followed by a ```` ```text ```` block at the same indent (nothing but blank lines between) is
a program and its output.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCED = re.compile(r"^( *)```(\w*)\n(.*?)^\1```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: str  # path from the repository's root, e.g. "docs/async.md"
    line: int  # the fence's line in the page
    code: str  # dedented
    output: str | None = None  # the text block that follows it: what it prints

    @property
    def slug(self) -> str:
        """A module name for the block: page and line, e.g. ``docs_async_L12``."""
        return re.sub(r"\W", "_", self.page.removesuffix(".md")) + f"_L{self.line}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _dedent(code: str, indent: str) -> str:
    return textwrap.dedent(code) if indent else code


def python_blocks(pages: list[Path] = PAGES) -> list[Block]:
    """Every python block of ``pages``, in page order, with the output shown after it (if any)."""
    blocks: list[Block] = []
    for page in pages:
        text = page.read_text()
        name = page.relative_to(ROOT).as_posix()
        found = [*_FENCED.finditer(text), None]
        for m, after in pairwise(found):
            if m is None or m[2] != "python":
                continue
            output = None
            shown = after is not None and after[2] == "text" and after[1] == m[1]
            if after is not None and shown and not text[m.end() : after.start()].strip():
                output = _dedent(after[3], m[1])
            blocks.append(Block(name, _line(text, m.start()), _dedent(m[3], m[1]), output))
    return blocks
