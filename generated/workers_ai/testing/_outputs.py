"""What a model "computes": a schema-valid reply with task-specific realism, deterministic per input.

Each task builds a *hint*, the reply a real model might give (embedding vectors from the words of the
text, a reply echoing the prompt, a transcript, a real PNG...). The synthesizer then keeps whatever
part of the hint fits the model's output schema and fills in the rest, so realism never costs
validity. Binary outputs are real files of the declared type; streams are lists of SSE payloads.
What text-generation models say (text, tool calls, JSON mode) is in :mod:`._textgen`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import msgspec

from .._core.jsonview import as_list, as_object
from ._catalog import ModelSpec
from ._embeddings import contexts_of, texts_of
from ._media import media_for
from ._natives import decisions, extractions
from ._openai_shapes import PADDING, chat_chunks, chat_completion, pieces, responses_object
from ._schema_keywords import merge_schemas
from ._synth import MISSING
from ._task_replies import size_option, speech_seconds, task_hint
from ._textgen import Generation, count_tokens, generate, reply_text

__all__ = ["Branch", "Result", "branches", "run_model", "seed_for"]

_JSON = "application/json"
_SSE = "text/event-stream"


@dataclass
class Result:
    """A model's reply: JSON (enveloped later), raw bytes, or a list of SSE payloads."""

    kind: Literal["json", "binary", "stream"]
    value: Any = None
    data: bytes = b""
    content_type: str = _JSON
    events: list[Any] = field(default_factory=lambda: [])
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class Branch:
    """One alternative of an output schema: its schema (relaxed), content type and kind."""

    schema: Any
    content_type: str
    kind: Literal["json", "binary", "stream", "async"]


def seed_for(model_id: str, payload: Any) -> str:
    """A stable seed for a model and its input (``stream`` and null fields left out: streamed and whole
    replies agree, and ``"max_tokens": null`` answers as leaving it out does)."""
    h = hashlib.sha256(model_id.encode())
    if isinstance(payload, (bytes, bytearray)):
        h.update(b"\x00raw\x00" + bytes(payload))
    else:
        data = as_object(payload)
        if data is not None:
            payload = {k: v for k, v in data.items() if k != "stream" and v is not None}  # null = left out
        try:
            h.update(msgspec.json.encode(payload, order="sorted"))
        except (TypeError, msgspec.EncodeError):
            h.update(repr(payload).encode())
    return h.hexdigest()


def branches(spec: ModelSpec) -> list[Branch]:
    """The output schema's top-level alternatives, classified."""
    root = as_object(spec.outputs.root) or {}
    alts = as_list(root.get("anyOf"))
    if alts is None:
        parts = [root]
    else:
        base = {k: v for k, v in root.items() if k not in ("anyOf", "title", "description")}
        parts = [merge_schemas(base, b) for b in (as_object(a) for a in alts) if b is not None]
    out: list[Branch] = []
    for part in parts:
        ct = part.get("contentType")
        binary = part.get("type") == "string" and part.get("format") == "binary"
        content_type = ct if isinstance(ct, str) else ("application/octet-stream" if binary else _JSON)
        props = as_object(part.get("properties"))
        kind: Literal["json", "binary", "stream", "async"]
        if content_type.split(";")[0].strip().lower() == _SSE:
            kind = "stream"
        elif binary:
            kind = "binary"
        elif props is not None and set(props) == {"request_id"}:
            kind = "async"
        else:
            kind = "json"
        out.append(Branch(part, content_type, kind))
    return out


# --------------------------------------------------------------------------- text generation shapes


def _chat_shaped(out: list[Branch]) -> bool:
    for b in out:
        props = as_object(as_object(b.schema) and cast("dict[str, Any]", b.schema).get("properties"))
        if b.kind == "json" and props is not None and "choices" in props and "response" not in props:
            return True
    return False


def _responses_branch(out: list[Branch]) -> bool:
    for b in out:
        props = as_object((as_object(b.schema) or {}).get("properties")) or {}
        if b.kind == "json" and "output" in props and "created_at" in props:
            return True
    return False


def _text_completion_branch(out: list[Branch]) -> bool:
    for b in out:
        s = as_object(b.schema) or {}
        title = s.get("title")
        if b.kind == "json" and isinstance(title, str) and "text completion" in title.lower():
            return True
    return False


# --------------------------------------------------------------------------- text generation


def _is_text_generation(spec: ModelSpec, p: Mapping[str, Any] | None, out: list[Branch]) -> bool:
    if p is None:
        return False
    if spec.task_name.lower() == "text generation":
        return True
    return any(k in p for k in ("prompt", "messages")) and (_chat_shaped(out) or any(b.kind == "stream" for b in out))


def _legacy_hint(gen: Generation) -> dict[str, Any]:
    hint: dict[str, Any] = {"response": gen.text if gen.structured is MISSING else gen.structured, "usage": gen.usage}
    if gen.tool is not None:
        hint["tool_calls"] = [{"name": gen.tool[0], "arguments": gen.tool[1]}]
    return hint


