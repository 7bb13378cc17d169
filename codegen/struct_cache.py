"""The struct cache: a module on disk whose struct block can be reused without running the struct generator.

A generated module's one header line ends with ``(structs <key> <hash>)``: the key covers everything the
struct code depends on (generator version and options, the schema document, the field aliases, the
family views), the hash the whole module below the header line as written. When a regeneration finds
the same key and an unedited module, the struct classes and type aliases are read back from it (with
the module's imports that they use, which the tidy step merges with the template's) instead of being
generated; either way the code is then checked against the plan. ``--check`` passes no old modules.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Collection

__all__ = ["sha", "stamp", "reusable_code", "with_key"]

_MARK = re.compile(r" \(structs ([0-9a-f]{24})(?: ([0-9a-f]{16}))?\)$")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def with_key(header: str, key: str) -> str:
    """The header line with the struct key (the hash is added by :func:`stamp` once the module is final)."""
    return f"{header} (structs {key})"


def stamp(text: str) -> str:
    """The final module text with the hash of everything below its header line added to that line."""
    line_end = text.find("\n")
    first, rest = text[:line_end], text[line_end + 1 :]
    found = _MARK.search(first)
    if found is None:
        return text
    return f"{first[: found.start()]} (structs {found.group(1)} {sha(rest)[:16]})\n{rest}"


def reusable_code(old: str | None, key: str, names: Collection[str]) -> str | None:
    """The struct code of a module written before with the same key, if it is unedited.

    ``names`` are the struct classes and type aliases the plan puts in the module.
    """
    if not old:
        return None
    line_end = old.find("\n")
    found = _MARK.search(old[:line_end]) if line_end > 0 else None
    if found is None or found.group(1) != key or found.group(2) != sha(old[line_end + 1 :])[:16]:
        return None
    try:
        tree = ast.parse(old)
    except SyntaxError:
        return None
    lines = old.splitlines()
    import_nodes: list[ast.Import | ast.ImportFrom] = []
    blocks: list[str] = []
    used: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            import_nodes.append(node)
        elif (isinstance(node, ast.ClassDef) and node.name in names) or (
            isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in names
        ):
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            blocks.append("\n".join(lines[start - 1 : node.end_lineno]))
            used.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    imports = [line for node in import_nodes if (line := _used_part(node, used))]
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(blocks) + "\n"


def _used_part(node: ast.Import | ast.ImportFrom, used: set[str]) -> str:
    """The part of an old module's import that the reused struct code uses ("" if none): the rest of the
    module's imports were the template's, and the template may no longer want them."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return ast.unparse(node)
    kept = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
    if not kept:
        return ""
    if isinstance(node, ast.Import):
        return ast.unparse(ast.Import(names=kept))
    return ast.unparse(ast.ImportFrom(module=node.module, names=kept, level=node.level))
