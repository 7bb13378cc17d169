"""Did you mean: the known name nearest a misspelt one (a model id, an input key), with :mod:`difflib`.

Loaded only when a name is not known (a model id outside the registry, an input key the schema lacks), so a
program whose names are right never imports it.

A model id that is not in the registry may be a model newer than this package, so the warning at
``model()`` (:func:`slip_of`) fires only on what looks like a typing slip of a known id: the ids differ in at
most two characters, none of them a digit (``3.1`` -> ``3.3`` is another version, not a slip), and each edit
falls in a word (between ``-``, ``.``, ``/``, ``_``) of three or more characters of the known id
(``aura-2-en`` and ``aura-2-es`` are two models); or only in letter case. Held against every real id
(tests/runtime/test_did_you_mean.py: each catalog id taken out and asked about, and ids published after the
catalog), it flags none of them, and it finds about 95 of 100 one-letter slips in letters. Where the API has
already said "no such model" (5007), :func:`near_models` is looser: a suggestion then cannot be a false alarm.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from .jsonview import as_list, as_object

__all__ = ["missing_field_hint", "missing_key_hint", "near_key", "near_models", "slip_of", "unknown_key_hint"]

_SEPARATORS = "-./_@"
_MAX_SLIP = 2  # characters a slip may change
_MIN_WORD = 3  # a slip's edits fall in words at least this long (language codes, sizes: other models)
_RATIO = 0.8  # difflib's first cut of candidate ids (every slip of two characters in an id is above it)


def slip_of(model_id: str, known: Iterable[str]) -> str | None:
    """The known id ``model_id`` is most likely a typing slip of, or None (see the module docstring)."""
    pool = sorted(known)
    lowered = model_id.lower()
    for candidate in pool:
        if candidate != model_id and candidate.lower() == lowered:
            return candidate
    for candidate in difflib.get_close_matches(model_id, pool, n=5, cutoff=_RATIO):
        if candidate != model_id and _is_slip(model_id, candidate):
            return candidate
    return None


def near_models(model_id: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known id ``model_id`` is a slip of, else up to ``n`` known ids close to it, nearest first (for an
    id the API does not know)."""
    pool = sorted(known)
    slip = slip_of(model_id, pool)
    if slip is not None:
        return [slip]
    return [m for m in difflib.get_close_matches(model_id, pool, n=n, cutoff=0.75) if m != model_id]


def near_key(key: str, known: Iterable[str]) -> str | None:
    """The known input key nearest ``key`` (``promt`` -> ``prompt``, ``contnet`` -> ``content``), or None."""
    pool = [k for k in known if k != key]
    found = difflib.get_close_matches(key, pool, n=1, cutoff=0.7)
    if found:
        return found[0]
    # difflib rates a swap of two letters in a short word low (``txet``/``text`` is 0.5): one edit is a slip.
    return next((k for k in sorted(pool) if _one_edit(key.lower(), k.lower())), None)


def unknown_key_hint(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'prompt'?)`` for an unknown key near a known one, else ''."""
    near = near_key(key, known)
    return f" (did you mean {near!r}?)" if near is not None else ""


def missing_key_hint(given: Iterable[str], missing: Iterable[str], declared: Iterable[str] = ()) -> str:
    """``; did you mean 'prompt' instead of 'promt'?`` when a given key that is not ``declared`` is near one of
    the ``missing`` required keys, else ''."""
    known = set(declared)
    wanted = list(dict.fromkeys(missing))
    for key in given:
        if key in known or key in wanted:
            continue
        near = near_key(key, wanted)
        if near is not None:
            return f"; did you mean {near!r} instead of {key!r}?"
    return ""


_MISSING = "Object missing required field `"  # msgspec's words


def missing_field_hint(message: str, path: str, payload: Any) -> str:
    """For msgspec's "Object missing required field `content`" at ``path`` of ``payload``: the hint of
    :func:`missing_key_hint` when the object there has a key near ``content``, else ''."""
    if not message.startswith(_MISSING):
        return ""
    field = message[len(_MISSING) :].partition("`")[0]
    return missing_key_hint(keys_at(payload, path), [field])


def keys_at(value: Any, path: str) -> list[str]:
    """The keys of the object at ``path`` (``$.messages[0]``) inside ``value`` (decoded JSON), or [] when
    there is none."""
    at: Any = value
    for piece in _pieces(path):
        obj, items = as_object(at), as_list(at)
        if obj is not None and isinstance(piece, str):
            at = obj.get(piece)
        elif items is not None and isinstance(piece, int) and -len(items) <= piece < len(items):
            at = items[piece]
        else:
            return []
    found = as_object(at)
    return [str(k) for k in found] if found is not None else []


def _pieces(path: str) -> list[str | int]:
    """``$.messages[0].content`` as ``["messages", 0, "content"]``."""
    pieces: list[str | int] = []
    for part in path.removeprefix("$").split("."):
        name, _, rest = part.partition("[")
        if name:
            pieces.append(name)
        for index in rest.split("[") if rest else ():
            digits = index.rstrip("]")
            if not digits.lstrip("-").isdigit():
                return []
            pieces.append(int(digits))
    return pieces


def _is_slip(given: str, known: str) -> bool:
    changed = 0
    matcher = difflib.SequenceMatcher(None, given, known, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        ours, theirs = given[i1:i2], known[j1:j2]
        edit = ours + theirs
        if any(c.isdigit() for c in edit):
            return False  # a version, a size or a date: another model
        if not all(c in _SEPARATORS for c in edit) and len(_word_at(known, j1, j2)) < _MIN_WORD:
            return False
        changed += max(len(ours), len(theirs))
    return 0 < changed <= _MAX_SLIP


def _word_at(text: str, start: int, end: int) -> str:
    while start > 0 and text[start - 1] not in _SEPARATORS:
        start -= 1
    while end < len(text) and text[end] not in _SEPARATORS:
        end += 1
    return text[start:end]


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (three characters or more) differ by one insertion, deletion, substitution or
    swap of neighbours."""
    if min(len(a), len(b)) < 3 or abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i in range(len(short)) if short[i] != long_[i]), len(short))
    return short[i:] == long_[i + 1 :]
