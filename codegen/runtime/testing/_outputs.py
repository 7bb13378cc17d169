"""What a model "computes": a schema-valid reply with task-specific realism, deterministic per input.

Each task builds a *hint*, the reply a real model might give (embedding vectors from the words of the
text, a reply echoing the prompt, a transcript, a real PNG...). The synthesizer then keeps whatever
part of the hint fits the model's output schema and fills in the rest, so realism never costs
validity. Binary outputs are real files of the declared type; streams are lists of SSE payloads.
What text-generation models say (text, tool calls, JSON mode) is in :mod:`._textgen`.
"""

from __future__ import annotations

import base64
import hashlib
import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import msgspec

from .._core.jsonview import as_list, as_object
from ._catalog import ModelSpec
from ._media import media_for, mp3, png
from ._synth import MISSING, merge_schemas
from ._textgen import (
    PADDING,
    Generation,
    chat_chunks,
    chat_completion,
    count_tokens,
    generate,
    pieces,
    reply_text,
    words,
)

__all__ = ["Branch", "Result", "branches", "embed", "embedding_dim", "run_model", "seed_for"]

_JSON = "application/json"
_SSE = "text/event-stream"
_DIMENSIONS = {"bge-base": 768, "bge-large": 1024, "bge-m3": 1024, "bge-small": 384}
_POSITIVE = frozenset(
    """good great love loved lovely excellent happy wonderful amazing best like enjoy enjoyed nice fantastic
    perfect glad""".split()
)
_NEGATIVE = frozenset(
    "bad terrible hate hated awful worst poor sad horrible boring broken angry ugly disappointing".split()
)
_LABELS = (
    "tabby cat|golden retriever|mountain bike|espresso|lighthouse|sunflower|"
    "sports car|teapot|pizza|laptop|red fox|sailboat"
).split("|")
_STOPWORDS = frozenset(
    """a an the is are was were be been of to in on at by for with about as and or but not this that these those
    it its i you he she we they me my your our their what which who how tell please do does did can""".split()
)
_OBJECTS = ("person", "dog", "cat", "car", "bicycle", "chair", "cup", "bird")


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
    """A stable seed for a model and its input (``stream`` left out: streamed and whole replies agree)."""
    h = hashlib.sha256(model_id.encode())
    if isinstance(payload, (bytes, bytearray)):
        h.update(b"\x00raw\x00" + bytes(payload))
    else:
        data = as_object(payload)
        if data is not None:
            payload = {k: v for k, v in data.items() if k != "stream"}
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


def _text_completion_branch(out: list[Branch]) -> bool:
    for b in out:
        s = as_object(b.schema) or {}
        title = s.get("title")
        if b.kind == "json" and isinstance(title, str) and "text completion" in title.lower():
            return True
    return False


# --------------------------------------------------------------------------- embeddings


def embedding_dim(spec: ModelSpec) -> int:
    name = spec.model_id.lower()
    for key, dim in _DIMENSIONS.items():
        if key in name:
            return dim
    value = spec.properties.get("output_dimensions")
    try:
        dim = int(str(value))
    except ValueError:
        return 768
    return dim if 0 < dim <= 16384 else 768


def embed(text: str, dim: int) -> list[float]:
    """A unit vector from the text's words (hashed into the vector): shared words mean higher cosine."""
    vec = [0.0] * dim
    tokens = words(text) or [text.strip().lower() or "<empty>"]
    for tok in tokens:
        weight = 0.25 if tok in _STOPWORDS else 1.0  # topic words, not glue words, decide similarity
        digest = hashlib.sha256(tok.encode()).digest()
        for j in range(4):
            idx = int.from_bytes(digest[4 * j : 4 * j + 4], "big") % dim
            sign = 1.0 if digest[16 + j] & 1 else -1.0
            vec[idx] += weight * sign * (1.0 if j == 0 else 0.5)
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [round(v / norm, 6) for v in vec]


def _cosine(a: list[float], b: list[float]) -> float:
    return round(sum(x * y for x, y in zip(a, b, strict=True)), 6)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in as_list(value) or [] if isinstance(v, str)]


