"""Every pointer into the documentation leads somewhere.

- A section named in code (comments, docstrings, strings, templates) or in a page, as ``README: Batches``,
  ``the README's "Async" section``, ``"Async" in the README``, ``docs/async.md, "Why aiohttp"`` or
  ``docs/async.md#why-aiohttp``, is a heading of that page, and the page exists.
- A link between pages (``[text](page.md#anchor)``) reaches a file and, for a page, one of its headings.
- docs/architecture.md names modules that exist, and its floors place every module of the runtime: a folder
  there is either placed whole (no module of it named) or module by module (every one of them named).

Headings become anchors as GitHub and the site's builder (python-markdown) make them.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generated" / "workers_ai"
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES.append(ROOT / "bench" / "README.md")
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Where comments and docstrings live: the generator and its templates, the package (runtime and generated
# modules), examples, the benchmarks and the tests. This file is left out: it spells the patterns.
CODE_FOLDERS = ["codegen", "generated", "examples", "bench", "tests"]
CODE_SUFFIXES = {".py", ".jinja", ".toml", ".cfg"}
SKIP_PARTS = {"__pycache__", ".venv-peers", "results"}

# A page of the documentation named in code or prose, from the repository's root.
_PAGE = r"(?P<page>(?:bench/)?README\.md|CONTRIBUTING\.md|docs/[\w-]+\.md)"
_QUOTED = r"[\"\u201c'](?P<section>[^\"\u201d'\n]+)[\"\u201d']"
_POINTERS = [
    re.compile(r"README: (?P<section>[^)\n.;:]+)"),  # (README: Batches)
    re.compile(r"README['\u2019]s " + _QUOTED),  # the README's "Async" section
    re.compile(_QUOTED + r" (?:section )?(?:in|of) the README\b"),  # "Async" in the README
    re.compile(r"\bsee (?P<section>[A-Z][\w ,-]*?) in the README\b"),  # see Batches in the README
    re.compile(_PAGE + r"(?:,|['\u2019]s)? \(?" + _QUOTED),  # docs/async.md, "Why aiohttp"
    re.compile(_PAGE + r"(?:#(?P<anchor>[\w-]+))?"),  # docs/async.md, docs/async.md#why-aiohttp
]
_LINK = re.compile(r"\[[^\]\n]*\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Pointer:
    where: str  # file:line it was found at
    text: str  # as written
    page: Path
    section: str | None = None  # a heading's text, or
    anchor: str | None = None  # a heading's anchor

    def problem(self) -> str | None:
        if not self.page.is_file():
            return f"{self.where}: {self.text!r}: no file {_rel(self.page)}"
        if self.page.suffix != ".md":
            return None
        anchors = _anchors(self.page)
        wanted = self.anchor if self.anchor is not None else self.section
        if wanted is None or _slugs(wanted) & anchors or wanted in anchors:
            return None
        return f"{self.where}: {self.text!r}: {_rel(self.page)} has no section {wanted!r}"


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _slugs(heading: str) -> set[str]:
    """The anchors GitHub and python-markdown give a heading (markup dropped, words joined by '-')."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = unicodedata.normalize("NFKD", text.replace("`", "").replace("*", "")).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return {text.replace(" ", "-"), re.sub(r"[-\s]+", "-", text)}


@cache
def _anchors(page: Path) -> frozenset[str]:
    """The anchors of every heading of a page (code blocks left out; a repeated heading gets -1, -2, ...)."""
    found: list[str] = []
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} +(.+?) *#*$", line)):
            for slug in _slugs(m[1]):
                found.append(slug if slug not in found else f"{slug}-{found.count(slug)}")
    return frozenset(found)


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _pointers_in(path: Path, text: str) -> Iterator[Pointer]:
    """The section pointers of one file; page paths in them are from the repository's root."""
    for pattern in _POINTERS:
        for m in pattern.finditer(text):
            groups = m.groupdict()
            page = ROOT / (groups.get("page") or "README.md")
            where = f"{_rel(path)}:{_line(text, m.start())}"
            yield Pointer(where, m[0], page, groups.get("section"), groups.get("anchor"))


def _links_in(page: Path, text: str) -> Iterator[Pointer]:
    """The links of a page to files of the repository, from the page's own folder."""
    for m in _LINK.finditer(text):
        target = m["target"]
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = f"{_rel(page)}:{_line(text, m.start())}"
        yield Pointer(where, m[0], (page.parent / path).resolve() if path else page, anchor=anchor or None)


def _code_files() -> Iterator[Path]:
    for folder in CODE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if (
                path.suffix in CODE_SUFFIXES
                and path.is_file()
                and not SKIP_PARTS & set(path.parts)
                and not path.is_relative_to(ROOT / "generated" / "codegen")  # the link to codegen/
                and path != Path(__file__).resolve()
            ):
                yield path
    yield from (ROOT / name for name in ("Makefile", "pyproject.toml", "mkdocs.yml"))


def _problems(pointers: Iterator[Pointer]) -> list[str]:
    return [p for p in (pointer.problem() for pointer in pointers) if p is not None]


def test_sections_named_in_code_exist() -> None:
    problems: list[str] = []
    for path in _code_files():
        text = path.read_text(encoding="utf-8")
        if "README" in text or ".md" in text:  # most files point nowhere: skip them quickly
            problems += _problems(_pointers_in(path, text))
    assert problems == [], "\n".join(problems)


def test_sections_named_and_linked_in_the_pages_exist() -> None:
    problems: list[str] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        problems += _problems(_pointers_in(page, text))
        problems += _problems(_links_in(page, text))
    assert problems == [], "\n".join(problems)


def test_the_patterns_find_what_they_are_for(tmp_path: Path) -> None:
    """Each way of pointing is recognised, and a section or page that is not there is reported."""
    text = "\n".join(
        [
            "x = 1  # (README: Performance)",
            '# see the README\'s "Layout" section; "Networks: proxies and certificates" in the README',
            '"""Rules (docs/async.md, "Why aiohttp"); docs/library.md#retries-timeouts-and-limits."""',
            '# gone: (README: Batches), the README\'s "Async" section, docs/async.md\'s "Why httpx"',
            "# gone too: docs/library.md#no-such-anchor, docs/no-such-page.md, see Batches in the README",
        ]
    )
    source = tmp_path / "module.py"
    pointers = list(_pointers_in(source, text))
    assert len(pointers) > 9  # the good ones were found too
    broken = {p.text: p.problem() for p in pointers if p.problem() is not None}
    assert set(broken) == {
        "README: Batches",
        'README\'s "Async"',
        'docs/async.md\'s "Why httpx"',
        "docs/library.md#no-such-anchor",
        "docs/no-such-page.md",
        "see Batches in the README",
    }, broken
    assert all(str(problem).startswith(f"{source}:") for problem in broken.values())
    assert str(broken["README: Batches"]).startswith(f"{source}:4:")
    page = tmp_path / "page.md"
    links = "[a](../no-such.md) [b](#layout) [c](#nowhere)\n\n## Layout\n\n```python\n# Not a heading\n```\n"
    page.write_text(links)
    broken = {p.text: p.problem() for p in _links_in(page, links) if p.problem() is not None}
    assert set(broken) == {"[a](../no-such.md)", "[c](#nowhere)"}, broken
    assert "not-a-heading" not in _anchors(page)


