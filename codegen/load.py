"""Step 1 of the pipeline: read schema files and turn them into checked, self-contained sources.

Everything that is a quirk of how schemas are published is handled here (or in ``plan``), never in
templates: misplaced ``required`` lists, local ``$ref`` pointers, the two file forms.
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from jsonschema import Draft7Validator
from jsonschema.exceptions import SchemaError

from .overrides import OverrideError, apply_overrides
from .schema_walk import as_list, as_map

__all__ = ["LoadResult", "ModelSource", "Problem", "load_schemas"]

_SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


@dataclass(frozen=True)
class Problem:
    """One reason a schema file cannot be used, located by file and JSON pointer."""

    file: str
    pointer: str
    message: str

    def __str__(self) -> str:
        return one_line(f"{self.file}: {self.pointer or '/'}: {self.message}")


def one_line(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x1b``...), so one problem stays one line."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


@dataclass
class ModelSource:
    """A model whose schemas loaded cleanly, with local references made self-contained."""

    file: str
    rel: str
    label: str
    model_id: str
    description: str
    task: str
    properties: dict[str, Any]
    input: dict[str, Any]
    output: dict[str, Any]
    definitions: dict[str, Any]
    digest: str
    catalog: dict[str, Any]


@dataclass
class LoadResult:
    models: list[ModelSource] = field(default_factory=list[ModelSource])
    problems: list[Problem] = field(default_factory=list[Problem])
    warnings: list[str] = field(default_factory=list[str])
    skipped: list[str] = field(default_factory=list[str])  # files without a schema (one line each)


def load_schemas(schemas_dir: Path, patterns: Iterable[str] = ()) -> LoadResult:
    """Load every ``*.json`` below ``schemas_dir`` whose model id matches one of ``patterns``."""
    result = LoadResult()
    if not schemas_dir.is_dir():
        result.problems.append(Problem(str(schemas_dir), "", "schemas folder does not exist"))
        return result
    wanted = list(patterns)
    for path in sorted(schemas_dir.rglob("*.json"), key=lambda p: p.relative_to(schemas_dir).as_posix()):
        rel = path.relative_to(schemas_dir).as_posix()
        display = path.as_posix()
        source = _load_file(path, rel, display, result)
        if source is None:
            continue
        if wanted and not any(fnmatch.fnmatchcase(source.model_id, pat) for pat in wanted):
            continue
        result.models.append(source)
    return result


class _Unusable(Exception):
    """A file that cannot be used, with every problem found before giving up on it."""

    def __init__(self, *problems: Problem) -> None:
        super().__init__(problems[0].message)
        self.problems = problems


def _load_file(path: Path, rel: str, display: str, result: LoadResult) -> ModelSource | None:
    """One schema file as a model source: read, checked, patched by its overrides, split into its two halves and
    made self-contained. None when it cannot be used (its problems are in ``result``) or publishes no schema
    (a line in ``result.skipped``)."""
    try:
        raw = _read(path, display)
        doc = _with_overrides(_within_limits(_parse(raw, display), display, result.warnings), display)
        if _publishes_no_schema(doc):
            result.skipped.append(f"{display}: the model publishes no input/output schema; skipped")
            return None
        halves = _halves(doc, rel, display, result.warnings)
    except _Unusable as exc:
        result.problems.extend(exc.problems)
        return None
    return ModelSource(
        file=display,
        rel=rel,
        label=f"{path.parents[len(Path(rel).parts) - 1].name}/{rel}",
        model_id=halves.model_id,
        description=_description(doc),
        task=_task(doc)[0],
        properties=_properties(doc),
        input=halves.input,
        output=halves.output,
        definitions=halves.definitions,
        digest=hashlib.sha256(raw).hexdigest(),
        catalog=_catalog(doc, halves),
    )


def _read(path: Path, display: str) -> bytes:
    if not path.is_file():
        what = "a dangling symbolic link" if path.is_symlink() and not path.exists() else "not a regular file"
        raise _Unusable(Problem(display, "", f"cannot be read: {what}"))
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _Unusable(Problem(display, "", f"cannot be read: {exc.strerror or exc}")) from None


def _parse(raw: bytes, display: str) -> dict[str, Any]:
    """The file's JSON object (a UTF-8 BOM is allowed; NaN and Infinity are not JSON)."""
    try:
        parsed: Any = json.loads(raw.decode("utf-8-sig"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        message = f"not valid JSON{where}: {str(exc.args[0]).split(':')[0]}"
        raise _Unusable(Problem(display, "", message)) from None
    except RecursionError:
        raise _Unusable(Problem(display, "", "not usable: the JSON is nested too deeply")) from None
    doc = as_map(parsed)
    if doc is None:
        raise _Unusable(Problem(display, "", "expected a JSON object"))
    return doc


def _within_limits(doc: dict[str, Any], display: str, warnings: list[str]) -> dict[str, Any]:
    """``doc`` if it nests within the limits the later steps recurse through; lone surrogates replaced (warned)."""
    deep = _too_deep(doc, "", 0)
    if deep is not None:
        raise _Unusable(Problem(display, deep, f"nested more than {_MAX_DEPTH} levels deep"))
    deep = _schema_too_deep(doc)
    if deep is not None:
        raise _Unusable(Problem(display, deep, f"schemas nested more than {_MAX_SCHEMA_DEPTH} levels deep"))
    if _has_surrogates(doc):
        warnings.append(f"{display}: lone UTF-16 surrogates in strings were replaced with U+FFFD")
        return as_map(_replace_surrogates(doc)) or {}
    return doc


def _with_overrides(doc: dict[str, Any], display: str) -> dict[str, Any]:
    """``doc`` with its ``x-overrides`` applied: every later step (and the emulator's schema copy) sees them."""
    try:
        return apply_overrides(doc)
    except OverrideError as exc:
        raise _Unusable(Problem(display, exc.pointer, exc.message)) from None


def _publishes_no_schema(doc: dict[str, Any]) -> bool:
    """A catalog entry for a model that publishes no schema: nothing to type, nothing wrong."""
    return ("schema" in doc and not doc["schema"]) or (
        "schema" not in doc and "input" not in doc and "output" not in doc and isinstance(doc.get("name"), str)
    )


@dataclass(frozen=True)
class _Halves:
    """A file's model id and its two schemas: as checked (what the catalog entry keeps) and self-contained."""

    model_id: str
    checked: dict[str, dict[str, Any]]  # "input" and "output", repaired and checked
    input: dict[str, Any]  # ... with local references moved into ``definitions`` or inlined
    output: dict[str, Any]
    definitions: dict[str, Any]


def _halves(doc: dict[str, Any], rel: str, display: str, warnings: list[str]) -> _Halves:
    """The model id and its two schemas; every problem of the file is raised together (the schema's form,
    the id, each half)."""
    schema, base, problems = _schema_part(doc, display)
    name = doc.get("name")
    model_id = name if isinstance(name, str) and "schema" in doc else rel[: -len(".json")]
    id_problem = _check_model_id(model_id)
    if id_problem:
        problems.append(Problem(display, "/name" if "name" in doc else "", id_problem))
    halves: dict[str, dict[str, Any]] = {}
    for key in ("input", "output"):
        part = _half(schema, key, base, display, warnings, problems)
        if part is not None:
            halves[key] = part
    if problems:
        raise _Unusable(*problems)
    definitions: dict[str, Any] = {}
    try:
        inp = _localise_refs(halves["input"], "input", definitions, f"{base}/input")
        out = _localise_refs(halves["output"], "output", definitions, f"{base}/output")
    except _RefError as exc:
        raise _Unusable(Problem(display, exc.pointer, exc.message)) from None
    return _Halves(model_id, halves, inp, out, definitions)


def _schema_part(doc: dict[str, Any], display: str) -> tuple[dict[str, Any], str, list[Problem]]:
    """``{input, output}`` and its JSON pointer: a catalog entry's ``schema``, or the bare file itself."""
    if "schema" in doc:
        schema = as_map(doc["schema"]) or {}
        problems = (
            [] if schema else [Problem(display, "/schema", "`schema` must be an object with `input` and `output`")]
        )
        return schema, "/schema", problems
    if "input" in doc or "output" in doc:
        return doc, "", []
    message = "missing `schema`: expected {name, schema: {input, output}} or a bare {input, output}"
    return {}, "", [Problem(display, "", message)]


def _half(
    schema: dict[str, Any], key: str, base: str, display: str, warnings: list[str], problems: list[Problem]
) -> dict[str, Any] | None:
    """One half (``input`` or ``output``), repaired and checked (its problems added to ``problems``)."""
    part = as_map(schema.get(key))
    if schema and part is None:
        problems.append(Problem(display, f"{base}/{key}", f"missing `{key}` schema (expected a JSON object)"))
        return None
    if part is None:
        return None
    if not part and not as_map(schema.get("output" if key == "input" else "input")):
        problems.append(Problem(display, f"{base}/{key}", f"`{key}` schema is empty"))
        return None
    if not part:
        warnings.append(f"{display}: {base}/{key}: the `{key}` schema is empty; it is typed as any JSON")
    fixed: dict[str, Any] = copy.deepcopy(part)
    _repair(fixed, f"{base}/{key}", display, warnings)
    problems.extend(_check_schema(fixed, f"{base}/{key}", display))
    return fixed


def _task(doc: dict[str, Any]) -> tuple[str, str]:
    """The task's name and description: a catalog ``{name, description}`` object, or a bare name."""
    raw = doc.get("task")
    task = as_map(raw) or {}
    name = str(task.get("name") or "") if task else (raw if isinstance(raw, str) else "")
    return name, str(task.get("description") or "")


def _description(doc: dict[str, Any]) -> str:
    raw = doc.get("description")
    return raw if isinstance(raw, str) else ""


def _properties(doc: dict[str, Any]) -> dict[str, Any]:
    """The catalog's ``[{property_id, value}]`` list as a mapping."""
    props: dict[str, Any] = {}
    for item in as_list(doc.get("properties")) or []:
        entry = as_map(item)
        if entry is not None and isinstance(entry.get("property_id"), str):
            props[str(entry["property_id"])] = entry.get("value")
    return props


def _catalog(doc: dict[str, Any], halves: _Halves) -> dict[str, Any]:
    """The catalog entry the emulator serves: the file's metadata in the catalog's form, the checked halves."""
    task, task_description = _task(doc)
    catalog: dict[str, Any] = {
        "name": halves.model_id,
        "description": _description(doc),
        "task": {"name": task, "description": task_description},
        "properties": [{"property_id": k, "value": v} for k, v in _properties(doc).items()],
        "schema": {"input": halves.checked["input"], "output": halves.checked["output"]},
    }
    realtime = as_map(doc.get("x-realtime"))
    if realtime is not None:  # our WebSocket section (codegen.realtime); the emulator reads it too
        catalog["x-realtime"] = copy.deepcopy(realtime)
    return catalog


def _check_model_id(model_id: str) -> str | None:
    """Refuse ids that could point outside the output folder; other odd characters stay data."""
    if model_id.startswith("/") or "\\" in model_id or re.match(r"^[A-Za-z]:", model_id):
        return f"model id {model_id!r} is an absolute path; it would escape the output folder"
    if any(part.strip() in ("", ".", "..") for part in model_id.split("/")):
        return f"model id {model_id!r} has an empty, '.' or '..' segment; it would escape the output folder"
    if _CONTROL.search(model_id):
        return f"model id {model_id!r} contains control characters"
    return None


_MAX_DEPTH = 200  # JSON nesting of the whole file
_MAX_SCHEMA_DEPTH = 100  # schemas inside schemas (the validator recurses several frames per level)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _too_deep(node: Any, pointer: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return pointer
    obj, arr = as_map(node), as_list(node)
    pairs = list(obj.items()) if obj is not None else [(str(i), v) for i, v in enumerate(arr or [])]
    for key, value in pairs:
        if isinstance(value, (dict, list)):
            hit = _too_deep(value, f"{pointer}/{_escape(key)}", depth + 1)
            if hit is not None:
                return hit
    return None


def _schema_too_deep(doc: dict[str, Any]) -> str | None:
    """The pointer of the first schema nested more than ``_MAX_SCHEMA_DEPTH`` subschemas deep."""
    schema = as_map(doc.get("schema")) if "schema" in doc else doc
    for key in ("input", "output"):
        base = f"/schema/{key}" if "schema" in doc else f"/{key}"
        for _node, where, depth in _walk_depth((schema or {}).get(key), base, 0):
            if depth > _MAX_SCHEMA_DEPTH:
                return where
    return None


def _has_surrogates(node: Any) -> bool:
    if isinstance(node, str):
        return any("\ud800" <= ch <= "\udfff" for ch in node)
    obj, arr = as_map(node), as_list(node)
    if obj is not None:
        return any(_has_surrogates(k) or _has_surrogates(v) for k, v in obj.items())
    return any(_has_surrogates(v) for v in arr or [])


def _replace_surrogates(node: Any) -> Any:
    if isinstance(node, str):
        return node.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    obj, arr = as_map(node), as_list(node)
    if obj is not None:
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in obj.items()}
    if arr is not None:
        return [_replace_surrogates(v) for v in arr]
    return node


def _walk(node: Any, pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Yield every schema object below ``node`` (not the values of ``properties`` maps themselves)."""
    for obj, where, _depth in _walk_depth(node, pointer, 0):
        yield obj, where


def _walk_depth(node: Any, pointer: str, depth: int) -> Iterator[tuple[dict[str, Any], str, int]]:
    """``_walk`` with how many subschemas deep each schema sits."""
    obj = as_map(node)
    if obj is None:
        return
    yield obj, pointer, depth
    for key, value in obj.items():
        child = f"{pointer}/{_escape(key)}"
        if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
            for name, sub in (as_map(value) or {}).items():
                yield from _walk_depth(sub, f"{child}/{_escape(name)}", depth + 1)
        elif key in ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"):
            subs = as_list(value)
            if subs is not None:
                for i, sub in enumerate(subs):
                    yield from _walk_depth(sub, f"{child}/{i}", depth + 1)
            else:
                yield from _walk_depth(value, child, depth + 1)
        elif key in ("oneOf", "anyOf", "allOf", "prefixItems"):
            for i, sub in enumerate(as_list(value) or []):
                yield from _walk_depth(sub, f"{child}/{i}", depth + 1)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _repair(schema: dict[str, Any], pointer: str, display: str, warnings: list[str]) -> None:
    """Fix publishing slips that have one obvious meaning, and say so (one warning each)."""
    for node, where in list(_walk(schema, pointer)):
        props = as_map(node.get("properties"))
        names = as_list(props.get("required")) if props is not None else None
        if props is not None and names is not None and all(isinstance(n, str) for n in names):
            del props["required"]
            own = [n for n in as_list(node.get("required")) or [] if isinstance(n, str)]
            node["required"] = [*own, *[n for n in names if n not in own]]
            warnings.append(
                f"{display}: {where}/properties/required: a `required` list sits inside `properties`; "
                f"read it as the object's required keys {names}"
            )
        for name, raw in (props or {}).items():
            sub = as_map(raw)
            flag = sub.get("required") if sub is not None else None
            if sub is not None and isinstance(flag, bool):
                # Draft 3 style: `"required": true` on the property itself.
                del sub["required"]
                own = [n for n in as_list(node.get("required")) or [] if isinstance(n, str)]
                if flag and name not in own:
                    node["required"] = [*own, name]
                warnings.append(
                    f"{display}: {where}/properties/{_escape(name)}/required: a boolean `required` on a property; "
                    f"read it as {'required' if flag else 'optional'}"
                )
        for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            flag = node.get(key)
            if isinstance(flag, bool):
                # Draft 4 style: a boolean that makes `minimum`/`maximum` exclusive.
                del node[key]
                if flag and isinstance(node.get(bound), (int, float)):
                    node[key] = node.pop(bound)
                warnings.append(f"{display}: {where}/{key}: a boolean (draft 4); read as the draft 7 form")
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as exc:
                del node["pattern"]
                warnings.append(
                    f"{display}: {where}/pattern: {pattern!r} is not a regular expression Python can use ({exc}); "
                    "it is not checked on the client"
                )


def _check_schema(schema: dict[str, Any], pointer: str, display: str) -> list[Problem]:
    problems: list[Problem] = []
    for node, where in _walk(schema, pointer):
        kind: Any = node.get("type")
        listed = as_list(kind)
        kinds: list[Any] = listed if listed is not None else ([kind] if kind is not None else [])
        if listed is not None and not listed:
            problems.append(Problem(display, f"{where}/type", "`type` is an empty list"))
        for k in kinds:
            if not isinstance(k, str) or k not in _SCHEMA_TYPES:
                problems.append(Problem(display, f"{where}/type", f"unknown type {k!r}"))
        ref = node.get("$ref")
        if ref is not None:
            if not isinstance(ref, str):
                problems.append(Problem(display, f"{where}/$ref", "$ref must be a string"))
            elif not ref.startswith("#"):
                problems.append(
                    Problem(display, f"{where}/$ref", f"remote $ref {ref!r} refused: generation never uses the network")
                )
        raw_props = node.get("properties")
        props = as_map(raw_props)
        if raw_props is not None and props is None:
            problems.append(Problem(display, f"{where}/properties", "`properties` must be an object"))
        for name, sub in (props or {}).items():
            if not isinstance(sub, (dict, bool)):
                problems.append(
                    Problem(display, f"{where}/properties/{_escape(name)}", "a property schema must be an object")
                )
    if problems:
        return problems
    try:
        Draft7Validator.check_schema(schema)
    except RecursionError:
        problems.append(Problem(display, pointer, "not usable: the schema is nested too deeply to check"))
    except SchemaError as exc:
        path = "".join(f"/{_escape(str(p))}" for p in exc.absolute_path)
        problems.append(Problem(display, f"{pointer}{path}", f"not a valid JSON Schema: {exc.message[:200]}"))
    return problems


class _RefError(Exception):
    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.message = message


def _localise_refs(schema: dict[str, Any], half: str, definitions: dict[str, Any], pointer: str) -> dict[str, Any]:
    """Return ``schema`` with every local ``$ref`` either moved into ``definitions`` or inlined.

    References to ``#/$defs/X`` or ``#/definitions/X`` become ``#/$defs/<half>_X`` entries of the shared
    ``definitions`` map (so input and output keep apart; names that clean up to the same text get a
    number); references to any other location are inlined, which works unless they are recursive.
    """
    root = schema
    local_defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        for name, sub in (as_map(root.get(key)) or {}).items():
            local_defs[f"#/{key}/{_escape(name)}"] = sub
    names: dict[str, str] = {}
    taken = set(definitions)
    for ref in local_defs:
        tail = ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        base = f"{half}_{re.sub(r'[^A-Za-z0-9_]', '_', tail) or 'Def'}"
        name, i = base, 2
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        names[ref] = name

    def resolve(ref: str, where: str) -> Any:
        node: Any = root
        for raw in ref[2:].split("/") if ref.startswith("#/") else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            obj, arr = as_map(node), as_list(node)
            if obj is not None and part in obj:
                node = obj[part]
            elif arr is not None and part.isdigit() and int(part) < len(arr):
                node = arr[int(part)]
            else:
                raise _RefError(f"{where}/$ref", f"dangling $ref {ref!r}: nothing at that location")
        return node

    def rewrite(node: Any, where: str, inlining: tuple[str, ...]) -> Any:
        arr = as_list(node)
        if arr is not None:
            return [rewrite(v, f"{where}/{i}", inlining) for i, v in enumerate(arr)]
        obj = as_map(node)
        if obj is None:
            return node
        ref = obj.get("$ref")
        if isinstance(ref, str):
            ref = "#" + unquote(ref[1:])  # a URI fragment: `%20` and friends are percent-encoded
            if ref in ("#", "#/"):
                raise _RefError(f"{where}/$ref", "recursive reference to the schema root is not supported")
            target = resolve(ref, where)
            drop = ("$ref", "$defs", "definitions") if obj is root else ("$ref",)
            siblings = {k: v for k, v in obj.items() if k not in drop}
            if ref in local_defs:
                name = names[ref]
                if name not in definitions:
                    definitions[name] = {}
                    definitions[name] = rewrite(target, f"{pointer}{ref[1:]}", ())
                new: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
                if siblings:
                    return {"allOf": [new], **rewrite(siblings, where, inlining)}
                return new
            if ref in inlining:
                raise _RefError(f"{where}/$ref", f"recursive $ref {ref!r} outside $defs is not supported")
            inlined = rewrite(target, f"{pointer}{ref[1:]}", (*inlining, ref))
            inlined_obj = as_map(inlined)
            if inlined_obj is not None:
                return {**inlined_obj, **rewrite(siblings, where, inlining)}
            return inlined
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key in ("$defs", "definitions") and obj is root:
                continue
            mapping = as_map(value)
            if key in ("properties", "patternProperties") and mapping is not None:
                out[key] = {n: rewrite(v, f"{where}/{key}/{_escape(n)}", inlining) for n, v in mapping.items()}
            elif key in ("enum", "const", "default", "examples", "required"):
                out[key] = value
            else:
                out[key] = rewrite(value, f"{where}/{_escape(key)}", inlining)
        return out

    result = as_map(rewrite(root, pointer, ()))
    # Definitions nobody referenced are still part of the published contract; keep them typed too.
    for ref, name in names.items():
        if name not in definitions:
            definitions[name] = {}
            definitions[name] = rewrite(resolve(ref, pointer), f"{pointer}{ref[1:]}", ())
    assert result is not None
    return result
