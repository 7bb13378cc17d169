"""``POST …/ai/run/{model}``: read the body (JSON or raw bytes), validate it, answer with the model's
output as JSON, raw bytes or a server-sent event stream."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from .._core.jsonview import as_list, as_object
from ._catalog import ModelSpec
from ._faults import Fault
from ._multipart import parse_form
from ._outputs import run_model
from ._records import RecordedRequest
from ._reply import SSE, APIError, Reply, json_reply
from ._textgen import JSON_MODE_UNMET, JsonModeUnmet

__all__ = ["MAX_DEPTH", "Input", "answer", "bad_input", "decode_json", "read_input", "sse_reply"]

MAX_DEPTH = 100
"""JSON bodies nested deeper than this are refused (400/5006) before anything walks them."""


@dataclass
class Input:
    """A run request's body: decoded JSON, or the raw bytes of a binary-input model."""

    payload: Any
    raw: bytes | None


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether the decoded JSON ``value`` nests objects and arrays more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        obj = as_object(item)
        children: list[Any] = list(obj.values()) if obj is not None else (as_list(item) or [])
        stack.extend(
            (child, depth + 1) for child in children if as_object(child) is not None or as_list(child) is not None
        )
    return False


def bad_input(message: str) -> APIError:
    """400/5006, the API's answer to a body that does not fit the model's input schema."""
    return APIError(400, 5006, f"AiError: Bad input: {message}")


