"""Every ```python block of README.md and docs/*.md type-checks under mypy --strict as written.

A page's blocks continue its story: a block may use ``ai``, ``bge``, ``llama``, ``texts`` or ``emu`` (an
Emulator) as the page introduced them without repeating the setup. Those names (and only those, plus
``df``, the Spark DataFrame of the Spark recipe, which needs a JVM we don't install) are declared before a
block that uses them without assigning them; everything else a block names must be its own.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._docs import PAGES, Block, python_blocks

BLOCKS = python_blocks()

# What a page has introduced by the time a block leans on these names.
CONTEXT = {
    "ai": 'ai = WorkersAI(account_id="a" * 32, api_token="tok")',
    "bge": 'bge = ai.model("@cf/baai/bge-m3")',
    "llama": 'llama = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")',
    "texts": "texts: list[str] = []",
    "emu": "from workers_ai.testing import Emulator\nemu = Emulator()",
    "df": "df: Any = None  # a pyspark DataFrame",
}


def _source(block: Block) -> str:
    code = textwrap.dedent(block.code) if block.indent else block.code
    tree = ast.parse(code)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    assigned |= {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    needed = [name for name in CONTEXT if name in used and name not in assigned]
    if "bge" in needed or "llama" in needed:
        needed = ["ai", *needed] if "ai" not in needed and "ai" not in assigned else needed
    prelude = [f"# {block.page}, line {block.line}", "from typing import Any", "from workers_ai import WorkersAI"]
    prelude += [CONTEXT[name] for name in CONTEXT if name in needed]
    return "\n".join(prelude) + "\n\n" + code


def test_the_pages_have_python_blocks() -> None:
    assert len(BLOCKS) >= 10
    assert {"README.md", "docs/library.md"} <= {b.page for b in BLOCKS}
    assert len(PAGES) > 2


def test_every_block_type_checks(tmp_path: Path) -> None:
    files = []
    for block in BLOCKS:
        path = tmp_path / f"{block.slug}.py"
        path.write_text(_source(block))
        files.append(str(path))
    # pyarrow ships no type information; a user's mypy needs the same switch for it.
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache")]
    cmd += ["--config-file", str(tmp_path / "none.ini"), "--disable-error-code", "import-untyped", *files]
    (tmp_path / "none.ini").write_text("[mypy]\n")
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    if result.returncode != 0:
        where = "file <page>_L<line>.py is the block at that line of the page"
        pytest.fail(f"blocks do not type-check ({where}):\n" + result.stdout[-6000:])