# --------------------------------------------------------------------------- docs/architecture.md

_BOX = "│┌┐└┘├┤─"
_WORD = re.compile(r"[\w.*/<>-]+")


@dataclass(frozen=True)
class _Line:
    """A line of the floors drawing."""

    floor: int | None  # None: beside the drawing (testing/, realtime/)
    folder: str  # "" for the package's root, else "name/"
    text: str  # what it names: the folder and what parentheses say taken out


def _drawing() -> list[_Line]:
    """The floors drawing (the first code block under '## Floors'), line by line.

    A number starts a floor; a line that starts with ``folder/`` opens that folder; a line indented deeper
    than the line that opened the current folder continues it; any other line is the package's root.
    Parentheses explain and may span lines."""
    text = ARCHITECTURE.read_text(encoding="utf-8").split("\n## Floors", 1)[1].split("```", 2)[1]
    raw = text.splitlines()[1:]
    blanked = "\n".join(raw).translate({ord(c): " " for c in _BOX})
    while (cut := re.sub(r"\([^()]*\)", lambda m: re.sub(r"[^\n]", " ", m[0]), blanked)) != blanked:
        blanked = cut
    lines: list[_Line] = []
    floor: int | None = None
    folder, opened_at = "", 0
    for line, plain in zip(raw, blanked.splitlines(), strict=True):
        if number := re.match(r"\s*│\s*(\d+)\s", line):
            floor, folder, opened_at = int(number[1]), "", 0
        plain = re.sub(r"^(\s*)\d+ ", lambda m: m[1] + "  ", plain)
        stripped = plain.strip()
        if not stripped:
            continue
        indent = len(plain) - len(plain.lstrip())
        first = stripped.split()[0]
        if re.fullmatch(r"\w+/", first):
            folder, opened_at = first, indent
            stripped = stripped[len(first) :]
        elif indent <= opened_at:
            folder, opened_at = "", 0
        lines.append(_Line(floor if "│" in line else None, folder, stripped))
    return lines


def _folder_blocks() -> dict[str, str]:
    """The drawing's text by folder ("" for the package's root)."""
    blocks: dict[str, str] = {}
    for line in _drawing():
        blocks[line.folder] = blocks.get(line.folder, "") + " " + line.text
    return blocks


def _floors() -> dict[str, int]:
    """The floor of each folder (``_core/``) and each module of the root (``errors``, ``models/*``) drawn."""
    floors: dict[str, int] = {}
    for line in _drawing():
        if line.floor is None:
            continue
        if line.folder:
            floors.setdefault(line.folder, line.floor)
        else:
            for word in _WORD.findall(line.text):
                floors.setdefault(word.removesuffix(".py").rstrip(".,;:"), line.floor)
    return floors


