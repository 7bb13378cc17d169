"""Embeddings the emulator computes: vectors from the words of a text (stemmed, stop words dropped), so
similar texts lie near each other, and reranking by that similarity. Deterministic per text.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any, cast

from .._core.jsonview import as_list, as_object
from ._catalog import ModelSpec
from ._textgen import words

__all__ = ["contexts_of", "embed", "embedding_dim", "embedding_reply", "rank_reply", "similarity", "stem", "texts_of"]

_DIMENSIONS = {"bge-base": 768, "bge-large": 1024, "bge-m3": 1024, "bge-small": 384}
_STOPWORDS = frozenset(
    """a an the is are was were be been of to in on at by for with about as and or but not this that these those
    it its i you he she we they me my your our their what which who how tell please do does did can""".split()
)


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


_GRAM_SPAN = 64  # trigrams come from a stem's first 64 letters: no word is longer, and a 10 MB "word" stays cheap


def _features(text: str) -> dict[str, float]:
    """What a text's vector is made of, each feature once with its summed weight: each topic word's stem,
    and the stem's letter trigrams (so words sharing a root, "retrieve"/"retrieval", overlap too); glue
    words count a quarter."""
    out: dict[str, float] = {}
    tokens = Counter(words(text) or [text.strip().lower() or "<empty>"])  # a repeated word counts n times
    for tok, times in tokens.items():
        weight = (0.25 if tok in _STOPWORDS else 1.0) * times  # topic words, not glue words, decide similarity
        root = stem(tok)
        out["w:" + root] = out.get("w:" + root, 0.0) + weight
        padded = f"^{root[:_GRAM_SPAN]}$"
        count = len(padded) - 2
        share = weight * 0.6 / math.sqrt(count)
        for i in range(count):
            gram = "g:" + padded[i : i + 3]
            out[gram] = out.get(gram, 0.0) + share
    return out


@functools.lru_cache(maxsize=4096)
def _sparse(text: str, dim: int) -> tuple[tuple[int, float], ...]:
    """The non-zero entries of :func:`embed`'s vector (a few dozen of ``dim``), computed once per text."""
    vec: dict[int, float] = {}
    for feature, weight in _features(text).items():
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


def texts_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in as_list(value) or [] if isinstance(v, str)]


def contexts_of(p: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for c in as_list(p.get("contexts")) or []:
        ctx = as_object(c)
        if ctx is not None and isinstance(ctx.get("text"), str):
            out.append(cast(str, ctx["text"]))
        elif isinstance(c, str):
            out.append(c)
    return out


def rank_reply(p: Mapping[str, Any], dim: int) -> dict[str, Any]:
    query = str(p.get("query") or "")
    scored = [{"id": i, "score": similarity(query, t, dim)} for i, t in enumerate(contexts_of(p))]
    scored.sort(key=lambda item: (-float(item["score"]), int(item["id"])))
    top_k = p.get("top_k")
    if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k > 0:
        scored = scored[:top_k]
    return {"response": scored}


def embedding_reply(spec: ModelSpec, p: Mapping[str, Any]) -> dict[str, Any]:
    dim = embedding_dim(spec)
    pooling = p.get("pooling") if p.get("pooling") in ("mean", "cls") else "mean"
    if "contexts" in p and "text" not in p:
        vectors = [embed(t, dim) for t in contexts_of(p)]
        return {"response": vectors, "shape": [len(vectors), dim], "pooling": pooling}
    vectors = [embed(t, dim) for t in texts_of(p.get("text"))]
    return {"shape": [len(vectors), dim], "data": vectors, "pooling": pooling}
