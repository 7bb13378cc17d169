"""The generated package stays within 40,000 lines of Python (issue 18's budget; ``make bench`` prints the
same count): every ``.py`` file under ``generated/workers_ai``, printed or hand-written, blank lines too."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "generated" / "workers_ai"
BUDGET = 40_000


def package_lines(root: Path) -> int:
    return sum(
        len(p.read_text(encoding="utf-8").splitlines()) for p in root.rglob("*.py") if "__pycache__" not in p.parts
    )


def test_the_package_stays_within_its_line_budget() -> None:
    lines = package_lines(PACKAGE)
    assert 20_000 < lines <= BUDGET, f"generated/workers_ai holds {lines:,} lines of Python; the budget is {BUDGET:,}"


def test_the_count_is_the_bench_count(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n\ny = 2\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.py").write_text("ignored\n")
    (tmp_path / "b.txt").write_text("not python\n")
    assert package_lines(tmp_path) == 3