def _contexts(p: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for c in as_list(p.get("contexts")) or []:
        ctx = as_object(c)
        if ctx is not None and isinstance(ctx.get("text"), str):
            out.append(cast(str, ctx["text"]))
        elif isinstance(c, str):
            out.append(c)
    return out


def _rank(p: Mapping[str, Any], dim: int) -> dict[str, Any]:
    query = embed(str(p.get("query") or ""), dim)
    scored = [{"id": i, "score": _cosine(query, embed(t, dim))} for i, t in enumerate(_contexts(p))]
    scored.sort(key=lambda item: (-float(item["score"]), int(item["id"])))
    top_k = p.get("top_k")
    if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k > 0:
        scored = scored[:top_k]
    return {"response": scored}


def _embedding(spec: ModelSpec, p: Mapping[str, Any]) -> dict[str, Any]:
    dim = embedding_dim(spec)
    pooling = p.get("pooling") if p.get("pooling") in ("mean", "cls") else "mean"
    if "contexts" in p and "text" not in p:
        vectors = [embed(t, dim) for t in _contexts(p)]
        return {"response": vectors, "shape": [len(vectors), dim], "pooling": pooling}
    vectors = [embed(t, dim) for t in _texts(p.get("text"))]
    return {"shape": [len(vectors), dim], "data": vectors, "pooling": pooling}


# --------------------------------------------------------------------------- other tasks


def _binary_input(p: Mapping[str, Any] | None, raw: bytes | None, *keys: str) -> bytes:
    if raw is not None:
        return raw
    for key in keys:
        value = (p or {}).get(key)
        if isinstance(value, str):
            try:
                return base64.b64decode(value.split(",", 1)[-1], validate=False)
            except ValueError:
                return value.encode()
        arr = as_list(value)
        if arr is not None:
            return bytes(v & 0xFF for v in arr if isinstance(v, int) and not isinstance(v, bool))
    return b""


def _transcript(p: Mapping[str, Any] | None, raw: bytes | None, seed: str) -> dict[str, Any]:
    audio = _binary_input(p, raw, "audio")
    rng = random.Random(seed)
    count = max(3, min(40, len(audio) // 16000 * 2 + 3))
    spoken = ["this", "is", "an", "emulated", "transcript"] + [rng.choice(_LABELS).split()[-1] for _ in range(count)]
    spoken = spoken[: max(5, count)]
    text = " ".join(spoken)
    timed = [{"word": w, "start": round(i * 0.4, 2), "end": round(i * 0.4 + 0.35, 2)} for i, w in enumerate(spoken)]
    duration = round(len(spoken) * 0.4, 2)
    vtt = f"WEBVTT\n\n00:00.000 --> 00:{duration:06.3f}\n{text}\n"
    language = (p or {}).get("language")
    return {
        "text": text,
        "word_count": len(spoken),
        "words": timed,
        "vtt": vtt,
        "segments": [
            {
                "start": 0.0,
                "end": duration,
                "text": text,
                "temperature": 0.0,
                "avg_logprob": -0.2,
                "compression_ratio": 1.2,
                "no_speech_prob": 0.01,
                "words": timed,
            }
        ],
        "transcription_info": {
            "language": language if isinstance(language, str) else "en",
            "language_probability": 0.98,
            "duration": duration,
            "duration_after_vad": duration,
        },
    }


def _classify(text: str) -> list[dict[str, Any]]:
    ws = words(text)
    score = sum(1 for w in ws if w in _POSITIVE) - sum(1 for w in ws if w in _NEGATIVE)
    bias = (int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 0xFFFF - 0.5) * 0.2
    positive = round(1 / (1 + math.exp(-(1.5 * score + bias))), 6)
    labels = [{"label": "POSITIVE", "score": positive}, {"label": "NEGATIVE", "score": round(1 - positive, 6)}]
    labels.sort(key=lambda item: -cast(float, item["score"]))
    return labels


def _image_labels(seed: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    picked = rng.sample(_LABELS, 5)
    weights = sorted((rng.random() for _ in picked), reverse=True)
    total = sum(weights) * 1.25
    return [{"label": label, "score": round(w / total, 6)} for label, w in zip(picked, weights, strict=True)]


def _detections(seed: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 3)):
        x, y = rng.randint(0, 300), rng.randint(0, 300)
        box = {"xmin": x, "ymin": y, "xmax": x + rng.randint(20, 200), "ymax": y + rng.randint(20, 200)}
        out.append({"label": rng.choice(_OBJECTS), "score": round(rng.uniform(0.5, 0.99), 4), "box": box})
    out.sort(key=lambda d: -cast(float, d["score"]))
    return out


def _size(p: Mapping[str, Any] | None) -> tuple[int, int]:
    def dim(key: str) -> int:
        value = (p or {}).get(key)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 256

    return dim("width"), dim("height")


def _speech_seconds(p: Mapping[str, Any] | None) -> float:
    text = ""
    for key in ("text", "prompt"):
        value = (p or {}).get(key)
        if isinstance(value, str):
            text = value
            break
    return max(0.5, min(60.0, 0.35 * len(words(text))))


def _task_hint(spec: ModelSpec, p: Mapping[str, Any] | None, raw: bytes | None, seed: str, out: list[Branch]) -> Any:
    task = spec.task_name.lower()
    data = p or {}
    json_props: set[str] = set()
    for b in out:
        props = as_object((as_object(b.schema) or {}).get("properties"))
        if b.kind == "json" and props is not None:
            json_props |= set(props)
    if "query" in data and "contexts" in data:
        return _rank(data, embedding_dim(spec))
    if "embedding" in task or {"shape", "data"} <= json_props:
        return _embedding(spec, data)
    if task == "text classification":
        return _classify(str(data.get("text") or ""))
    if task == "translation":
        source, target = data.get("source_lang"), data.get("target_lang")
        arrow = f"{source or 'auto'}->{target or '?'}"
        return {"translated_text": f"[{arrow}] {data.get('text') or ''}"}
    if task == "summarization":
        text = str(data.get("input_text") or data.get("text") or "")
        limit = data.get("max_length")
        first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
        cut = first.split(" ")[: limit if isinstance(limit, int) and limit > 0 else 64]
        return {"summary": " ".join(cut)}
    if task == "image-to-text":
        image = _binary_input(p, raw, "image")
        prompt = data.get("prompt")
        about = f" Prompt: {prompt}" if isinstance(prompt, str) else ""
        return {"description": f"An emulated description of a {len(image)}-byte image.{about}"}
    if task == "image classification":
        return _image_labels(seed)
    if task == "object detection":
        return _detections(seed)
    if task == "automatic speech recognition":
        return _transcript(p, raw, seed)
    if task == "text-to-image":
        width, height = _size(p)
        return {"image": base64.b64encode(png(min(width, 512), min(height, 512), seed)).decode("ascii")}
    if task == "text-to-speech":
        return {"audio": base64.b64encode(mp3(_speech_seconds(p))).decode("ascii")}
    if task == "voice activity detection":
        rng = random.Random(seed)
        probability = round(rng.random(), 4)
        return {"is_complete": probability >= 0.5, "probability": probability}
    return MISSING


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
    if _is_text_generation(spec, p, out):
        assert p is not None
        gen = generate(p, seed)
        structured = gen.structured
        chat = _chat_shaped(out)
        if ("stream" in kinds and (wants_stream or only_stream)) and allow_stream:
            return Result("stream", events=_stream_events(spec, gen, seed, chat), content_type=_SSE, usage=gen.usage)
        hint: Any = _chat_hint(spec, p, gen, seed, out) if chat else _legacy_hint(gen)
    else:
        hint = _task_hint(spec, p, raw, seed, out)
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
        width, height = _size(p)
        data = media_for(ct, seed=seed, width=width, height=height, seconds=_speech_seconds(p))
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
    texts = [*_texts(p.get("text")), *_contexts(p)]
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
