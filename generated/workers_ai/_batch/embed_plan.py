"""The plan of ``embed_many``: which batch request takes the texts, and how they are split and grouped.

1. **Split** the texts into requests of at most the schema's ``maxItems`` strings. The limit is read
   from the generated request struct (``Meta(max_length=...)`` on its ``text`` list), not hard-coded.
2. **Group** the requests into batches whose JSON body stays under ``max_bytes`` (10 MB by default); a
   request that alone would pass the limit is halved until it fits.

:class:`BatchProgress` is what a run reports after each polling round (:mod:`.many` makes it).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .._core.body import encode_body
from ..errors import ConfigurationError, InputValidationError
from .wire import BatchModel, batch_item_types, require_batch, strip_annotated, union_members

__all__ = ["NUMPY_TEXTS_PER_BATCH", "BatchProgress", "plan_batches", "text_batch_limit"]

# With as_numpy, a batch carries at most this many texts, so one status reply (about 21 bytes a float
# as JSON: 9 MB for 400 x 1024) is never more than a small multiple of its float32 rows.
NUMPY_TEXTS_PER_BATCH = 400
_OPEN = len(b'{"requests":[')
_CLOSE = len(b"]}")


class BatchProgress(msgspec.Struct, frozen=True):
    """Where a multi-batch run stands: texts whose vectors are in, batches finished, seconds elapsed,
    and the last status of every batch by request id."""

    done: int
    total: int
    batches_done: int
    batches: int
    elapsed: float
    states: dict[str, str]

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def text_batch_limit(handle: BatchModel) -> tuple[type[Any], int | None]:
    """The batch request struct that takes a list of texts, and its ``maxItems`` (None when unbounded).

    Raises :class:`~workers_ai.errors.ConfigurationError` for a model without such a batch variant.
    """
    require_batch(handle)
    for cls in batch_item_types(handle):
        for field in msgspec.structs.fields(cls):
            if field.encode_name != "text":
                continue
            for member in union_members(field.type):
                base = strip_annotated(member)
                args = typing.get_args(base)
                if typing.get_origin(base) is list and args and strip_annotated(args[0]) is str:
                    limit: int | None = None
                    if typing.get_origin(member) is typing.Annotated:
                        for meta in typing.get_args(member)[1:]:
                            if isinstance(meta, msgspec.Meta) and meta.max_length is not None:
                                limit = meta.max_length
                    return cls, limit
    raise ConfigurationError(f"{handle.model_id} has no batch request that takes a list of texts")


def plan_batches(
    texts: Sequence[str],
    *,
    per_request: int,
    extra: Mapping[str, Any],
    max_bytes: int,
    model_id: str,
) -> list[list[tuple[int, int, bytes]]]:
    """Group ``texts`` into batches: each batch is a list of ``(start, count, request JSON)``."""

    def encode(start: int, count: int) -> bytes:
        return encode_body({**extra, "text": texts[start : start + count]}, model_id)

    requests: list[tuple[int, int, bytes]] = []
    budget = max_bytes - _OPEN - _CLOSE - 1
    for start in range(0, len(texts), per_request):
        todo = [(start, min(per_request, len(texts) - start))]
        while todo:
            s, n = todo.pop(0)
            body = encode(s, n)
            if len(body) <= budget:
                requests.append((s, n, body))
            elif n == 1:
                raise InputValidationError(
                    model_id,
                    f"$.texts[{s}]",
                    f"this text alone makes a {len(body):,}-byte batch; the limit is {max_bytes:,}",
                )
            else:
                half = n // 2
                todo[:0] = [(s, half), (s + half, n - half)]
    batches: list[list[tuple[int, int, bytes]]] = []
    size = 0
    for req in requests:
        add = len(req[2]) + (1 if batches and batches[-1] else 0)
        if not batches or size + add > budget:
            batches.append([req])
            size = len(req[2])
        else:
            batches[-1].append(req)
            size += add
    return batches
