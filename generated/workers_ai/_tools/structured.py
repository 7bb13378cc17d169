"""Structured outputs: ``response_format=`` a type, the reply parsed into it.

``response_format=Weather`` (a msgspec Struct, a dataclass or a TypedDict) sends Workers AI's JSON
mode, ``{"type": "json_schema", "json_schema": <schema>}`` with the schema ``msgspec.json.schema``
writes for the type (references inlined), and the reply comes back as :class:`Parsed`: ``.parsed``
is a ``Weather``, ``.output`` the model's usual output struct (its ``response`` holding the object
as JSON text), ``.raw`` the result as received. JSON mode does not stream; asking for both is refused
before anything is sent.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, is_typeddict

import msgspec

from .._core.decode import split_error
from .._core.error_replies import DECODE_ERRORS
from .._core.jsonview import as_list, as_object
from ..errors import ConfigurationError, InputValidationError, ResponseDecodeError
from .schema_refs import inline_refs

__all__ = ["Parsed", "check_no_stream", "is_schema_type", "json_payload", "response_format_payload", "textual"]

OutT = TypeVar("OutT")
T = TypeVar("T")


class Parsed(Generic[OutT, T]):
    """A JSON-mode reply: ``parsed`` (the object, as the requested type), ``output`` (the model's typed
    output, with the object as JSON text in ``response``) and ``raw`` (the decoded result as sent).

    Attributes of the output read through: ``reply.usage`` is ``reply.output.usage``.
    """

    __slots__ = ("output", "parsed", "raw")

    def __init__(self, parsed: T, output: OutT, raw: Any) -> None:
        self.parsed = parsed
        self.output = output
        self.raw = raw

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.output, name)

    def __repr__(self) -> str:
        return f"Parsed(parsed={self.parsed!r}, output={self.output!r})"


def is_schema_type(value: object) -> bool:
    """Whether ``response_format`` names a type to parse into (rather than being the request's dict form)."""
    if not isinstance(value, type):
        return False
    kind: type[Any] = value
    import dataclasses  # here, not at import: only JSON-mode calls need it

    return issubclass(kind, msgspec.Struct) or dataclasses.is_dataclass(kind) or is_typeddict(kind)


def response_format_payload(value: Any, model_id: str) -> Any:
    """The wire form of ``response_format``: a type becomes ``{"type": "json_schema", "json_schema": S}``;
    dicts and the model's own struct are sent as given; ``UNSET`` stays."""
    if not isinstance(value, type):
        return value
    if not is_schema_type(value):
        raise InputValidationError(
            model_id, "$.response_format", f"expected a msgspec Struct, dataclass or TypedDict type, got {value!r}"
        )
    try:
        schema = msgspec.json.schema(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{model_id}: no JSON Schema for {value.__name__}: {exc}") from None
    inlined = inline_refs(schema)
    inlined.pop("title", None)
    return {"type": "json_schema", "json_schema": inlined}


def check_no_stream(model_id: str, response_format: Any) -> None:
    """JSON mode does not stream (the API refuses it); say so before anything is sent."""
    if response_format is not None and response_format is not msgspec.UNSET:
        raise InputValidationError(
            model_id, "$.response_format", "JSON mode (response_format) cannot be combined with streaming"
        )


def _decoded(text: str, model_id: str | None, body: bytes) -> Any:
    try:
        return msgspec.json.decode(text)
    except DECODE_ERRORS:
        raise ResponseDecodeError(
            f"{model_id}: the JSON-mode reply is not JSON: {text[:200]!r}", model_id=model_id, body=body
        ) from None


def json_payload(value: Any, model_id: str | None, body: bytes) -> Any:
    """The object a JSON-mode result holds: ``response`` (an object, or JSON text) or OpenAI's
    ``choices[0].message.content``."""
    obj = as_object(value)
    if obj is None:
        return value
    if "response" in obj:
        inner = obj["response"]
        return _decoded(inner, model_id, body) if isinstance(inner, str) else inner
    choices = as_list(obj.get("choices"))
    if choices:
        message = as_object((as_object(choices[0]) or {}).get("message")) or {}
        content = message.get("content")
        if isinstance(content, str):
            return _decoded(content, model_id, body)
    return value


def textual(value: Any) -> Any:
    """The result with a JSON-mode object in ``response`` turned into JSON text, so the model's usual
    output struct (``response: str``) still decodes it."""
    obj = as_object(value)
    if obj is None or "response" not in obj or isinstance(obj["response"], str):
        return value
    return {**obj, "response": msgspec.json.encode(obj["response"]).decode()}


def parse_into(payload: Any, target: type[T], model_id: str | None, status: int, body: bytes) -> T:
    """``payload`` converted to ``target``; a mismatch raises ``ResponseDecodeError`` carrying the raw reply."""
    try:
        return msgspec.convert(payload, target, strict=False)
    except msgspec.ValidationError as exc:
        path, message = split_error(exc)
        raise ResponseDecodeError(
            f"{model_id}: the JSON-mode reply does not fit {getattr(target, '__name__', target)} at {path}: {message}",
            status=status,
            model_id=model_id,
            body=body,
        ) from None
