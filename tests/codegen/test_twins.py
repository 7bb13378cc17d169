"""``python -m codegen.twins``: each async face is printed from its sync source, and ``--check`` fails on drift
and on a rule that no longer applies. The rules are applied by syntax (awaits get their parentheses, calls of
async generators are not awaited) and only where they say (a method rename never touches another object's
method of that name)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codegen.runtime_source import runtime_root
from codegen.twin_printer import (
    Twin,
    TwinError,
    async_def,
    async_for,
    async_with,
    attributes,
    awaits,
    check,
    methods,
    names,
    render,
    texts,
)
from codegen.twin_rules import TWINS

SOURCE = textwrap.dedent(
    '''
    from collections.abc import Iterator


    class Reader:
        """Reads."""

        # the connection
        conn: Conn

        def __enter__(self) -> Reader:
            return self

        def close(self) -> None:
            """Stop: see ``close()``; the reader closes its ``conn`` too.

            Only the source keeps this paragraph.
            """
            self.conn.close()  # the connection's own close is no method of ours

        def total(self) -> int:
            return self._read().size + self.conn.read()

        def _read(self) -> Chunk:
            """A private method's docstring stays with the source."""
            return self.conn.recv(lambda: 1)

        def lines(self) -> Iterator[str]:
            with self.conn.lock:
                for line in self.conn:
                    yield line

        def first(self) -> Iterator[str]:
            return self.lines()

        def only_sync(self) -> None:
            pass

        def poll(self) -> int:
            return 0
    '''
)
TARGET = textwrap.dedent(
    """
    class AsyncReader:
        \"\"\"Hand-written, kept.\"\"\"

        # generated from m.py:Reader by codegen.twins, to the end of the class
        stale = 1


    AFTER = "the region ends with its class"
    """
)
RULES = (
    *names({"Reader": "AsyncReader", "Conn": "AsyncConn", "Iterator": "AsyncIterator", "__enter__": "__aenter__"}),
    *methods({"close": "aclose"}),
    *awaits("self.conn.recv", "self.conn.close"),
    *async_for("self.conn"),
    *async_with("self.conn.lock"),
    *async_def("poll"),
    *texts({"Stop:": "Stop (awaited):"}),
)
TWIN = Twin("m.py:Reader", "n.py:AsyncReader", RULES, skip=("only_sync",))


def test_the_runtime_faces_are_as_their_sources_print_them_and_every_rule_is_used() -> None:
    assert check(TWINS, runtime_root(), write=False) == ([], [])


def test_the_check_command_is_clean() -> None:
    done = subprocess.run([sys.executable, "-m", "codegen.twins", "--check"], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_method_is_printed_async_with_its_awaits_renames_and_prose() -> None:
    used: dict[object, int] = {}
    region = render(SOURCE, TWIN, used)  # type: ignore[arg-type]
    # What only the source keeps: lines that are only a comment, docstrings past their summary.
    assert "only_sync" not in region and "# the connection\n" not in region and "conn: AsyncConn" in region
    assert "async def __aenter__(self) -> AsyncReader:" in region
    # ``close`` is renamed where it is ours (its def, self.close(), prose); the connection's close is not.
    assert "async def aclose(self) -> None:" in region
    assert '"""Stop (awaited): see ``aclose()``; the reader closes its ``conn`` too."""' in region
    assert "Only the source" not in region and "stays with the source" not in region
    assert "await self.conn.close()  # the connection's own close is no method of ours" in region
    # read() awaits the connection, so total() awaits read(), with the parentheses an attribute needs.
    assert "return await self.conn.recv(lambda: 1)" in region
    assert "return (await self._read()).size + self.conn.read()" in region
    # An async generator is not awaited when called; async for / async with where the rules say.
    assert "async def lines(self) -> AsyncIterator[str]:" in region
    assert "async with self.conn.lock:" in region and "async for line in self.conn:" in region
    assert "def first(self) -> AsyncIterator[str]:\n        return self.lines()" in region
    assert "async def first" not in region
    assert "async def poll(self) -> int:" in region  # async_def: a coroutine though it awaits nothing
    assert all(used.get(rule) for rule in RULES), [str(r) for r in RULES if not used.get(r)]


def test_an_attribute_rename_touches_only_the_path_it_names() -> None:
    source = "class Reader:\n    def stop(self, flow: Flow) -> None:\n        self._t.close()\n        flow.close()\n"
    twin = Twin("m.py:Reader", "n.py:AsyncReader", (*attributes({"self._t.close": "aclose"}), *awaits("self._t.close")))
    region = render(source, twin, {})
    assert "await self._t.aclose()\n" in region and "        flow.close()\n" in region


def test_write_then_check_then_drift_both_ways(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "n.py").write_text(TARGET)
    drift, unused = check([TWIN], tmp_path, write=True)
    assert (drift, unused) == (["n.py"], [])
    printed = (tmp_path / "n.py").read_text()
    assert "stale" not in printed and "async def aclose" in printed
    assert '"""Hand-written, kept."""' in printed and printed.endswith('AFTER = "the region ends with its class"\n')
    compile(printed, "n.py", "exec")
    assert check([TWIN], tmp_path, write=False) == ([], [])
    (tmp_path / "n.py").write_text(printed.replace("return 0", "return 1"))  # an edit of the printed region
    assert check([TWIN], tmp_path, write=False)[0] == ["n.py"]
    (tmp_path / "n.py").write_text(printed)
    (tmp_path / "m.py").write_text(SOURCE.replace("return 0", "return 2"))  # the source moved on
    assert check([TWIN], tmp_path, write=False)[0] == ["n.py"]


def test_an_unused_rule_is_reported(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "n.py").write_text(TARGET)
    extra = Twin(TWIN.source, TWIN.target, (*RULES, *names({"Gone": "AsyncGone"}), *awaits("self.nothing")))
    _, unused = check([extra], tmp_path, write=True)
    assert unused == ["await 'self.nothing'", "name 'Gone' -> 'AsyncGone'"]


def test_the_command_exits_1_on_drift_and_2_on_a_rule_it_cannot_apply(tmp_path: Path) -> None:
    package = tmp_path / "workers_ai"
    shutil.copytree(runtime_root(), package, ignore=shutil.ignore_patterns("models", "_schemas", "testing"))
    jobs = package / "_batch" / "jobs.py"
    jobs.write_text(jobs.read_text().replace("return await self._drive(self._poll_flow(deadline))", "return None"))
    done = subprocess.run(
        [sys.executable, "-m", "codegen.twins", "--check", "--package", str(package)], capture_output=True, text=True
    )
    assert done.returncode == 1 and "_batch/jobs.py differs from its sync source" in done.stderr
    # The project's rules against a package without its sources: exit 2, one line naming the file.
    done = subprocess.run(
        [sys.executable, "-m", "codegen.twins", "--check", "--package", str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.startswith("codegen.twins: ") and "sync.py" in done.stderr


PLAIN = Twin("m.py:Reader", "n.py:AsyncReader", RULES)


@pytest.mark.parametrize(
    ("source", "twin", "message"),
    [
        ("class Reader:\n    def f(self):\n        return lambda: self.conn.recv()\n", PLAIN, "lambda"),
        ("class Reader:\n    def f(self):\n        self.conn.recv()\n        yield from []\n", PLAIN, "yield from"),
        ("class Reader:\n    pass\n", TWIN, "only_sync"),
        ("class Other:\n    pass\n", PLAIN, "Reader"),
    ],
)
def test_what_cannot_be_printed_is_refused(source: str, twin: Twin, message: str) -> None:
    with pytest.raises(TwinError, match=message):
        render(source, twin, {})


def test_a_target_without_its_markers_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "n.py").write_text("class AsyncReader:\n    pass\n")
    with pytest.raises(TwinError, match="marker"):
        check([TWIN], tmp_path, write=False)
