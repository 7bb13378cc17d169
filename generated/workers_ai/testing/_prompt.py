"""What a prompt says, read the way a model would skim it: its topic words, proper names, numbers, and
a JSON schema or field names it asks the answer to follow.

Replies built from these read like answers to *this* prompt: a tool's ``city`` argument for "weather in
Lisbon" is "Lisbon", and a JSON-mode reply to "answer with fields name and age" has ``name`` and ``age``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from .._core.jsonview import as_list, as_object

__all__ = ["argument_hint", "names_in", "numbers_in", "stated_schema", "topic_words"]

_STOP = frozenset(
    """a an the is are was were be been of to in on at by for with about as and or but not this that these those
    it its i you he she we they me my your our their what which who how tell please do does did can could would
    should will shall may might must get give show find call use using need want like some any all there here
    today now then than so if when where why whats what's it's i'm""".split()
)
_PLACE_NAMES = ("city", "location", "place", "town", "country", "region", "destination", "origin", "where", "address")
_PREPOSITIONS = ("in", "at", "for", "to", "from", "near", "of")
_DECODER = json.JSONDecoder()
_FORMATS = frozenset({"JSON", "XML", "YAML", "CSV", "HTML", "API", "SQL", "URL", "ID"})
_NUMERIC_WORDS = frozenset(
    """temperature temp age count number price amount total year population score rating quantity size length
    width height weight percent percentage lat lon latitude longitude days hours minutes seconds cost""".split()
)
_SCHEMA_KEYS = frozenset({"properties", "$defs", "definitions", "anyOf", "oneOf", "allOf", "items"})


def topic_words(text: str) -> list[str]:
    """The words that carry meaning (no glue words), in order, as written."""
    return [w for w in re.findall(r"[A-Za-z][\w'-]*", text) if w.lower() not in _STOP]


def names_in(text: str) -> list[str]:
    """Proper names: runs of capitalised words that do not open a sentence (or follow a preposition)."""
    out: list[str] = []
    tokens = re.findall(r"[\w'-]+|[.!?,;:()\n]", text)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok[:1].isalnum():
            i += 1
            continue
        starts = i == 0 or tokens[i - 1] in ".!?\n"  # a line opens a sentence too
        after_prep = i > 0 and tokens[i - 1].lower() in _PREPOSITIONS
        if tok[:1].isupper() and tok.lower() not in _STOP and tok not in _FORMATS and (not starts or after_prep):
            run = [tok]
            while (
                i + 1 < len(tokens)
                and tokens[i + 1][:1].isupper()
                and tokens[i + 1].lower() not in _STOP
                and tokens[i + 1] not in _FORMATS
            ):
                i += 1
                run.append(tokens[i])
            out.append(" ".join(run))
        i += 1
    return out


def _after_preposition(text: str) -> str | None:
    """The word(s) after the last "in"/"at"/"for"/... : "weather in lisbon" -> "lisbon"."""
    found = re.findall(r"\b(?:in|at|for|near|from|to)\s+([A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*)*)", text)
    kept = [f for f in found if f.lower() not in _STOP]
    return kept[-1] if kept else None


def numbers_in(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w.-])", text)]


def _decode_at(text: str, i: int) -> tuple[Any, int, bool]:
    """The JSON value that starts at ``text[i]``: ``(value, end, True)``, or ``(None, where it failed,
    False)``. It is read in a window that doubles while the failure may be the window's cut (a
    JSONDecodeError counts the lines of all it was given, so a failure costs what it read, not the
    whole text before it)."""
    size = 256
    while True:
        part = text[i : i + size]
        whole = i + size >= len(text)
        try:
            value, end = _DECODER.raw_decode(part)
        except json.JSONDecodeError as exc:
            if whole or (exc.pos + 64 < len(part) and not exc.msg.startswith("Unterminated string")):
                return None, i + exc.pos, False
        except RecursionError:  # nested deeper than the decoder goes
            return None, i + len(part), False
        else:
            return value, i + end, True
        size *= 2


@lru_cache(maxsize=8)
def _json_spans(text: str) -> tuple[tuple[int, int, dict[str, Any]], ...]:
    """Every JSON object written inside ``text`` (outermost first), each with where it stands:
    ``(start, end, object)``. One pass, cached (the schema reader and every argument hint share it).

    A ``{`` that opens no object is passed over. The cost is bounded by the text's length: once a run
    of starts keeps failing at the same place (a deep nest of invalid JSON, each level read again) the
    rest of that run is skipped, and once failed reads add up to 32 times the text the scan stops (the
    objects found so far stand)."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    budget = 32 * len(text) + 4096
    fail_at, fails = -1, 0
    i = text.find("{")
    while i != -1:
        value, end, ok = _decode_at(text, i)
        if not ok:
            budget -= end - i + 1
            fails = fails + 1 if end == fail_at else 1
            fail_at = end
            if budget < 0:
                break
            i = text.find("{", end if fails > 16 and end > i else i + 1)
            continue
        obj = as_object(value)
        if obj is not None:
            found.append((i, end, obj))
        fail_at, fails = -1, 0
        i = text.find("{", end)
    return tuple(found)


def _example_schema(example: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """The schema an example object implies: its keys, each typed like its value (32 levels deep)."""

    def of(value: Any) -> dict[str, Any]:
        obj, items = as_object(value), as_list(value)
        if depth > 32:
            return {}
        if obj is not None:
            return _example_schema(obj, depth + 1)
        if items is not None:
            return {"type": "array", "items": of(items[0]) if items else {}}
        if isinstance(value, bool):
            return {"type": "boolean"}
        if isinstance(value, int):
            return {"type": "integer"}
        if isinstance(value, float):
            return {"type": "number"}
        return {"type": "string"} if isinstance(value, str) else {}

    return {"type": "object", "properties": {k: of(v) for k, v in example.items()}, "required": list(example)}


_TRIGGER = re.compile(r"\b(?:fields?|keys?|properties|attributes|columns)\b", re.I)
_NOT_NAMES = _STOP | {"following", "named", "called", "json", "object", "only", "exactly", "both", "each", "every"}
_TYPE_WORDS = (
    ("integer", ("integer", "int", "whole number", "count")),
    ("number", ("number", "numeric", "float", "double", "decimal", "celsius", "fahrenheit", "degrees")),
    ("boolean", ("boolean", "bool", "true/false", "yes/no")),
    ("array", ("list", "array")),
    ("string", ("string", "text", "str")),
)


def _type_hint(words: str) -> str | None:
    """The JSON type a field's description asks for ("(number)", ": integer", "a list of ..."), if any."""
    lowered = f" {words.lower()} "
    for kind, hints in _TYPE_WORDS:
        if any(re.search(rf"(?<![\w/]){re.escape(h)}(?![\w/])", lowered) for h in hints):
            return kind
    return None