def _module_files() -> list[Path]:
    """The modules the floors place: the runtime's and the generated ones outside models/, no package faces."""
    faces = ("__init__.py", "__main__.py")
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts and p.name not in faces)


def _exists(name: str, folder: Path) -> bool:
    """``name`` (``x``, ``x.py``, ``x/``, ``x/*``, ``x/y``) is a module or folder under ``folder``."""
    if "*" in name or "<" in name:
        return (folder / re.split(r"[*<]", name)[0]).exists()
    path = folder / name.rstrip("/")
    return path.is_dir() or path.is_file() or (not path.suffix and path.with_suffix(".py").is_file())


def test_the_floors_name_modules_that_exist() -> None:
    """Every word of the drawing that names a module (``_x``, ``x.py``, ``_x/y``) names one that exists."""
    problems = []
    for folder, text in _folder_blocks().items():
        if folder and not (PACKAGE / folder).is_dir():
            problems.append(f"{folder} is no folder")
        for word in _WORD.findall(text):
            word = word.rstrip(".,;:")
            first = word.split("/")[0]
            in_a_folder = "/" in word and first.isidentifier() and (PACKAGE / first).is_dir()
            if not (word.startswith("_") or word.endswith(".py") or in_a_folder):
                continue
            base = PACKAGE if "/" in word.rstrip("/") else PACKAGE / folder
            if not _exists(word, base):
                problems.append(f"{folder or 'the package root'}: {word}")
    assert problems == [], problems


def test_the_floors_place_every_module() -> None:
    blocks = _folder_blocks()
    named = {folder: set(re.findall(r"\w+", text.replace(".py", ""))) for folder, text in blocks.items()}
    problems = []
    by_folder: dict[str, list[str]] = {}
    for path in _module_files():
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "models":
            by_folder.setdefault("models/", [])
            continue
        folder = "" if len(rel.parts) == 1 else rel.parts[0] + "/"
        by_folder.setdefault(folder, []).append(rel.stem)
    for folder, modules in sorted(by_folder.items()):
        if folder == "models/":
            if "models/*" not in blocks.get("", ""):
                problems.append("models/* is on no floor")
            continue
        if folder and folder not in blocks:
            problems.append(f"{folder} is on no floor")
            continue
        listed = [m for m in modules if m in named.get(folder, set())]
        if folder and not listed:
            continue  # the folder is placed whole
        problems += [f"{folder}{m}.py is on no floor" for m in modules if m not in listed]
    assert problems == [], "\n".join(problems)


def test_no_module_imports_from_a_floor_above_its_own() -> None:
    """What the drawing says of itself: a module imports only from its own floor or the floors below it
    (every import counts, also one inside a function or under ``TYPE_CHECKING``)."""
    floors = _floors()

    def floor_of(parts: tuple[str, ...]) -> int | None:
        if parts[0] == "models":
            return floors.get("models/*")
        return floors.get(parts[0] + "/") if len(parts) > 1 or (PACKAGE / parts[0]).is_dir() else floors.get(parts[0])

    problems = []
    for path in _module_files():
        rel = path.relative_to(PACKAGE)
        own = floor_of(rel.with_suffix("").parts)
        if own is None or rel.parts[0] == "models":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = rel.parts[: len(rel.parts) - node.level]
            targets = [(*base, *node.module.split("."))] if node.module else [(*base, a.name) for a in node.names]
            for target in targets:
                floor = floor_of(target) if target else None
                if floor is not None and floor > own and target[0] != rel.parts[0]:
                    problems.append(f"{rel} (floor {own}) imports {'.'.join(target)} (floor {floor})")
    assert problems == [], "\n".join(problems)


def test_modules_named_in_the_prose_exist() -> None:
    """Paths in backticks (``_core/flow.py``, ``_core/exchange.exchange``, ``tests/...``) lead to a file or
    folder of the repository or the package; a module's attribute after the path is allowed."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    problems = []
    for token in re.findall(r"`([^`\s]+)`", text):
        if token.startswith(".") or not ("/" in token or token.endswith((".py", ".pyi"))):
            continue  # `.pyi` is a kind of file, not one
        if not any(_resolves(token, base) for base in (ROOT, PACKAGE)) and not _named_anywhere(token):
            problems.append(token)
    assert problems == [], problems


def _resolves(token: str, base: Path) -> bool:
    if _exists(token, base):
        return True
    head, dot, _attr = token.rpartition(".")  # _core/exchange.exchange: a module and its attribute
    return bool(dot) and "/" in head and not head.endswith("/") and (base / head).with_suffix(".py").is_file()


def _named_anywhere(token: str) -> bool:
    """A bare file name (``otel.py``, ``test_parity.py``) of the package, the generator or the tests."""
    return "/" not in token and any(any((ROOT / folder).rglob(token)) for folder in ("generated", "codegen", "tests"))
