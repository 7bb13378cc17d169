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


def _load_file(path: Path, rel: str, display: str, result: LoadResult) -> ModelSource | None:
    if not path.is_file():
        what = "a dangling symbolic link" if path.is_symlink() and not path.exists() else "not a regular file"
        result.problems.append(Problem(display, "", f"cannot be read: {what}"))
        return None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        result.problems.append(Problem(display, "", f"cannot be read: {exc.strerror or exc}"))
        return None
    try:
        parsed: Any = json.loads(raw.decode("utf-8-sig"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        where = ""
        if isinstance(exc, json.JSONDecodeError):
            where = f" (line {exc.lineno}, column {exc.colno})"
        result.problems.append(Problem(display, "", f"not valid JSON{where}: {str(exc.args[0]).split(':')[0]}"))
        return None
    except RecursionError:
        result.problems.append(Problem(display, "", "not usable: the JSON is nested too deeply"))
        return None
    doc = as_map(parsed)
    if doc is None:
        result.problems.append(Problem(display, "", "expected a JSON object"))
        return None
    deep = _too_deep(doc, "", 0)
    if deep is not None:
        result.problems.append(Problem(display, deep, f"nested more than {_MAX_DEPTH} levels deep"))
        return None
    deep = _schema_too_deep(doc)
    if deep is not None:
        result.problems.append(Problem(display, deep, f"schemas nested more than {_MAX_SCHEMA_DEPTH} levels deep"))
        return None
    if _has_surrogates(doc):
        doc = as_map(_replace_surrogates(doc)) or {}
        result.warnings.append(f"{display}: lone UTF-16 surrogates in strings were replaced with U+FFFD")

    try:
        # Stated facts first: every later step (and the emulator's schema copy) sees the patched schema.
        doc = apply_overrides(doc)
    except OverrideError as exc:
        result.problems.append(Problem(display, exc.pointer, exc.message))
        return None

    problems: list[Problem] = []
    schema: dict[str, Any]
    no_schema = ("schema" in doc and not doc["schema"]) or (
        "schema" not in doc and "input" not in doc and "output" not in doc and isinstance(doc.get("name"), str)
    )
    if no_schema:
        # A catalog entry for a model that publishes no schema: nothing to type, nothing wrong.
        result.skipped.append(f"{display}: the model publishes no input/output schema; skipped")
        return None
    if "schema" in doc:
        base = "/schema"
        schema = as_map(doc["schema"]) or {}
        if not schema:
            problems.append(Problem(display, base, "`schema` must be an object with `input` and `output`"))
    elif "input" in doc or "output" in doc:
        schema, base = doc, ""
    else:
        problems.append(
            Problem(display, "", "missing `schema`: expected {name, schema: {input, output}} or a bare {input, output}")
        )
        schema, base = {}, ""

    name = doc.get("name")
    model_id = name if isinstance(name, str) and "schema" in doc else rel[: -len(".json")]
    id_problem = _check_model_id(model_id)
    if id_problem:
        problems.append(Problem(display, "/name" if "name" in doc else "", id_problem))

    halves: dict[str, dict[str, Any]] = {}
    for key in ("input", "output"):
        part = as_map(schema.get(key))
        if schema and part is None:
            problems.append(Problem(display, f"{base}/{key}", f"missing `{key}` schema (expected a JSON object)"))
            continue
        if part is not None:
            if not part and not as_map(schema.get("output" if key == "input" else "input")):
                problems.append(Problem(display, f"{base}/{key}", f"`{key}` schema is empty"))
                continue
            if not part:
                result.warnings.append(f"{display}: {base}/{key}: the `{key}` schema is empty; it is typed as any JSON")
            fixed: dict[str, Any] = copy.deepcopy(part)
            _repair(fixed, f"{base}/{key}", display, result.warnings)
            problems.extend(_check_schema(fixed, f"{base}/{key}", display))
            halves[key] = fixed
    if problems:
        result.problems.extend(problems)
        return None

    definitions: dict[str, Any] = {}
    try:
        inp = _localise_refs(halves["input"], "input", definitions, f"{base}/input")
        out = _localise_refs(halves["output"], "output", definitions, f"{base}/output")
    except _RefError as exc:
        result.problems.append(Problem(display, exc.pointer, exc.message))
        return None

    raw_task = doc.get("task")
    task = as_map(raw_task) or {}
    task_name = str(task.get("name") or "") if task else (raw_task if isinstance(raw_task, str) else "")
    task_desc = str(task.get("description") or "")
    raw_description = doc.get("description")
    description = raw_description if isinstance(raw_description, str) else ""
    props: dict[str, Any] = {}
    for item in as_list(doc.get("properties")) or []:
        entry = as_map(item)
        if entry is not None and isinstance(entry.get("property_id"), str):
            props[str(entry["property_id"])] = entry.get("value")
    catalog: dict[str, Any] = {
        "name": model_id,
        "description": description,
        "task": {"name": task_name, "description": task_desc},
        "properties": [{"property_id": k, "value": v} for k, v in props.items()],
        "schema": {"input": halves["input"], "output": halves["output"]},
    }
    realtime = as_map(doc.get("x-realtime"))
    if realtime is not None:  # our WebSocket section (codegen.realtime); the emulator reads it too
        catalog["x-realtime"] = copy.deepcopy(realtime)
    return ModelSource(
        file=display,
        rel=rel,
        label=f"{path.parents[len(Path(rel).parts) - 1].name}/{rel}",
        model_id=model_id,
        description=description,
        task=task_name,
        properties=props,
        input=inp,
        output=out,
        definitions=definitions,
        digest=hashlib.sha256(raw).hexdigest(),
        catalog=catalog,
    )


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
