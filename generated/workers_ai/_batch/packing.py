"""Many rows in each request of a batch, for models whose batch requests take a list of texts (the bge
embedding models): what ``workers_ai.ray.map_model(..., queue=True)`` sends.

Rows built as ``{"text": "..."}`` (or a list of texts) with the same other fields are merged, in order,
into requests of up to the schema's ``maxItems`` texts and :data:`MAX_REQUEST_BYTES`; each merged
request's vectors are cut back into one output per row, typed as the model's output for that row alone
(``data`` holds the row's vectors, ``shape`` their count and width). A row's own ``external_reference``
is not sent: the merged request is matched by its place in the batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from ..errors import ConfigurationError
from .embed_plan import text_batch_limit
from .wire import BatchModel

__all__ = ["MAX_REQUEST_BYTES", "Packed", "pack_rows", "packable", "unpack"]

MAX_REQUEST_BYTES = 1_000_000
"""A merged request stays under this size (a batch under 10 MB holds ten of them at least)."""


class Packed(NamedTuple):
    """One merged request and, for each row it holds, ``(row index, texts)``."""

    request: dict[str, Any]
    rows: list[tuple[int, int]]


def _texts(payload: Mapping[str, Any]) -> list[str] | None:
    text = payload.get("text")
    if isinstance(text, str) and text:
        return [text]
    if isinstance(text, list) and text and all(isinstance(t, str) and t for t in text):  # pyright: ignore[reportUnknownVariableType]
        return list(text)  # pyright: ignore[reportUnknownArgumentType]
    return None


def packable(handle: BatchModel, payloads: Sequence[Mapping[str, Any]]) -> int | None:
    """The texts a merged request may hold (the schema's ``maxItems``, 100 when unbounded), or None when
    these rows cannot be merged: the model's batch requests take no list of texts, or a row has no text."""
    try:
        _, limit = text_batch_limit(handle)
    except ConfigurationError:
        return None
    if not payloads or any(_texts(p) is None for p in payloads):
        return None
    return limit or 100


def pack_rows(payloads: Sequence[Mapping[str, Any]], limit: int, max_bytes: int = MAX_REQUEST_BYTES) -> list[Packed]:
    """The rows merged in order (see the module docs); a row with more than ``limit`` texts goes alone."""
    packed: list[Packed] = []
    key: bytes | None = None
    texts: list[str] = []
    size = 0
    for index, payload in enumerate(payloads):
        own = _texts(payload) or []
        rest = {k: v for k, v in payload.items() if k not in ("text", "external_reference")}
        this_key = msgspec.json.encode(rest, order="sorted")
        weight = sum(len(t) for t in own) + 4 * len(own)
        fits = bool(packed) and key == this_key and len(texts) + len(own) <= limit and size + weight <= max_bytes
        if not fits:
            texts = []
            size = len(this_key)
            packed.append(Packed({**rest, "text": texts}, []))
            key = this_key
        texts.extend(own)
        size += weight
        packed[-1].rows.append((index, len(own)))
    return packed


def unpack(result: Any, counts: Sequence[int]) -> list[Any] | None:
    """One output per row from a merged request's output (``counts``: the texts of each row, in order), or
    None when the output does not hold ``sum(counts)`` vectors."""
    data: Any = getattr(result, "data", None)
    if not isinstance(data, list) or len(data) != sum(counts):  # pyright: ignore[reportUnknownArgumentType]
        return None
    rows: list[Any] = []
    start = 0
    has_shape = isinstance(result, msgspec.Struct) and "shape" in result.__struct_fields__
    for count in counts:
        part: list[Any] = data[start : start + count]  # pyright: ignore[reportUnknownVariableType]
        start += count
        changes: dict[str, Any] = {"data": part}
        if has_shape:
            width = len(part[0]) if part and isinstance(part[0], list) else 0  # pyright: ignore[reportUnknownArgumentType]
            changes["shape"] = [count, width]
        rows.append(msgspec.structs.replace(result, **changes) if isinstance(result, msgspec.Struct) else part)
    return rows
