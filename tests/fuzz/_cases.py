"""The differential tests' side of a schema: the oracle, valid instances and single-keyword breaks.

- **The schema** is the model's *effective* one, as the package ships it for the emulator
  (``_schemas/``): the published shape with our ``x-overrides`` applied.
- **The oracle** is ``jsonschema``'s Draft 7 validator on that schema read the way the API and the
  emulator read it: every ``oneOf`` as ``anyOf`` (published branches rarely say ``required``, so a real
  payload matches several; DESIGN.md's wire facts), and ``format: binary`` inside JSON, like
  ``contentEncoding: base64`` (which overrides put on string fields that carry base64), as base64 text
  (JSON has no bytes; the SDK reads and sends binary fields as base64). Draft 7 leaves both keywords to
  the application to assert; this one does.
- **Overrides**: where our ``x-overrides`` (``schemas/``) tighten or loosen the published schema, the
  properties follow the override; :func:`override_note` says so for an instance the published schema
  judges otherwise, naming the override's facts.
- **Valid instances** come from hypothesis-jsonschema, drawn from that same reading.
- **Invalid instances** break one keyword at one place of a valid one (:func:`breaks`): a required key
  taken out, a value of another JSON type, one outside its enum, over or under a bound or a length, a
  pattern missed, an object under ``minProperties``...; only the breaks the oracle refuses are kept.
"""

from __future__ import annotations

import base64
import binascii
import copy
import gzip
import json
import os
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from workers_ai import _registry
from workers_ai.testing._validate import relax

__all__ = [
    "Break",
    "as_floats",
    "breaks",
    "effective",
    "examples",
    "group_id",
    "json_path",
    "oracle",
    "override_facts",
    "override_note",
    "same_json",
    "strategy",
]

Path = tuple["str | int", ...]

EXAMPLES = int(os.environ.get("WORKERS_AI_FUZZ_EXAMPLES") or 3)
"""Instances per schema: a few in the suite (fixed seed), many more under ``make fuzz``."""


def examples(n: int = EXAMPLES) -> settings:
    """Hypothesis settings of these tests: derandomized (one fixed seed), no example database, no deadline."""
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate]
        if os.environ.get("FUZZ_NOSHRINK")
        else [Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@cache
def effective(model_id: str) -> dict[str, Any]:
    """The model's effective ``{"input": ..., "output": ...}`` as shipped with the package."""
    module = _registry.MODELS[model_id][0]
    ref = resources.files("workers_ai").joinpath("_schemas", *module.split(".")[:-1])
    doc = json.loads(gzip.decompress(ref.joinpath(module.rsplit(".", 1)[1] + ".json.gz").read_bytes()))
    schema: dict[str, Any] = doc["schema"]
    return schema


SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "schemas"


@cache
def _file(model_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SCHEMAS / f"{model_id}.json").read_text(encoding="utf-8"))
    return doc


@cache
def override_facts(model_id: str, half: str) -> tuple[str, ...]:
    """The facts our overrides state about one half (``input``, ``output``) of the model's schema."""
    entries = _file(model_id).get("x-overrides") or []
    return tuple(dict.fromkeys(e["fact"] for e in entries if e["path"].startswith(f"/schema/{half}/")))


@cache
def _published(model_id: str, half: str) -> Any:
    return relax(_file(model_id)["schema"][half])


def group_id(models: tuple[str, ...], half: str) -> str:
    """A test id for models sharing one ``half`` schema, saying how many of them have it overridden."""
    overridden = sum(1 for m in models if override_facts(m, half))
    more = f"+{len(models) - 1}" if len(models) > 1 else ""
    return models[0] + more + (f" ({half} overridden on {overridden})" if overridden else "")


def override_note(model_id: str, half: str, instance: Any, valid: bool) -> str:
    """Empty when the published schema (before our overrides) judges ``instance`` as the effective one
    does (``valid``); else what the property follows here: the override, with its facts."""
    facts = override_facts(model_id, half)
    if not facts or oracle(_published(model_id, half)).is_valid(instance) == valid:
        return ""
    verdict = "accepts it, the published schema refuses it" if valid else "refuses it, the published schema accepts it"
    return f"{model_id}: our {half} override {verdict}, and the SDK follows the override ({' / '.join(facts)})"


@cache
def read(model_id: str, half: str) -> Any:
    """One half of the effective schema as the oracle reads it (``oneOf`` as ``anyOf``)."""
    return relax(effective(model_id)[half])


