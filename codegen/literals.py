"""Schema text as it may appear in generated code: literals, docstring bodies, comments, ``__all__``.

Schema text only ever reaches the output through these: :func:`pylit` for values, :func:`doc_text` for
docstring bodies and :func:`comment_text` for comment lines, so no schema can end a string or a line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, cast

from .schema_walk import as_map

__all__ = ["all_names", "comment_text", "doc_text", "price_text", "pylit"]


def all_names(names: Iterable[str], width: int = 116) -> str:
    """``__all__`` for ``names``, a few to a line that the formatter keeps (``__all__ += [...]`` after the
    first line, a form mypy and pyright read): a module listing 40 names takes 6 lines, not 42."""
    lines: list[list[str]] = [[]]
    for name in names:
        lead = len("__all__ = [" if len(lines) == 1 else "__all__ += [")
        if lines[-1] and lead + sum(len(n) + 4 for n in [*lines[-1], name]) > width:
            lines.append([])
        lines[-1].append(pylit(name))
    return "\n".join(f"__all__ {'=' if i == 0 else '+='} [{', '.join(items)}]" for i, items in enumerate(lines))


def pylit(value: Any) -> str:
    """A Python literal for plain JSON data; strings become ``repr`` (never raw text), in double quotes
    where that needs no escape (as ruff writes them: the listing's rows are printed unformatted)."""
    if isinstance(value, str):
        text = repr(value)
        return f'"{text[1:-1]}"' if text[0] == "'" and '"' not in value else text
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        items = list(cast("Iterable[Any]", value))
        inner = ", ".join(pylit(v) for v in items)
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    if isinstance(value, Mapping):
        pairs = cast("Iterable[tuple[Any, Any]]", value.items())  # pyright: ignore[reportUnknownMemberType]
        return "{" + ", ".join(f"{pylit(k)}: {pylit(v)}" for k, v in pairs) + "}"
    return repr(str(value))


def doc_text(value: Any, width: int = 96) -> str:
    """Text safe inside a triple-quoted docstring: no backslashes, quotes runs or control characters."""
    text = str(value or "")
    text = text.replace("\\", "/").replace('"""', "'''").replace('"', "'")
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > 600:
        text = text[:597] + "..."
    return text


def price_text(entries: Iterable[Any]) -> str:
    """``[{unit, price, currency}]`` from the catalog as words: ``0.051 USD per M input tokens; ...``."""
    parts: list[str] = []
    for raw in entries:
        entry = as_map(raw) or {}
        amount, currency, unit = entry.get("price"), entry.get("currency"), entry.get("unit")
        if amount is None:
            continue
        parts.append(" ".join(str(x) for x in (amount, currency, unit) if x not in (None, "")))
    return "; ".join(parts)


def comment_text(value: Any) -> str:
    """Text safe on a ``#`` comment line: nothing can end the line or declare a source encoding (PEP 263)."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\x85]", " ", str(value or ""))
    return re.sub(r"coding([:=])", r"coding \1", text)
