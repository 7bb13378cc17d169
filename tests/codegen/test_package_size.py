"""The generated package stays within 40,000 lines of code (issue 18's budget; ``make bench`` prints the same
count): every ``.py`` file under ``generated/workers_ai``, printed or hand-written, comments and blank lines
too. Docstrings, the docs a user reads in ``help()`` and the IDE, are counted beside it, not in it
(bench/lines.py says why); the mypy ratio in ``make bench`` holds them in check."""

from __future__ import annotations

from pathlib import Path

from bench.lines import BUDGET, count

PACKAGE = Path(__file__).resolve().parents[2] / "generated" / "workers_ai"


def test_the_package_stays_within_its_line_budget() -> None:
    lines = count(PACKAGE)
    assert 20_000 < lines.code <= BUDGET, (
        f"generated/workers_ai holds {lines.code:,} lines of code (and {lines.docs:,} of docstrings); "
        f"the budget is {BUDGET:,}"
    )


def test_docstrings_are_counted_apart_and_nothing_else_is(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        '"""Module doc,\non two lines."""\n'
        "x = 1\n"
        '"""x\'s doc."""\n'
        "\n"
        "# a comment counts as code\n"
        "def f() -> str:\n"
        '    """f\'s doc."""\n'
        '    "a string statement in the middle is code"\n'
        '    return "not a doc"\n'
        "class C:\n"
        '    """C."""\n'
        "    y: int\n"
        '    """y."""\n'
    )
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.py").write_text("ignored\n")
    (tmp_path / "b.txt").write_text("not python\n")
    lines = count(tmp_path)
    assert (lines.total, lines.docs, lines.code) == (14, 6, 8)
