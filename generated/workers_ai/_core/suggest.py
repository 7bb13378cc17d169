"""Did you mean: the known name nearest a misspelt one (a model id, an input key), by :mod:`difflib`; loaded
only when a name is unknown.

An unknown model id may be a model newer than this package, so :func:`slip_of` (the warning at ``model()``)
names a known id only for a typing slip: at most two characters differ, none a digit (``3.1`` -> ``3.3`` is
another version), each edit in a word of three or more characters (``aura-2-en``/``-es`` are two models), or
only the case. Held against every real id (tests/runtime/test_did_you_mean.py), it flags none and finds over
nine in ten one-letter slips. After the API's "no such model" (5007), :func:`near_models` is looser.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from .jsonview import as_list, as_object

__all__ = ["missing_field_hint", "missing_key_hint", "near_key", "near_models", "slip_of", "unknown_key_hint"]

_SEPARATORS = "-./_@"


def slip_of(model_id: str, known: Iterable[str]) -> str | None:
    """The known id ``model_id`` is most likely a typing slip of, or None (see the module docstring)."""
    pool = sorted(known)
    same = [k for k in pool if k != model_id and k.lower() == model_id.lower()]
    close = difflib.get_close_matches(model_id, pool, n=5, cutoff=0.8)
    return next((k for k in [*same, *close] if k in same or (k != model_id and _is_slip(model_id, k))), None)


def near_models(model_id: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known id ``model_id`` is a slip of, else up to ``n`` close ones, nearest first."""
    slip = slip_of(model_id, known)
    close = difflib.get_close_matches(model_id, sorted(known), n=n, cutoff=0.75)
    return [slip] if slip is not None else [m for m in close if m != model_id]


def near_key(key: str, known: Iterable[str]) -> str | None:
    """The known input key nearest ``key`` (``promt`` -> ``prompt``, ``txet`` -> ``text``), or None."""
    pool = sorted(k for k in known if k != key)
    found = difflib.get_close_matches(key, pool, n=1, cutoff=0.7)
    # difflib rates two swapped letters of a short word low (``txet``/``text``: 0.5): one edit is a slip too.
    return found[0] if found else next((k for k in pool if _one_edit(key.lower(), k.lower())), None)


def unknown_key_hint(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'prompt'?)`` for an unknown key near a known one, else ''."""
    near = near_key(key, known)
    return f" (did you mean {near!r}?)" if near is not None else ""


def missing_key_hint(given: Iterable[str], missing: Iterable[str], declared: Iterable[str] = ()) -> str:
    """``; did you mean 'prompt' instead of 'promt'?`` when a given key that is not ``declared`` is near one of
    the ``missing`` required keys, else ''."""
    wanted, skip = list(dict.fromkeys(missing)), set(declared)
    for key in given:
        near = None if key in skip or key in wanted else near_key(key, wanted)
        if near is not None:
            return f"; did you mean {near!r} instead of {key!r}?"
    return ""


def missing_field_hint(message: str, path: str, payload: Any) -> str:
    """For msgspec's "Object missing required field `content`" at ``path`` (``$.messages[0]``) of
    ``payload``: :func:`missing_key_hint` of the keys of the object there."""
    field = re.match(r"Object missing required field `([^`]*)`", message)
    at: Any = payload
    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        obj, items = as_object(at), as_list(at)
        if name:
            at = obj.get(name) if obj is not None else None
        else:
            at = items[int(index)] if items is not None and int(index) < len(items) else None
    keys = as_object(at)
    return missing_key_hint(map(str, keys), [field[1]]) if field and keys else ""


def _is_slip(given: str, known: str) -> bool:
    changed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, given, known, autojunk=False).get_opcodes():
        edit = given[i1:i2] + known[j1:j2]
        if tag == "equal":
            continue
        if any(c.isdigit() for c in edit):
            return False  # a version, a size or a date: another model
        while j1 > 0 and known[j1 - 1] not in _SEPARATORS:
            j1 -= 1
        while j2 < len(known) and known[j2] not in _SEPARATORS:
            j2 += 1
        if not all(c in _SEPARATORS for c in edit) and j2 - j1 < 3:  # in a word of one or two letters
            return False
        changed += max(i2 - i1, len(edit) - (i2 - i1))
    return 0 < changed <= 2


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (three characters or more) differ by one insertion, deletion, substitution or
    swap of neighbours."""
    if min(len(a), len(b)) < 3 or a == b or abs(len(a) - len(b)) > 1:
        return False
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if len(a) == len(b):  # one letter replaced, or two neighbours swapped
        return a[i + 1 :] == b[i + 1 :] or (a[i + 2 :] == b[i + 2 :] and a[i : i + 2] == b[i : i + 2][::-1])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return short[i:] == long_[i + 1 :]
