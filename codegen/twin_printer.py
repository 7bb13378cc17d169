"""The twin printer: the async face of the runtime printed from its sync source (``python -m codegen.twins``
runs it over the rules of :mod:`.twin_rules`).

The sync client's faces (the model handle, the batch job, the stream, the realtime sessions, ...) are
written once, as sync code. Their async twins are printed from them into marked regions of the async
modules: every method of a sync class (or every function named) is copied with

- its names changed by an explicit map (``Session`` -> ``AsyncSession``, ``__iter__`` -> ``__aiter__``), in
  code by token, in docstrings and comments word by word;
- ``await`` put before each call of an awaitable: the callees a rule names (``self.client._drive``) and the
  methods of the same class that become ``async``; ``async`` before the ``for`` and ``with`` statements a
  rule names;
- ``async def`` for every function that then awaits, and for ``__enter__``/``__exit__``/``__next__``.

The edits are placed by the syntax tree (so ``(await self.collect()).text`` gets its parentheses) and made in
the source text, so the layout survives; ``ruff format`` then formats the module. The commentary stays with
the source: a twin drops lines that are only a comment, the docstrings of private functions and every
docstring's paragraphs after its summary. What differs for a reason (a thread against a task, an opened
stream against a request sent on ``await``) stays hand-written above the region, or in the sync class under
a name the rule leaves out (``skip``).

``--check`` prints nothing and exits 1 when a region differs from what its source gives (drift) or a rule
was never used (a rename that renames nothing, an await that matches no call): both mean the rules and the
code have come apart. Exit 2: a rule names a class, function or region that does not exist.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .tidy import FormatError, format_modules

__all__ = ["Rule", "Twin", "TwinError", "check", "print_region", "render"]

# The methods asyncio names differently are renamed by the rules; these are always ``async def`` in the twin.
_ALWAYS_ASYNC = frozenset({"__enter__", "__exit__", "__next__"})
_BEGIN = "# generated from {source} by codegen.twins, to the end of the {scope}"


class TwinError(Exception):
    """A rule that cannot be applied: a missing source name or region, an await inside a lambda, ..."""


@dataclass(frozen=True)
class Rule:
    """One explicit rule, shared by the twins that list it; counted, so an unused one is reported.

    ``kind``: ``name`` (rename the identifier ``old`` to ``new`` everywhere, and in prose),
    ``method`` (rename the method ``old``: its ``def`` and ``self.old``; in prose only as ``old()`` or
    ```old```), ``attr`` (``old`` is a dotted path, ``self._transport.close``: rename its last name where
    the code spells that path), ``await`` (await calls whose callee reads ``old``), ``async_def`` (make
    the function ``old`` async though it awaits nothing), ``async_for`` / ``async_with`` (``for``/``with``
    statements over ``old``) or ``text`` (replace ``old`` by ``new`` in docstrings and comments).
    """

    kind: str
    old: str
    new: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.old!r}" + (f" -> {self.new!r}" if self.new else "")


def names(mapping: Mapping[str, str]) -> tuple[Rule, ...]:
    return tuple(Rule("name", old, new) for old, new in mapping.items())


def methods(mapping: Mapping[str, str]) -> tuple[Rule, ...]:
    return tuple(Rule("method", old, new) for old, new in mapping.items())


def attributes(mapping: Mapping[str, str]) -> tuple[Rule, ...]:
    return tuple(Rule("attr", old, new) for old, new in mapping.items())


def awaits(*callees: str) -> tuple[Rule, ...]:
    return tuple(Rule("await", c) for c in callees)


def async_def(*functions: str) -> tuple[Rule, ...]:
    return tuple(Rule("async_def", f) for f in functions)


def async_for(*iterables: str) -> tuple[Rule, ...]:
    return tuple(Rule("async_for", i) for i in iterables)


def async_with(*managers: str) -> tuple[Rule, ...]:
    return tuple(Rule("async_with", m) for m in managers)


def texts(mapping: Mapping[str, str]) -> tuple[Rule, ...]:
    return tuple(Rule("text", old, new) for old, new in mapping.items())


@dataclass(frozen=True)
class Twin:
    """The async twin of ``source`` (``path:Class`` for its methods, ``path:f,g`` for module functions),
    printed into ``target`` (``path:Class`` for a class body, ``path`` for the module) between the markers."""

    source: str
    target: str
    rules: tuple[Rule, ...]
    skip: tuple[str, ...] = ()

    @property
    def source_path(self) -> str:
        return self.source.partition(":")[0]

    @property
    def source_names(self) -> list[str]:
        return self.source.partition(":")[2].split(",")

    @property
    def target_path(self) -> str:
        return self.target.partition(":")[0]

    @property
    def begin(self) -> str:
        return _BEGIN.format(source=self.source, scope="class" if ":" in self.target else "module")


@dataclass
class _Edits:
    """Text edits by (line, column) of the source: replacements of spans and insertions."""

    lines: list[str]
    edits: list[tuple[int, int, int, str]] = field(default_factory=list[tuple[int, int, int, str]])

    def offset(self, line: int, col: int) -> int:
        return sum(len(x) for x in self.lines[: line - 1]) + col

    def replace(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        self.edits.append((self.offset(*start), 1, self.offset(*end), text))

    def insert(self, at: tuple[int, int], text: str) -> None:
        self.edits.append((self.offset(*at), 0, self.offset(*at), text))

    def applied(self) -> str:
        text = "".join(self.lines)
        # From the end: at one offset the replacement goes first, so an insertion lands before it.
        for start, _, end, new in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            text = text[:start] + new + text[end:]
        return text


def _callee(node: ast.expr) -> str:
    return ast.unparse(node).replace(" ", "")


def _own_nodes(fn: ast.AST) -> Iterable[ast.AST]:
    """The nodes of ``fn``'s own body: not those of the functions, lambdas and classes inside it."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _is_generator(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(fn))