def _chat_hint(spec: ModelSpec, p: Mapping[str, Any], gen: Generation, seed: str, out: list[Branch]) -> dict[str, Any]:
    text_completion = "messages" not in p and _text_completion_branch(out)
    # the published chat output schemas type `content` as a required string: "" where OpenAI sends null
    return chat_completion(spec.model_id, gen, seed, text_completion=text_completion, tool_content="")


def _stream_events(spec: ModelSpec, gen: Generation, seed: str, chat: bool) -> list[Any]:
    events: list[Any] = []
    if chat:
        events.extend(chat_chunks(spec.model_id, gen, seed))
    else:
        for i, piece in enumerate(pieces(reply_text(gen))):
            events.append({"response": piece, "p": PADDING[: 4 + (i * 7) % 20]})
        if gen.tool is not None:
            events.append({"response": "", "tool_calls": [{"name": gen.tool[0], "arguments": gen.tool[1]}]})
    events.append({"response": "", "usage": gen.usage})
    return events


# --------------------------------------------------------------------------- entry point


def _json_props(out: list[Branch]) -> set[str]:
    """The keys the JSON outputs of a model declare (a hint for which task's reply fits)."""
    json_props: set[str] = set()
    for b in out:
        props = as_object((as_object(b.schema) or {}).get("properties"))
        if b.kind == "json" and props is not None:
            json_props |= set(props)
    return json_props


def _json_schema(out: list[Branch]) -> Any:
    json_branches = [b.schema for b in out if b.kind == "json"]
    if not json_branches:
        return MISSING
    return json_branches[0] if len(json_branches) == 1 else {"anyOf": json_branches}


def run_model(
    spec: ModelSpec,
    payload: Any,
    *,
    raw: bytes | None = None,
    allow_stream: bool = True,
    check: bool = False,
) -> Result:
    """Compute the reply to ``payload`` (a JSON value) or ``raw`` (a binary body).

    ``allow_stream=False`` (batch items) never streams. ``check`` validates JSON results against the
    output schema and raises ``ValueError`` on a mismatch (a bug in the emulator, never in the caller).
    """
    p = as_object(payload)
    seed = seed_for(spec.model_id, raw if raw is not None else payload)
    out = branches(spec)
    kinds = {b.kind for b in out}
    wants_stream = p is not None and p.get("stream") is True and allow_stream
    only_stream = kinds <= {"stream", "async"} and "stream" in kinds
    synth = spec.outputs
    structured: Any = MISSING
    hint: Any
    if p is not None and "state" in p and ("questions" in p or "fields" in p):
        hint = decisions(p, seed) if "questions" in p else extractions(p, seed)
    elif _is_text_generation(spec, p, out):
        assert p is not None
        gen = generate(p, seed)
        structured = gen.structured
        chat = _chat_shaped(out)
        if ("stream" in kinds and (wants_stream or only_stream)) and allow_stream:
            return Result("stream", events=_stream_events(spec, gen, seed, chat), content_type=_SSE, usage=gen.usage)
        hint = _chat_hint(spec, p, gen, seed, out) if chat else _legacy_hint(gen)
        if "input" in p and _responses_branch(out):
            hint = responses_object(spec.model_id, gen, seed)  # a Responses-API request gets that shape
    else:
        hint = task_hint(spec, p, raw, seed, _json_props(out))
        if only_stream and allow_stream:
            return Result("stream", events=[{"response": "", "p": "a"}], content_type=_SSE)
    schema = _json_schema(out)
    value: Any
    if schema is not MISSING:
        value = synth.generate(schema, seed=seed, hint=hint, optional=0.5)
        if check:
            problem = synth.validator.first_error(value)
            if problem is not None:
                raise ValueError(f"{spec.model_id}: emulated output does not fit the output schema at {problem}")
        shaped = as_object(value)
        if structured is not MISSING and shaped is not None and "response" in shaped:
            # JSON mode: the API answers `response` as the object itself, though the published output
            # schemas type it as a string; the schema check above ran on the schema's own shape.
            shaped["response"] = structured
        usage = as_object(as_object(value) and cast("dict[str, Any]", value).get("usage"))
        return Result("json", value=value, usage=_int_usage(usage) if usage is not None else _input_usage(p))
    binary = [b for b in out if b.kind == "binary"]
    if binary:
        ct = binary[0].content_type
        width, height = size_option(p)
        data = media_for(ct, seed=seed, width=width, height=height, seconds=speech_seconds(p))
        return Result("binary", data=data, content_type=ct)
    if as_object(spec.output_schema) or spec.output_schema is True:
        value = synth.generate(seed=seed, hint=hint, optional=0.5)
    else:
        value = {} if hint is MISSING else hint
    return Result("json", value=value)


def _input_usage(p: Mapping[str, Any] | None) -> dict[str, int] | None:
    """Token counts of the text a non-generative model read (embeddings, classification, ...)."""
    if p is None:
        return None
    texts = [*texts_of(p.get("text")), *contexts_of(p)]
    for key in ("query", "prompt", "input_text"):
        value = p.get(key)
        if isinstance(value, str):
            texts.append(value)
    tokens = sum(count_tokens(t) for t in texts)
    return {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}


def _int_usage(usage: dict[str, Any] | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {k: int(v) for k, v in usage.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