def _is_base64(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _content_encoding(validator: Any, encoding: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if encoding == "base64" and not _is_base64(instance):
        yield jsonschema.ValidationError(f"{instance!r} is not base64 text")


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("binary")(_is_base64)
_Oracle = jsonschema.validators.extend(jsonschema.Draft7Validator, {"contentEncoding": _content_encoding})
_VALIDATORS: dict[int, tuple[Any, Any]] = {}


def oracle(schema: Any) -> jsonschema.Draft7Validator:
    """The real validator for ``schema`` (an object of the cached schemas, so cached by identity)."""
    found = _VALIDATORS.get(id(schema))
    if found is None or found[0] is not schema:
        found = _VALIDATORS[id(schema)] = (schema, _Oracle(schema, format_checker=_FORMATS))
    validator: jsonschema.Draft7Validator = found[1]
    return validator


BASE64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode("ascii"))


LEAN = not os.environ.get("WORKERS_AI_FUZZ_FULL")
"""In the suite, keys a schema does not declare and values it leaves free are drawn as short scalars (so
instances stay small and quick to draw); ``make fuzz`` draws any JSON there."""
_SCALAR = {"type": ["string", "integer", "boolean", "null"], "maxLength": 6}
_UNIONS = frozenset({"anyOf", "oneOf", "allOf"})
SHORT = 2  # at most this many items in a list the schema leaves unbounded


def strategy(schema: Any) -> st.SearchStrategy[Any]:
    """Valid instances of ``schema`` (as :func:`read` gives it): base64 text where it says so. The oracle
    has the last word: hypothesis-jsonschema draws ``not`` (JSON mode's override) only approximately."""
    return from_schema(_for_drawing(schema), custom_formats={"binary": BASE64}).filter(oracle(schema).is_valid)


def _remember_strategies() -> None:
    """Two costs of hypothesis-jsonschema 0.23 that made these tests minutes long on the big chat schemas,
    avoided where that version is installed (another draws as it draws):

    - it builds the strategy of every property anew each time it draws an object, canonicalising its
      schema each time; the strategies are pure functions of the schema objects it holds, so they are
      kept, by identity;
    - before each validator it makes, it checks the sub-schema against the metaschema, with a cache of
      128 that 100 models' schemas overflow; every schema here is Draft 7 (the generator's load step
      checked them), so the class is Draft 7 without the check."""
    import hypothesis_jsonschema._canonicalise as canonical
    import hypothesis_jsonschema._from_schema as drawing

    build = getattr(drawing, "__from_schema", None)
    if build is None or getattr(build, "remembers", False) or not hasattr(canonical, "_get_validator_class"):
        return
    canonical._get_validator_class = lambda schema: jsonschema.Draft7Validator
    kept: dict[tuple[int, int, int], tuple[Any, Any]] = {}

    def remembered(schema: Any, *, alphabet: Any, custom_formats: Any) -> Any:
        key = (id(schema), id(alphabet), id(custom_formats))
        hit = kept.get(key)
        if hit is not None and hit[0] is schema:
            return hit[1]
        made = build(schema, alphabet=alphabet, custom_formats=custom_formats)
        if isinstance(schema, dict):
            kept[key] = (schema, made)
        return made

    remembered.remembers = True  # type: ignore[attr-defined]
    setattr(drawing, "__from_schema", remembered)


_remember_strategies()


def _for_drawing(node: Any, branch: bool = False) -> Any:
    """The schema hypothesis-jsonschema draws from: ``contentEncoding: base64`` spelled ``format: binary``
    (the format it is told to draw base64 text for) and, when :data:`LEAN`, undeclared keys (outside the
    alternatives of a union, which it would have to merge) and free values narrowed to short scalars,
    and unbounded lists kept short (nested lists of objects overran hypothesis' budget for one example,
    so most draws were thrown away). Every instance of it is an instance of the schema."""
    if isinstance(node, list):
        return [_for_drawing(v, branch) for v in node]
    if not isinstance(node, dict):
        return node
    if LEAN and not node:
        return _SCALAR
    out = {
        k: v if k in ("enum", "const", "default", "required") else _for_drawing(v, k in _UNIONS)
        for k, v in node.items()
    }
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: _for_drawing(v) for k, v in node["properties"].items()}
        if LEAN and not branch and "additionalProperties" not in node and not _UNIONS & node.keys():
            out["additionalProperties"] = _SCALAR
    if out.get("contentEncoding") == "base64":
        out["format"] = "binary"
    if LEAN and "items" in out and "maxItems" not in out:
        out["maxItems"] = max(int(out.get("minItems") or 0), SHORT)
    alone = out.get("anyOf")
    if (
        isinstance(alone, list)
        and len(alone) == 1
        and isinstance(alone[0], dict)
        and all(out[k] == v for k, v in alone[0].items() if k in out)
    ):
        rest = {k: v for k, v in out.items() if k != "anyOf"}
        return {**rest, **alone[0]}  # a union of one (a published oneOf of one): the same schema, unmerged
    return out


def as_floats(value: Any) -> Any:
    """``value`` with every integer spelled as a float (``3`` -> ``3.0``): the same JSON instance, which
    JSON Schema still counts as integers and some models send."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value) if abs(value) < 2**53 else value
    if isinstance(value, dict):
        return {k: as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_floats(v) for v in value]
    return value


def json_path(path: Path) -> str:
    """``("messages", 0, "content")`` as the SDK writes it: ``$.messages[0].content``."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: a boolean is never a number; ``3`` and ``3.0`` are the same number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class Break:
    """One keyword broken at one place: ``instance`` is the whole broken instance."""

    path: Path
    keyword: str
    instance: Any

    def __str__(self) -> str:
        return f"{self.keyword} broken at {json_path(self.path)}"