def _functions(nodes: Sequence[ast.stmt]) -> list[ast.FunctionDef]:
    found: list[ast.FunctionDef] = []
    for top in nodes:
        found += [n for n in ast.walk(top) if isinstance(n, ast.FunctionDef)]
    return found


def _parents(nodes: Sequence[ast.stmt]) -> dict[ast.AST, ast.AST]:
    parent: dict[ast.AST, ast.AST] = {}
    for top in nodes:
        for node in ast.walk(top):
            for child in ast.iter_child_nodes(node):
                parent[child] = node
    return parent


def _stmt_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _unit(tree: ast.Module, twin: Twin) -> tuple[list[ast.stmt], list[tuple[int, int]]]:
    """The statements printed (a class's members but those skipped, or the functions named) and their line
    ranges; a member's range starts on the line after the statement before it, so its comments come along."""
    wanted = twin.source_names
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if len(wanted) == 1 and wanted[0] in classes:
        cls = classes[wanted[0]]
        body, previous = list(cls.body), cls.lineno
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            previous = body[0].end_lineno or body[0].lineno
            body = body[1:]
        missing = set(twin.skip) - {_stmt_name(n) for n in body}
        chosen: list[ast.stmt] = []
        ranges: list[tuple[int, int]] = []
        for node in body:
            end = node.end_lineno or node.lineno
            if _stmt_name(node) not in twin.skip:
                chosen.append(node)
                ranges.append((previous + 1, end))
            previous = end
    else:
        chosen = [n for n in tree.body if _stmt_name(n) in wanted]
        missing = set(wanted) - {_stmt_name(n) for n in chosen}
        ranges = [(_start(n), n.end_lineno or n.lineno) for n in chosen]
    if missing:
        raise TwinError(f"{twin.source}: no {', '.join(sorted(missing))} to print or to skip")
    return chosen, ranges


def _async_functions(
    chosen: Sequence[ast.stmt], awaited: dict[str, Rule], rules: Sequence[Rule], used: dict[Rule, int], known: set[str]
) -> tuple[set[ast.FunctionDef], dict[ast.Call, Rule | None]]:
    """Which functions become ``async def`` and which calls are awaited: the rules' callees, and the calls of
    functions of the source module that become async (``self.m(...)``, ``super().m(...)``, ``f(...)``: this
    twin's, and ``known``, those of the twins printed before it from the same module), until nothing changes."""
    fns = _functions(chosen)
    loops = {r.old for r in rules if r.kind in ("async_for", "async_with")}
    is_async: set[ast.FunctionDef] = set()
    calls: dict[ast.Call, Rule | None] = {}
    lambdas = [n for fn in fns for n in ast.walk(fn) if isinstance(n, ast.Lambda)]
    while True:
        # Calling an async generator gives its iterator at once: only coroutines are awaited.
        own_async = known | {f.name for f in is_async if not _is_generator(f)}
        changed = False
        for fn in fns:
            for node in _own_nodes(fn):
                if not isinstance(node, ast.Call) or node in calls:
                    continue
                callee = _callee(node.func)
                local = callee.removeprefix("self.").removeprefix("super().")
                if callee in awaited or local in own_async:
                    calls[node] = awaited.get(callee)
                    changed = True
        for fn in fns:
            if fn in is_async:
                continue
            own = list(_own_nodes(fn))
            loop_texts = {_callee(n.iter) for n in own if isinstance(n, ast.For)}
            loop_texts |= {_callee(i.context_expr) for n in own if isinstance(n, ast.With) for i in n.items}
            forced = next((r for r in rules if r.kind == "async_def" and r.old == fn.name), None)
            if forced is not None:
                used[forced] = used.get(forced, 0) + 1
            if (
                forced is not None
                or fn.name in _ALWAYS_ASYNC
                or any(n in calls for n in own)
                or loops & loop_texts
                or any(f.name == fn.name and f in is_async for f in fns)
            ):
                is_async.add(fn)
                changed = True
        if not changed:
            for lam in lambdas:
                for node in ast.walk(lam):
                    if not isinstance(node, ast.Call):
                        continue
                    callee = _callee(node.func)
                    if callee in awaited or callee.removeprefix("self.").removeprefix("super().") in own_async:
                        raise TwinError(f"line {node.lineno}: {callee}() would be awaited inside a lambda")
            return is_async, calls