def _named_fields(text: str) -> dict[str, str | None]:
    """Field names a prompt asks for in words, each with the type its description asks for (or None):
    "with keys city, temperature_c and conditions", "fields: name (string), age (integer)",
    "keys `title`, `year`", or a bulleted list after "keys:"."""
    found: dict[str, str | None] = {}
    for trigger in _TRIGGER.finditer(text):
        rest = text[trigger.end() :]
        end = re.search(r"\.(?:\s|$)|\n\s*\n|[?!]", rest)
        part = rest[: end.start()] if end else rest
        # A parenthesis describes the field before it: its commas must not split the list.
        part = re.sub(r"\(([^)]*)\)", lambda m: " : " + m.group(1).replace(",", " ").replace(" and ", " "), part)
        for item in re.split(r"\s*(?:,|;|\n|\band\b|\bor\b)\s*", part):
            item = item.strip(" \t-*•:")
            match = re.match(r"[`\"']?([A-Za-z_]\w*)[`\"']?", item)
            if match is None or match.group(1).lower() in _NOT_NAMES:
                continue
            name = match.group(1)
            found.setdefault(name, _type_hint(item[match.end() :]))
        if found:
            return found
    if re.search(r"\bjson\b", text, re.I):
        quoted = re.findall(r"[`\"']([A-Za-z_][\w]*)[`\"']", text)
        return dict.fromkeys(quoted)
    return {}


def _without_json(text: str) -> str:
    """``text`` without the JSON objects written in it (as they are, or with template-doubled braces)."""
    if "{" not in text:
        return text
    out = _undoubled(text) if "{{" in text else text
    pieces: list[str] = []
    at = 0
    for start, end, _ in _json_spans(out):
        pieces += (out[at:start], " ")
        at = end
    pieces.append(out[at:])
    return "".join(pieces)


def _undoubled(text: str) -> str:
    """``text`` with template-escaped braces (``{{`` and ``}}``, as prompt templates write a schema)
    made single."""
    return text.replace("{{", "{").replace("}}", "}")


def _is_schema(obj: dict[str, Any]) -> bool:
    return bool(_SCHEMA_KEYS & set(obj)) or obj.get("type") == "object"


def stated_schema(text: str) -> dict[str, Any] | None:
    """The JSON schema a prompt asks the answer to follow: a schema written in it (read by its
    ``properties``, also when a template wrote it with doubled braces), an example object written in
    it, or the field names it lists (with the types they ask for); None when it states none."""
    candidates = [text, _undoubled(text)] if "{{" in text else [text]
    found = [obj for candidate in candidates for _, _, obj in _json_spans(candidate)]
    for obj in found:
        if _is_schema(obj):
            return obj
    if found:
        return _example_schema(max(found, key=len))
    names = _named_fields(text)
    if names:
        props: dict[str, Any] = {}
        for name, kind in names.items():
            kind = kind or ("number" if _numeric_name(name) else "string")
            props[name] = {"type": kind, "items": {"type": "string"}} if kind == "array" else {"type": kind}
        return {"type": "object", "properties": props, "required": list(names)}
    return None


def _numeric_name(name: str) -> bool:
    """Whether a field named ``name`` (and nothing more) most likely holds a number: "temperature", "age"."""
    parts = {p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name.lower()) if p}
    return bool(parts & _NUMERIC_WORDS)


def argument_hint(name: str, schema: Any, question: str) -> Any:
    """A value for the argument (or JSON field) ``name`` taken from the words of ``question``, or None.

    Place-like names take the proper name the question mentions ("in Lisbon"); enums the value the
    question names; numbers the question's numbers; other strings its proper names, else its topic words.
    """
    obj = as_object(schema) or {}
    question = _without_json(question)  # a schema or example in the prompt is not what it asks about
    lowered = question.lower()
    enum = as_list(obj.get("enum"))
    if enum is not None:
        named = [v for v in enum if isinstance(v, str) and v.lower() in lowered]
        return named[0] if named else None
    kind = obj.get("type")
    if kind in ("number", "integer"):
        numbers = numbers_in(question)
        if not numbers:
            return None
        return int(numbers[0]) if kind == "integer" and numbers[0].is_integer() else numbers[0]
    if kind == "array":
        items = as_object(obj.get("items")) or {}
        if items.get("type", "string") == "string":
            names = names_in(question)
            return names or topic_words(question)[:3] or None
        return None
    if kind not in ("string", None):
        return None
    names = names_in(question)
    if any(p in name.lower() for p in _PLACE_NAMES):
        after = _after_preposition(question)
        if names:
            return names[-1]
        return after.title() if after else None
    if names:
        return names[0]
    words = topic_words(question)
    return " ".join(words[:6]) if words else None