def decode_json(body: bytes) -> dict[str, Any]:
    """A JSON-only route's body as an object; 400/5006 when it is not one (or nests too deep)."""
    try:
        payload: Any = msgspec.json.decode(body) if body.strip() else {}
    except RecursionError:
        raise bad_input(f"/: the JSON is nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, msgspec.DecodeError):
        raise bad_input("/: the body is not valid JSON") from None
    obj = as_object(payload)
    if obj is None:
        raise bad_input("/: the body must be a JSON object")
    if _nested_deeper_than(obj, MAX_DEPTH):
        raise bad_input(f"/: the JSON is nested deeper than {MAX_DEPTH} levels")
    return obj


def read_input(rec: RecordedRequest, spec: ModelSpec) -> Input:
    """The body as JSON, or as raw bytes for a model with a binary input; 400/5006 when it is neither.

    Invalid UTF-8 and JSON nested deeper than :data:`MAX_DEPTH` are 400/5006 like any other bad input
    (invalid UTF-8 goes to a binary-input model as bytes unless the body says it is JSON).
    """
    content_type = rec.headers.get("content-type", "").split(";")[0].strip().lower()
    binary_type = content_type == "application/octet-stream" or content_type.startswith(("image/", "audio/", "video/"))
    raw_field = _raw_body_field(spec)
    if raw_field is not None and binary_type:
        return Input(_raw_body_payload(spec, raw_field, rec), None)
    form = _form_branch(spec)
    if form is not None and content_type == "multipart/form-data":
        return Input(_form_payload(form, rec), None)
    payload: Any = {}
    if rec.body.strip() and not binary_type:
        try:
            payload = msgspec.json.decode(rec.body)
        except RecursionError:
            raise bad_input(f"/: the JSON is nested deeper than {MAX_DEPTH} levels") from None
        except (UnicodeDecodeError, msgspec.DecodeError):
            # msgspec < 0.23 raises UnicodeDecodeError for invalid UTF-8, 0.23 a DecodeError: ask the bytes.
            if not _is_utf8(rec.body) and (not spec.accepts_binary or content_type == "application/json"):
                raise bad_input("/: the body is not valid UTF-8") from None
            binary_type = True
        if isinstance(payload, (dict, list)) and _nested_deeper_than(payload, MAX_DEPTH):
            raise bad_input(f"/: the JSON is nested deeper than {MAX_DEPTH} levels")
    if binary_type:
        if not spec.accepts_binary:
            raise bad_input(f"/: the body is not JSON, and {spec.model_id} takes no binary input")
        return Input(_raw_options(rec, content_type), rec.body)
    return Input(payload, None)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _raw_body_field(spec: ModelSpec) -> str | None:
    """The input field a model takes as the raw REST body (``x-raw-body``, e.g. nova-3's audio)."""
    schema = as_object(spec.input_schema) or {}
    name = schema.get("x-raw-body")
    return name if isinstance(name, str) else None


def _form_branch(spec: ModelSpec) -> dict[str, Any] | None:
    """The input branch a model takes as a ``multipart/form-data`` body (FLUX.2), if it has one."""
    schema = as_object(spec.input_schema) or {}
    for branch in [schema, *(as_list(schema.get("oneOf")) or [])]:
        obj = as_object(branch)
        if obj is not None and str(obj.get("contentType") or "").startswith("multipart/form-data"):
            return obj
    return None


def _form_payload(branch: dict[str, Any], rec: RecordedRequest) -> dict[str, Any]:
    """The input a form body stands for: text parts typed by their property's schema, file parts as
    base64 text (so the schema's binary strings validate); 400/5006 for a body that is not a form."""
    import base64

    try:
        parts = parse_form(rec.headers.get("content-type", ""), rec.body)
    except ValueError as exc:
        raise bad_input(f"/: {exc}") from None
    props = as_object(branch.get("properties")) or {}
    payload: dict[str, Any] = {}
    for part in parts:
        prop = as_object(props.get(part.name)) or {}
        if prop.get("format") == "binary" or part.filename is not None:
            payload[part.name] = base64.b64encode(part.data).decode("ascii")
        else:
            payload[part.name] = _typed(prop.get("type"), part.text())
    return payload


def _typed(kind: Any, text: str) -> Any:
    """A form or query value as its property's JSON type; left as sent when it does not parse (the
    schema check then names the field)."""
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text
    return text


def _raw_body_payload(spec: ModelSpec, field: str, rec: RecordedRequest) -> dict[str, Any]:
    """The input a raw body plus query parameters stand for: the body as the field (base64 text, so the
    schema's binary string validates) and each query parameter typed by its property's schema."""
    import base64
    from urllib.parse import parse_qsl

    props = as_object((as_object(spec.input_schema) or {}).get("properties")) or {}
    payload: dict[str, Any] = {field: base64.b64encode(rec.body).decode("ascii")}
    for key, text in parse_qsl(rec.query, keep_blank_values=True):
        payload[key] = _typed((as_object(props.get(key)) or {}).get("type"), text)
    return payload


def _raw_options(rec: RecordedRequest, content_type: str) -> dict[str, Any]:
    """What a raw body's request says besides the bytes: query options (``?language=en``, how the API
    takes a raw-audio model's options) and a multipart body's text fields (``prompt``, ``width``)."""
    options: dict[str, Any] = {k: v for k, v in rec.params.items() if k != "queueRequest"}
    if content_type == "multipart/form-data":
        try:
            parts = parse_form(rec.headers.get("content-type", ""), rec.body)
        except ValueError as exc:
            raise bad_input(f"/: {exc}") from None
        for part in parts:
            if part.filename is None and part.content_type in (None, "text/plain"):
                text = part.text()
                options[part.name] = int(text) if text.isdigit() else text
    return options


def answer(
    spec: ModelSpec, body: Input, *, check: bool, stream_interval: float, stream_fault: Callable[[], Fault | None]
) -> Reply:
    """Validate and run one (non-batch) input; a streamed reply asks ``stream_fault`` which fault it meets."""
    if body.raw is None:
        problem = spec.inputs.validator.first_error(body.payload)
        if problem is not None:
            raise bad_input(problem)
    try:
        result = run_model(spec, body.payload, raw=body.raw, check=check)
    except JsonModeUnmet:
        raise APIError(400, 3030, JSON_MODE_UNMET) from None
    if result.kind == "stream":
        return sse_reply(result.events, stream_fault(), stream_interval)
    if result.kind == "binary":
        return Reply(200, [("content-type", result.content_type)], result.data)
    return json_reply(result.value)


def sse_reply(payloads: list[Any], fault: Fault | None, interval: float) -> Reply:
    """Server-sent events, one ``data:`` line per payload, then ``data: [DONE]`` (unless ``fault`` breaks it)."""
    events = [msgspec.json.encode(e) for e in payloads]
    if fault is not None and fault.name == "stream_error":
        keep = max(1, len(events) // 2)
        error = {"errors": [{"code": fault.code, "message": fault.message or ""}]}
        events = [*events[:keep], msgspec.json.encode(error)]
    chunks = [b"data: " + e + b"\n\n" for e in events]
    if fault is None or fault.name not in ("stream_error", "stream_no_done"):
        chunks[-1] += b"data: [DONE]\n\n"
    reply = Reply(200, [("content-type", SSE), ("cache-control", "no-cache")], chunks=chunks, chunk_interval=interval)
    if fault is not None and fault.name == "stream_error":
        reply.close = True
    return reply