def breaks(schema: Any, instance: Any) -> list[Break]:
    """Every single-keyword break of ``instance`` (valid for ``schema``) that the oracle refuses."""
    whole = oracle(schema)
    out: list[Break] = []
    seen: set[str] = set()
    for path, keyword, value in _candidates(schema, instance, ()):
        broken = _replaced(instance, path, value)
        key = json.dumps([keyword, path, broken], sort_keys=True)
        if key in seen or whole.is_valid(broken):
            continue
        seen.add(key)
        out.append(Break(path, keyword, broken))
    return out


_DELETE = object()  # a replacement meaning "take the key out"


def _replaced(instance: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(instance)
    at = out
    for step in path[:-1]:
        at = at[step]
    if value is _DELETE:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_OTHERS: tuple[Any, ...] = (None, True, 7, 0.5, "x", [], {})


def _candidates(schema: Any, value: Any, path: Path) -> Iterator[tuple[Path, str, Any]]:
    """(path, keyword, replacement) triples that may break ``schema`` at ``path``; :func:`breaks` keeps the
    ones the oracle refuses."""
    if not isinstance(schema, dict):
        return
    if "type" in schema:
        here = oracle(schema)
        other = next((o for o in _OTHERS if _json_type(o) != _json_type(value) and not here.is_valid(o)), None)
        if other is not None or not here.is_valid(None):
            yield path, "type", other
    enum = schema.get("enum")
    if isinstance(enum, list):
        yield path, "enum", next(o for o in ("\u2603 not listed", 987654321) if o not in enum)
    yield from _bounds(schema, value, path)
    forbidden = schema.get("not")
    if isinstance(value, dict) and isinstance(forbidden, dict):  # the one combination it names, made
        made = {k: v["const"] for k, v in (forbidden.get("properties") or {}).items() if "const" in v}
        props = schema.get("properties") or {}
        for key in forbidden.get("required") or []:
            if key not in value and key not in made and _minimal(props.get(key)) is not None:
                made[key] = _minimal(props[key])
        if all(k in value or k in made for k in forbidden.get("required") or []):
            yield path, "not", {**value, **made}
    if isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            sub = items[i] if isinstance(items, list) and i < len(items) else items
            yield from _candidates(sub, item, (*path, i))
    if isinstance(value, dict):
        required = schema.get("required")
        for key in required if isinstance(required, list) else []:
            if key in value:
                yield (*path, key), "required", _DELETE
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        if extra is False:
            yield (*path, "unlisted_key"), "additionalProperties", 1
        for key, item in value.items():
            yield from _candidates(props[key] if key in props else extra, item, (*path, key))
    for key in ("anyOf", "allOf"):
        for branch in schema.get(key) or []:
            if isinstance(branch, dict) and (key == "allOf" or oracle(branch).is_valid(value)):
                yield from _candidates(branch, value, path)


def _minimal(schema: Any) -> Any:
    """The simplest value of a plain schema (an object requiring nothing, a const, an enum's first), or None."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    return {} if schema.get("type") == "object" and not schema.get("required") else None


def _bounds(schema: dict[str, Any], value: Any, path: Path) -> Iterator[tuple[Path, str, Any]]:
    """Breaks of the size and range keywords (and ``integer``, with a fraction)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        whole = _json_type(value) == "integer"
        for key, step in (("minimum", -1), ("exclusiveMinimum", 0), ("maximum", 1), ("exclusiveMaximum", 0)):
            bound = schema.get(key)
            if isinstance(bound, (int, float)) and not isinstance(bound, bool):
                yield path, key, bound + step
        if whole and schema.get("type") == "integer":
            yield path, "type", value + 0.5
    sizes: dict[str, Any] = {}
    if isinstance(value, str):
        sizes = {"minLength": value[: _int(schema.get("minLength")) - 1]}
        high = schema.get("maxLength")
        if isinstance(high, int):
            sizes["maxLength"] = (value + "x" * (high + 1))[: high + 1]
        if schema.get("contentEncoding") == "base64" or schema.get("format") == "binary":
            sizes["contentEncoding" if "contentEncoding" in schema else "format"] = "not base64!"
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            sizes["pattern"] = next((o for o in ("", "\u2603", " x", "0") if re.search(pattern, o) is None), value)
    elif isinstance(value, list):
        sizes = {"minItems": value[: _int(schema.get("minItems")) - 1]}
        if isinstance(schema.get("maxItems"), int) and value:
            sizes["maxItems"] = (value * (schema["maxItems"] + 1))[: schema["maxItems"] + 1]
    elif isinstance(value, dict):
        sizes = {"minProperties": dict(list(value.items())[: _int(schema.get("minProperties")) - 1])}
        if isinstance(schema.get("maxProperties"), int) and value:
            first = next(iter(value.values()))
            sizes["maxProperties"] = {**value, **{f"extra{i}": first for i in range(schema["maxProperties"] + 1)}}
    for key, broken in sizes.items():
        if key in schema:
            yield path, key, broken


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
