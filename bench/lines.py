"""How many lines the generated package holds, and how many of them are docs for its users.

The 40,000-line budget guards type-checking time and the package's size. Docstrings are what a user reads
in ``help()`` and an IDE; mypy and pyright skip over them, so the budget counts code (everything else:
statements, comments and blank lines) and the docs are reported beside it. The type-checking ratio
(``make bench``'s mypy measurement) is what holds the docs in check.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

BUDGET = 40_000


class Lines(NamedTuple):
    total: int
    docs: int

    @property
    def code(self) -> int:
        return self.total - self.docs


def _doc_lines(tree: ast.Module) -> set[int]:
    """The line numbers of docstrings: a string statement opening a module, class or function, or right
    after an assignment (an attribute's docstring, as IDEs show it)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                continue
            if not isinstance(stmt.value.value, str):
                continue
            opens = i == 0 and isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            follows = i > 0 and isinstance(body[i - 1], ast.Assign | ast.AnnAssign)
            if opens or follows:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def count(root: Path) -> Lines:
    """Every ``.py`` file under ``root`` (``__pycache__`` left out), blank lines too."""
    total = docs = 0
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        total += len(text.splitlines())
        docs += len(_doc_lines(ast.parse(text, filename=str(path))))
    return Lines(total, docs)