def render(source_text: str, twin: Twin, used: dict[Rule, int], known: set[str] | None = None) -> str:
    """The region ``twin`` prints from ``source_text`` (not yet formatted); counts each rule it applies.
    ``known``: the functions of the source module made async by the twins before this one (added to)."""
    known = set() if known is None else known
    tree = ast.parse(source_text)
    chosen, ranges = _unit(tree, twin)
    lines = source_text.splitlines(keepends=True)
    edits = _Edits(lines)
    parent = _parents(chosen)
    awaited = {r.old: r for r in twin.rules if r.kind == "await"}
    is_async, calls = _async_functions(chosen, awaited, twin.rules, used, known)
    known.update(fn.name for fn in is_async if not _is_generator(fn))
    for call, rule in calls.items():
        if rule is not None:
            used[rule] = used.get(rule, 0) + 1
        holder = parent.get(call)
        wrap = isinstance(holder, (ast.Attribute, ast.Subscript)) or (
            isinstance(holder, ast.Call) and holder.func is call
        )
        edits.insert((call.lineno, call.col_offset), "(await " if wrap else "await ")
        if wrap:
            edits.insert((call.end_lineno or call.lineno, call.end_col_offset or 0), ")")
    for fn in _functions(chosen):
        if fn in is_async:
            if any(isinstance(n, ast.YieldFrom) for n in _own_nodes(fn)):
                raise TwinError(f"{twin.source}: {fn.name} would be async but uses yield from")
            edits.insert((fn.lineno, fn.col_offset), "async ")
    _loops(chosen, twin.rules, used, edits)
    _renames(source_text, ranges, twin.rules, used, edits)
    out = edits.applied().splitlines(keepends=True)
    drop, close = _prose_cuts(source_text, chosen)
    for n in close:
        out[n - 1] = out[n - 1].rstrip() + '"""\n'
    region = "".join(
        line for first, last in ranges for n, line in enumerate(out[first - 1 : last], first) if n not in drop
    )
    return region.strip("\n") + "\n"


def _prose_cuts(source_text: str, chosen: Sequence[ast.stmt]) -> tuple[set[int], set[int]]:
    """What the twin leaves to its source: lines that are only a comment, the docstrings of private
    functions, and every docstring's paragraphs after its first (the summary stays). The lines to drop,
    and the lines that now end a docstring."""
    lines = source_text.splitlines()
    drop: set[int] = set()
    close: set[int] = set()
    tokens = tokenize.generate_tokens(io.StringIO(source_text).readline)
    drop.update(
        t.start[0] for t in tokens if t.type == tokenize.COMMENT and not lines[t.start[0] - 1][: t.start[1]].strip()
    )
    for fn in _functions(chosen):
        doc = fn.body[0]
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            continue
        first, last = doc.lineno, doc.end_lineno or doc.lineno
        if fn.name.startswith("_") and not fn.name.endswith("__") and len(fn.body) > 1:
            drop.update(range(first, last + 1))
            continue
        blank = next((n for n in range(first + 1, last) if not lines[n - 1].strip()), None)
        if blank is not None:
            drop.update(range(blank, last + 1))
            close.add(blank - 1)
    return drop, close


def _loops(chosen: Sequence[ast.stmt], rules: Sequence[Rule], used: dict[Rule, int], edits: _Edits) -> None:
    by_kind = {(r.kind, r.old): r for r in rules if r.kind in ("async_for", "async_with")}
    for top in chosen:
        for node in ast.walk(top):
            if isinstance(node, ast.For):
                rule = by_kind.get(("async_for", _callee(node.iter)))
            elif isinstance(node, ast.With):
                found = {by_kind.get(("async_with", _callee(i.context_expr))) for i in node.items}
                if len(found) > 1:
                    raise TwinError(f"line {node.lineno}: a with statement mixes async and sync managers")
                rule = found.pop()
            else:
                continue
            if rule is not None:
                used[rule] = used.get(rule, 0) + 1
                edits.insert((node.lineno, node.col_offset), "async ")


