"""Embedding rows with synchronous requests, each decoded straight into float32 (for Ray and Spark).

:func:`embed_rows` sends the texts in requests of the schema's ``maxItems`` (read from the generated
struct, as ``embed_many`` does), each through the client's retries and rate budget, and copies each
reply's vectors into a ``(len(texts), dim)`` float32 array. Failures are per row: a request refused
for its input (400: a text too long, an empty text) is split in halves until the offending texts are
found, so one bad row fails alone; any other failure (after the client's retries) fails the rows of
that request. It never raises for a row; it returns the array (NaN rows where it failed) and one error
message or None per text. Given an executor (``pool``), the requests go through it, so a worker keeps as
many in flight as the pool has threads (each still waits its turn in the client's rate budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InputValidationError, InvalidInputError, WorkersAIError
from .embed_plan import text_batch_limit
from .f32 import as_block, numpy
from .jobs import BatchTarget

if TYPE_CHECKING:
    from .f32 import F32

__all__ = ["EmbedTarget", "embed_rows"]


class EmbedTarget(BatchTarget, Protocol):
    def run(self, payload: Any, *, headers: Mapping[str, str] | None = None) -> Any: ...


def embed_rows(
    handle: EmbedTarget,
    texts: Sequence[str],
    *,
    batch_size: int | None = None,
    options: Mapping[str, Any] | None = None,
    pool: Executor | None = None,
) -> tuple[F32, list[str | None]]:
    """``(vectors, errors)`` for ``texts``: see the module docs. ``batch_size`` (at most the schema's
    ``maxItems``) sets the texts per request; ``options`` are extra request fields; ``pool`` sends the
    requests (default: one after the other, in this thread)."""
    np = numpy()
    _, limit = text_batch_limit(handle)
    per_request = batch_size or limit or max(1, len(texts))
    if per_request < 1 or (limit is not None and per_request > limit):
        raise InputValidationError(handle.model_id, "batch_size", f"must be between 1 and {limit}, got {batch_size}")
    extra = {k: v for k, v in (options or {}).items() if k != "text"}
    errors: list[str | None] = [None] * len(texts)
    blocks: list[tuple[int, F32]] = []

    def send(start: int, count: int) -> None:
        chunk = list(texts[start : start + count])
        try:
            reply = handle.run({**extra, "text": chunk})
        except (InvalidInputError, InputValidationError) as exc:
            if count > 1:
                half = count // 2
                send(start, half)
                send(start + half, count - half)
            else:
                errors[start] = _message(exc)
            return
        except WorkersAIError as exc:
            errors[start : start + count] = [_message(exc)] * count
            return
        data: Any = getattr(reply, "data", None)
        if data is None and isinstance(reply, Mapping):
            data = reply.get("data")  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        block = as_block(data, count)
        if block is None:
            errors[start : start + count] = [f"the reply does not have {count} vectors of one length"] * count
        else:
            blocks.append((start, block))

    requests: list[tuple[int, int]] = []
    for start in range(0, len(texts), per_request):
        count = min(per_request, len(texts) - start)
        for i, text in enumerate(texts[start : start + count]):
            if not isinstance(text, str) or not text:  # pyright: ignore[reportUnnecessaryIsInstance]
                errors[start + i] = f"InputValidationError: expected a non-empty string, got {text!r}"[:200]
        requests += _runs([i for i in range(start, start + count) if errors[i] is None])
    if pool is None or len(requests) < 2:
        for run_start, run_count in requests:
            send(run_start, run_count)
    else:
        list(pool.map(send, [s for s, _ in requests], [n for _, n in requests]))
    dim = max((b.shape[1] for _, b in blocks), default=0)
    out: F32 = np.full((len(texts), dim), np.nan, dtype=np.float32)
    for start, block in blocks:
        if block.shape[1] != dim:
            errors[start : start + block.shape[0]] = [f"vectors of {block.shape[1]} dimensions, not {dim}"] * len(block)
        else:
            out[start : start + block.shape[0]] = block
    return out, errors


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Consecutive stretches of ``indexes`` as ``(start, count)``."""
    runs: list[tuple[int, int]] = []
    for i in indexes:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def _message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
