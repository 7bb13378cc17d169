"""Scalars that fit their schema: numbers inside bounds and ``multipleOf``, strings inside length,
``format`` and ``pattern``; and the fast check of long plain lists (embedding vectors)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
from typing import Any, cast

from .._core.jsonview import as_object
from ._instances import MISSING, Unsatisfiable
from ._regex import regex_example

__all__ = ["number", "scalar_list", "string"]

_SIMPLE_SCALAR = frozenset({"type", "description", "title", "minimum", "maximum", "format", "default", "examples"})
_WORDS = tuple(
    """river lantern orbit maple signal harbor quartz meadow copper ember summit violet cinder willow prism
    tundra falcon garnet delta nimbus atlas cobalt juniper mosaic pebble saffron thistle zephyr basil canyon""".split()
)
_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "someone@example.com",
    "idn-email": "someone@example.com",
    "uri": "https://example.com/resource",
    "uri-reference": "https://example.com/resource",
    "iri": "https://example.com/resource",
    "url": "https://example.com/resource",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def scalar_list(items: Any, values: list[Any]) -> list[Any] | None:
    """Fast path for long lists of plain numbers or strings (embedding vectors): check, don't rebuild."""
    obj = as_object(items)
    if obj is None or not set(obj) <= _SIMPLE_SCALAR:
        return None
    kind = obj.get("type")
    lo, hi = obj.get("minimum"), obj.get("maximum")
    if kind in ("number", "integer"):
        integer = kind == "integer"
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return None
            if integer and not float(v).is_integer():
                return None
            if isinstance(lo, (int, float)) and v < lo:
                return None
            if isinstance(hi, (int, float)) and v > hi:
                return None
        return values
    if kind == "string" and obj.get("format") != "binary":
        return values if all(isinstance(v, str) for v in values) else None
    return None


def number(obj: dict[str, Any], integer: bool, hint: Any, rng: random.Random) -> int | float:
    lo: float = -math.inf
    hi: float = math.inf
    minimum, maximum = obj.get("minimum"), obj.get("maximum")
    xmin, xmax = obj.get("exclusiveMinimum"), obj.get("exclusiveMaximum")
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        lo = float(minimum)
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool):
        hi = float(maximum)
    strict_lo = isinstance(xmin, (int, float)) and not isinstance(xmin, bool) and float(xmin) >= lo
    strict_hi = isinstance(xmax, (int, float)) and not isinstance(xmax, bool) and float(xmax) <= hi
    if strict_lo:
        lo = float(cast(float, xmin))
    if strict_hi:
        hi = float(cast(float, xmax))
    step = obj.get("multipleOf")
    mult = float(step) if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0 else None

    def fits(v: float) -> bool:
        if v < lo or v > hi or (strict_lo and v == lo) or (strict_hi and v == hi):
            return False
        if integer and not float(v).is_integer():
            return False
        if mult is not None and not math.isclose(v / mult, round(v / mult), abs_tol=1e-9):
            return False
        return True

    def done(v: float) -> int | float:
        return int(v) if integer else v

    if isinstance(hint, (int, float)) and not isinstance(hint, bool) and fits(float(hint)):
        return done(hint)
    default = obj.get("default")
    if isinstance(default, (int, float)) and not isinstance(default, bool) and fits(float(default)):
        return done(default)
    if mult is not None:
        start = math.ceil((lo if lo > -math.inf else 0.0) / mult)
        for k in range(start, start + 1000):
            v = k * mult
            v = float(round(v)) if integer and math.isclose(v, round(v)) else v
            if fits(v):
                return done(v)
        raise Unsatisfiable("no multipleOf in range")
    if integer:
        low_i = math.floor(lo) + 1 if lo > -math.inf else None
        if low_i is not None and (not strict_lo and float(low_i - 1) >= lo):
            low_i -= 1
        high_i = math.ceil(hi) - 1 if hi < math.inf else None
        if high_i is not None and (not strict_hi and float(high_i + 1) <= hi):
            high_i += 1
        if low_i is None and high_i is None:
            return rng.randint(1, 100)
        if low_i is None:
            assert high_i is not None
            return high_i - rng.randint(0, 10)
        if high_i is None:
            return low_i + rng.randint(0, 10)
        if low_i > high_i:
            raise Unsatisfiable("empty integer range")
        return rng.randint(low_i, min(high_i, low_i + 1000))
    if lo == -math.inf and hi == math.inf:
        return round(rng.random(), 4)
    if lo == -math.inf:
        lo = hi - 10.0
    if hi == math.inf:
        hi = lo + 10.0
    for _ in range(8):
        v = round(lo + (hi - lo) * rng.random(), 4)
        if fits(v):
            return v
    mid = (lo + hi) / 2
    if fits(mid):
        return mid
    raise Unsatisfiable("empty number range")


def string(obj: dict[str, Any], hint: Any, rng: random.Random, seed: str) -> str:
    low = obj.get("minLength")
    high = obj.get("maxLength")
    lo = int(low) if isinstance(low, int) else 0
    hi = int(high) if isinstance(high, int) else None
    pattern = obj.get("pattern") if isinstance(obj.get("pattern"), str) else None

    def fits(s: str) -> bool:
        if len(s) < lo or (hi is not None and len(s) > hi):
            return False
        return pattern is None or re.search(cast(str, pattern), s) is not None

    def adjust(s: str) -> str:
        if hi is not None and len(s) > hi:
            s = s[:hi]
        if len(s) < lo:
            s = s + ("x" * (lo - len(s)))
        return s

    base64_text = obj.get("format") == "binary" or obj.get("contentEncoding") == "base64"
    if hint is not MISSING and not base64_text:
        text = hint if isinstance(hint, str) else json.dumps(hint, separators=(",", ":"))
        if fits(text):
            return text
        text = adjust(text)
        if fits(text):
            return text
    default = obj.get("default")
    if isinstance(default, str) and fits(default):
        return default
    fmt = obj.get("format")
    if base64_text:
        raw = hashlib.sha256(seed.encode()).digest()
        text = base64.b64encode(raw).decode("ascii")
        if fits(adjust(text)):
            return adjust(text)
    if isinstance(fmt, str) and fmt in _FORMATS and fits(_FORMATS[fmt]):
        return _FORMATS[fmt]
    if pattern is not None:
        found = regex_example(pattern)
        if found is not None and fits(found):
            return found
        if found is not None and len(found) < lo and hi is None:
            padded = found + ("0" * (lo - len(found)))
            if fits(padded):
                return padded
        raise Unsatisfiable(f"cannot build a string for pattern {pattern!r}")
    words = [rng.choice(_WORDS) for _ in range(rng.randint(2, 5))]
    text = adjust(" ".join(words))
    if not fits(text):
        raise Unsatisfiable("string bounds")
    return text
