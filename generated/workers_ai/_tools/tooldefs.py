"""Tools a model may call, from Python functions, msgspec Struct types or raw dicts.

A function's name, docstring and signature become the tool: the parameters are turned into a Struct
with ``msgspec.defstruct`` (types as annotated, ``Literal`` -> ``enum``, parameters with defaults not
required) whose JSON Schema ``msgspec.json.schema`` writes; the same Struct validates the arguments
the model sends before the function runs. Tools go out in whichever of the two request forms the
model's schema takes: ``{name, description, parameters}`` ("flat") or ``{type: "function",
function: {...}}`` ("openai").
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

import msgspec

from .._core.jsonview import as_list, as_object
from ..errors import ConfigurationError, InputValidationError
from .schema_refs import inline_refs

__all__ = ["ToolDef", "ToolForm", "ToolLike", "tool_def", "tools_payload"]

ToolLike: TypeAlias = Callable[..., Any] | Mapping[str, Any]
"""What ``tools=`` takes: a function, a msgspec Struct type (a class is callable) or a tool as a dict."""
ToolForm: TypeAlias = Literal["flat", "openai"]

_ARG_LINE = re.compile(r"^\s{2,8}(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")
_SECTIONS = ("args:", "arguments:", "parameters:", "params:")


@dataclass(frozen=True)
class ToolDef:
    """One tool: what is sent (name, description, parameters schema) and, for functions, how to run it."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any] | None = None
    arguments_type: type[msgspec.Struct] | None = None  # validates the model's arguments

    def request(self, form: ToolForm) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": self.name}
        if self.description:
            spec["description"] = self.description
        spec["parameters"] = self.parameters
        return {"type": "function", "function": spec} if form == "openai" else spec

    def convert(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function, validated against its signature (``msgspec.ValidationError``)."""
        if self.arguments_type is None:
            return dict(arguments)
        value = msgspec.convert(dict(arguments), self.arguments_type)
        return {f: getattr(value, f) for f in self.arguments_type.__struct_fields__}


def _doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    """(first paragraph, {parameter: description}) from a docstring with a Google-style ``Args:`` section."""
    summary = doc.strip().split("\n\n")[0]
    summary = "" if summary.strip().lower().startswith(_SECTIONS) else " ".join(summary.split())
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if not line.startswith((" ", "\t")) and stripped.endswith(":"):
            in_args, current = stripped.lower() in _SECTIONS, None
            continue
        if not in_args or not stripped:
            continue
        match = _ARG_LINE.match(line)
        if match:
            current = str(match.group(1))
            params[current] = str(match.group(2)).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}"
    return summary, params


def _arguments_struct(fn: Callable[..., Any], name: str) -> type[msgspec.Struct]:
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise ConfigurationError(f"tool {name!r}: cannot read its signature: {exc}") from None
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ConfigurationError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ConfigurationError(f"tool {name!r}: positional-only parameter {param.name!r} cannot take a keyword")
        tp = hints.get(param.name, Any)
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, tp))
        else:
            fields.append((param.name, tp, param.default))
    return msgspec.defstruct(f"{name}_arguments", fields, kw_only=True)


def _schema_of(tp: type[Any], name: str) -> dict[str, Any]:
    try:
        raw = msgspec.json.schema(tp)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"tool {name!r}: no JSON Schema for its parameters: {exc}") from None
    schema = inline_refs(raw)
    schema.pop("title", None)
    return schema


def _json_type(values: Sequence[Any]) -> str | None:
    kinds = {
        "boolean"
        if isinstance(v, bool)
        else "integer"
        if isinstance(v, int)
        else "number"
        if isinstance(v, float)
        else "string"
        if isinstance(v, str)
        else "null"
        if v is None
        else "other"
        for v in values
    }
    if kinds == {"integer", "number"}:
        return "number"
    return next(iter(kinds)) if len(kinds) == 1 and "other" not in kinds else None


def _typed_enums(props: dict[str, Any]) -> None:
    """``Literal`` parameters get ``type`` next to their ``enum`` (msgspec writes only the enum; the
    classic tool form wants a ``type`` per parameter)."""
    for value in props.values():
        prop = as_object(value)
        values = as_list(prop.get("enum")) if prop is not None else None
        if prop is not None and values and "type" not in prop:
            kind = _json_type(values)
            if kind is not None:
                prop["type"] = kind


def _from_function(fn: Callable[..., Any]) -> ToolDef:
    name = getattr(fn, "__name__", "")
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigurationError(f"tool {fn!r}: a function tool needs a name (a def, not a lambda or partial)")
    summary, arg_docs = _doc_parts(inspect.getdoc(fn) or "")
    struct = _arguments_struct(fn, name)
    params = _schema_of(struct, name)
    props = as_object(params.get("properties")) or {}
    _typed_enums(props)
    for key, text in arg_docs.items():
        prop = as_object(props.get(key))
        if prop is not None and text and "description" not in prop:
            prop["description"] = text
    params.setdefault("properties", {})
    return ToolDef(name, summary, params, fn, struct)


def _from_struct(tp: type[msgspec.Struct]) -> ToolDef:
    name = tp.__name__
    params = _schema_of(tp, name)
    _typed_enums(as_object(params.get("properties")) or {})
    description = str(params.pop("description", "") or "")
    return ToolDef(name, description, params, None, tp)


def _from_mapping(raw: Mapping[str, Any], model_id: str) -> ToolDef:
    obj: dict[str, Any] = dict(raw)
    fn = as_object(obj.get("function"))
    spec = fn if fn is not None else obj
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise InputValidationError(model_id, "$.tools[].name", "a tool needs a non-empty `name`")
    params = as_object(spec.get("parameters"))
    description = spec.get("description")
    return ToolDef(
        name,
        description if isinstance(description, str) else "",
        params if params is not None else {"type": "object", "properties": {}},
    )


def tool_def(tool: ToolLike | ToolDef, model_id: str = "") -> ToolDef:
    """The :class:`ToolDef` for a function, a Struct type or a tool dict (either request form); errors name
    ``model_id``."""
    if isinstance(tool, ToolDef):
        return tool
    value: object = tool
    if isinstance(value, Mapping):
        return _from_mapping(cast("Mapping[str, Any]", value), model_id)
    if isinstance(value, type) and issubclass(value, msgspec.Struct):
        return _from_struct(value)
    if not isinstance(value, type) and callable(value):
        return _from_function(value)
    raise ConfigurationError(
        f"tools: expected a function, a msgspec Struct type or a dict, got {type(tool).__name__}: {tool!r}"
    )


def tools_payload(tools: Any, form: ToolForm) -> Any:
    """``tools`` as the request sends them: each function or Struct type in the model's ``form``; a dict
    or the model's own Tool struct as given (the request check says whether the model takes it, in
    whichever of its forms). ``UNSET`` stays."""
    value: object = tools
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return tools
    out: list[Any] = []
    for item in cast("Sequence[object]", value):
        if isinstance(item, (msgspec.Struct, Mapping)):
            out.append(item)
        else:
            out.append(tool_def(cast("ToolLike", item)).request(form))
    return out
