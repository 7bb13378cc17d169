"""What models of the tasks other than text generation and embeddings reply: classification labels,
translations, summaries, image descriptions, detections, transcripts, images and speech. Deterministic
per input (``seed``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import random
import re
from collections.abc import Mapping
from typing import Any, cast

from .._core.jsonview import as_list
from ._catalog import ModelSpec
from ._embeddings import embedding_dim, embedding_reply, rank_reply
from ._media import mp3, png
from ._synth import MISSING
from ._textgen import words

__all__ = ["size_option", "speech_seconds", "task_hint"]

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
_SPOKEN = "the a weather today we will meet at noon please send report thanks and llama model answers".split()
_OBJECTS = ("person", "dog", "cat", "car", "bicycle", "chair", "cup", "bird")


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


def size_option(p: Mapping[str, Any] | None) -> tuple[int, int]:
    def dim(key: str) -> int:
        value = (p or {}).get(key)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 256

    return dim("width"), dim("height")


def speech_seconds(p: Mapping[str, Any] | None) -> float:
    text = ""
    for key in ("text", "prompt"):
        value = (p or {}).get(key)
        if isinstance(value, str):
            text = value
            break
    return max(0.5, min(60.0, 0.35 * len(words(text))))


def task_hint(spec: ModelSpec, p: Mapping[str, Any] | None, raw: bytes | None, seed: str, json_props: set[str]) -> Any:
    """The reply a real model of ``spec``'s task might give (``json_props``: the keys its JSON outputs declare)."""
    task = spec.task_name.lower()
    data = p or {}
    if "query" in data and "contexts" in data:
        return rank_reply(data, embedding_dim(spec))
    if "embedding" in task or {"shape", "data"} <= json_props:
        return embedding_reply(spec, data)
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
        width, height = size_option(p)
        return {"image": base64.b64encode(png(min(width, 512), min(height, 512), seed)).decode("ascii")}
    if task == "text-to-speech":
        return {"audio": base64.b64encode(mp3(speech_seconds(p))).decode("ascii")}
    if task == "voice activity detection":
        rng = random.Random(seed)
        probability = round(rng.random(), 4)
        return {"is_complete": probability >= 0.5, "probability": probability}
    return MISSING
