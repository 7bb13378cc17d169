"""What a model "computes": a schema-valid reply with task-specific realism, deterministic per input.

Each task builds a *hint*, the reply a real model might give (embedding vectors from the words of the
text, a reply echoing the prompt, a transcript, a real PNG...). The synthesizer then keeps whatever
part of the hint fits the model's output schema and fills in the rest, so realism never costs
validity. Binary outputs are real files of the declared type; streams are lists of SSE payloads.
What text-generation models say (text, tool calls, JSON mode) is in :mod:`._textgen`.
"""

from __future__ import annotations

import base64
import functools
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
from ._natives import decisions, extractions
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
    responses_object,
    words,
)

__all__ = ["Branch", "Result", "branches", "embed", "embedding_dim", "run_model", "seed_for", "stem"]

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
_SPOKEN = "the a weather today we will meet at noon please send report thanks and llama model answers".split()
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


# --------------------------------------------------------------------------- embeddings


def embedding_dim(spec: ModelSpec) -> int:
    """The vector size: what the output schema declares for a vector (``minItems`` of ``data``'s items,
    from the schema overrides), else the catalog's ``output_dimensions``, else the BGE family's size."""
    declared = _declared_dim(spec.outputs.root)
    if declared is not None:
        return declared
    value = spec.properties.get("output_dimensions")
    try:
        dim = int(str(value))
    except ValueError:
        dim = 0
    if 0 < dim <= 16384:
        return dim
    name = spec.model_id.lower()
    return next((d for key, d in _DIMENSIONS.items() if key in name), 768)


def _declared_dim(schema: Any, depth: int = 0) -> int | None:
    obj = as_object(schema)
    if obj is None or depth > 4:
        return None
    vectors = as_object((as_object(obj.get("properties")) or {}).get("data"))
    vector = as_object((vectors or {}).get("items"))
    size = (vector or {}).get("minItems")
    if isinstance(size, int) and not isinstance(size, bool) and 0 < size <= 16384:
        return size
    for key in ("oneOf", "anyOf"):
        for branch in as_list(obj.get(key)) or []:
            found = _declared_dim(branch, depth + 1)
            if found is not None:
                return found
    return None


def stem(word: str) -> str:
    """A crude English stem ("llamas" -> "llama", "running" -> "runn", "stated" -> "stat"): enough for
    plural and tense variants of a word to land on the same features."""
    for suffix in ("ies", "ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _features(text: str) -> list[tuple[str, float]]:
    """What a text's vector is made of: each topic word's stem, and the stem's letter trigrams (so words
    sharing a root, "retrieve"/"retrieval", overlap too); glue words count a quarter."""
    out: list[tuple[str, float]] = []
    tokens = words(text) or [text.strip().lower() or "<empty>"]
    for tok in tokens:
        weight = 0.25 if tok in _STOPWORDS else 1.0  # topic words, not glue words, decide similarity
        root = stem(tok)
        out.append(("w:" + root, weight))
        padded = f"^{root}$"
        grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
        for gram in grams:
            out.append(("g:" + gram, weight * 0.6 / math.sqrt(len(grams))))
    return out


@functools.lru_cache(maxsize=4096)
def _sparse(text: str, dim: int) -> tuple[tuple[int, float], ...]:
    """The non-zero entries of :func:`embed`'s vector (a few dozen of ``dim``), computed once per text."""
    vec: dict[int, float] = {}
    for feature, weight in _features(text):
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        idx = int.from_bytes(digest[:4], "big") % dim
        vec[idx] = vec.get(idx, 0.0) + (weight if digest[4] & 1 else -weight)
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return tuple(sorted((i, round(v / norm, 6)) for i, v in vec.items()))


def embed(text: str, dim: int) -> list[float]:
    """A unit vector from the text's word stems and their trigrams (hashed into the vector): texts that
    share words, or words' stems, have a higher cosine."""
    vec = [0.0] * dim
    for idx, value in _sparse(text, dim):
        vec[idx] = value
    return vec


def similarity(a: str, b: str, dim: int) -> float:
    """The cosine of two texts' :func:`embed` vectors, from their few non-zero entries."""
    right = dict(_sparse(b, dim))
    return round(sum(v * right.get(i, 0.0) for i, v in _sparse(a, dim)), 6)


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
    query = str(p.get("query") or "")
    scored = [{"id": i, "score": similarity(query, t, dim)} for i, t in enumerate(_contexts(p))]
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


_AUDIO_BYTES_PER_SECOND = 16_000  # about 128 kbit/s: an MP3's rate, half a 16 kHz 16-bit WAV's
_WORDS_PER_SECOND = 2.5  # conversational speech


def _transcript(p: Mapping[str, Any] | None, raw: bytes | None, seed: str) -> dict[str, Any]:
    """A transcript whose length follows the audio's (about 2.5 words a second), in both the Whisper
    shape (``text``, ``words``, ``vtt``, ``segments``) and Deepgram's (``results.channels``): the output
    schema keeps the one the model declares."""
    audio = _binary_input(p, raw, "audio")
    rng = random.Random(seed)
    seconds = len(audio) / _AUDIO_BYTES_PER_SECOND
    count = max(5, min(2000, round(seconds * _WORDS_PER_SECOND)))
    spoken = ["this", "is", "an", "emulated", "transcript"] + [rng.choice(_SPOKEN) for _ in range(count - 5)]
    text = " ".join(spoken)
    step = max(seconds, 2.0) / len(spoken)
    timed = [
        {"word": w, "start": round(i * step, 2), "end": round(i * step + step * 0.9, 2)} for i, w in enumerate(spoken)
    ]
    duration = round(len(spoken) * step, 2)
    vtt = f"WEBVTT\n\n00:00.000 --> {_vtt_time(duration)}\n{text}\n"
    language = (p or {}).get("language")
    scored = [{**w, "confidence": round(0.9 + rng.random() * 0.09, 4)} for w in timed]
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
        "results": {"channels": [{"alternatives": [{"transcript": text, "confidence": 0.97, "words": scored}]}]},
    }


def _vtt_time(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60.0)
    return f"{int(minutes):02d}:{rest:06.3f}"


_PLACES = ("on the left", "on the right", "in the centre", "in the background", "near the top", "at the bottom")


def _image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's header or a JPEG's frame marker; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    i = 2
    while data[:2] == b"\xff\xd8" and i + 9 <= len(data) and data[i] == 0xFF:
        marker, length = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[i + 7 : i + 9], "big"), int.from_bytes(data[i + 5 : i + 7], "big")
        i += 2 + length
    return None


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
        size = _image_size(image)
        what = f"{size[0]}x{size[1]} image" if size else "image"
        rng = random.Random(seed)
        # a bigger picture holds more to describe: one more sentence per doubling past 1 KB, up to 8
        extra = min(8, max(0, (len(image) // 1024).bit_length()))
        seen = " ".join(f"There is a {rng.choice(_OBJECTS)} {rng.choice(_PLACES)}." for _ in range(extra))
        return {
            "description": " ".join(
                filter(None, [f"An emulated description of a {what} ({len(image)} bytes).", seen, about.strip()])
            )
        }
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