def _renames(
    source_text: str, ranges: Sequence[tuple[int, int]], rules: Sequence[Rule], used: dict[Rule, int], edits: _Edits
) -> None:
    """Names by token in code; names, methods and text rules in docstrings and comments."""
    by_name = {r.old: r for r in rules if r.kind == "name"}
    by_method = {r.old: r for r in rules if r.kind == "method"}
    by_path = {tuple(r.old.replace(".", " . ").split()): r for r in rules if r.kind == "attr"}
    text_rules = [r for r in rules if r.kind == "text"]
    prose = [(re.compile(rf"(?<![\w.]){re.escape(r.old)}\b"), r) for r in by_name.values()]
    prose += [(re.compile(rf"(?<![\w.]){re.escape(r.old)}(?=\(\)|`)"), r) for r in by_method.values()]
    inside = {n for first, last in ranges for n in range(first, last + 1)}
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source_text).readline) if t.start[0] in inside]
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.NAME:
            rule = by_name.get(tok.string)
            method = by_method.get(tok.string)
            if method is not None:
                before = [t.string for t in tokens[max(0, i - 2) : i]]
                if before == ["self", "."] or before[-1:] == ["def"]:
                    rule = method
            for path, attr in by_path.items():
                spelled = tuple(t.string for t in tokens[max(0, i - len(path) + 1) : i + 1])
                if path[-1] == tok.string and spelled == path:
                    rule = attr
            if rule is not None:
                used[rule] = used.get(rule, 0) + 1
                edits.replace(tok.start, tok.end, rule.new)
        elif tok.type in (tokenize.STRING, tokenize.COMMENT):
            text = tok.string
            for rule in text_rules:
                if rule.old in text:
                    used[rule] = used.get(rule, 0) + text.count(rule.old)
                    text = text.replace(rule.old, rule.new)
            for pattern, rule in prose:
                text, n = pattern.subn(rule.new, text)
                used[rule] = used.get(rule, 0) + n
            if text != tok.string:
                edits.replace(tok.start, tok.end, text)


def print_region(target_text: str, twin: Twin, region: str) -> str:
    """``target_text`` with what follows ``twin``'s marker, to the end of its class (or of the module, for a
    marker at the left margin), replaced by ``region``, indented as the marker is."""
    lines = target_text.splitlines(keepends=True)
    begin = [i for i, line in enumerate(lines) if line.strip() == twin.begin]
    if len(begin) != 1:
        raise TwinError(f"{twin.target}: expected the marker line once, last in its class or module: {twin.begin}")
    marker = lines[begin[0]]
    indent = marker[: len(marker) - len(marker.lstrip())]
    end = next(
        (i for i in range(begin[0] + 1, len(lines)) if lines[i].strip() and not lines[i].startswith(indent or "\n")),
        len(lines),
    )
    if not indent:
        end = len(lines)
    first = next(line for line in region.splitlines() if line.strip())
    base = len(first) - len(first.lstrip())
    body = [indent + line[base:] if line.strip() else "\n" for line in region.splitlines(keepends=True)]
    return "".join([*lines[: begin[0] + 1], *body, "\n\n", *lines[end:]])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TwinError(f"{path}: {exc.strerror or exc}") from None


def check(twins: Sequence[Twin], package: Path, write: bool) -> tuple[list[str], list[str]]:
    """Print every twin into its target (in memory); write the targets that changed when ``write``.
    Returns the targets that differ from what is on disk and the rules no twin used."""
    used: dict[Rule, int] = {}
    made_async: dict[str, set[str]] = {}
    sources: dict[str, str] = {}
    targets: dict[str, str] = {}
    for twin in twins:
        source = sources.get(twin.source_path) or _read(package / twin.source_path)
        sources[twin.source_path] = source
        region = render(source, twin, used, made_async.setdefault(twin.source_path, set()))
        path = twin.target_path
        current = targets.get(path) or _read(package / path)
        targets[path] = print_region(current, twin, region)
    drift: list[str] = []
    for path, text in targets.items():
        try:
            text = format_modules({path: text})[path]  # ruff, as the generator formats what it prints
        except FormatError as exc:
            raise TwinError(f"{path}: {exc}") from None
        if text != (package / path).read_text(encoding="utf-8"):
            drift.append(path)
            if write:
                (package / path).write_text(text, encoding="utf-8")
    every = {rule for twin in twins for rule in twin.rules}
    unused = sorted(str(rule) for rule in every if not used.get(rule))
    return drift, unused
