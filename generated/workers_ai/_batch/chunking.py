"""Embedding many texts through the async batch API: ``ModelHandle.embed_many(texts)``.

It works for every model whose schema has a ``requests`` (batch) variant whose items take ``text`` as a
list of strings (the bge embedding models). It is one user of the bulk machinery of :mod:`.many` (the
same flow ``batch_many``, ``workers-ai batch`` and Ray's queue mode run), with its own two ends:

1. **Split** and **group** the texts into requests under the limits: :mod:`.embed_plan` (each request
   encoded once, and checked against the batch request struct before anything is sent).
2. The requests go through :func:`.many.many_flow`: submitted, polled, failed requests retried, delivered
   in input order, with :class:`BatchProgress` counting texts.
3. **Reassemble**: each request's vectors go to their rows as its batch is delivered (with ``as_numpy``,
   decoded straight from the raw reply into the float32 array).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .._core.decode import split_error, validator_for
from .._core.flow import Flow
from .._core.jsonview import as_object
from ..errors import BatchItemsError, InputValidationError
from .embed_plan import NUMPY_TEXTS_PER_BATCH, BatchProgress, plan_batches, text_batch_limit
from .f32 import decode_block, numpy
from .jobs import MAX_BATCH_BYTES, BatchItem, BatchJobBase, BatchModel
from .many import ListSource, ManyOptions, Unit, many_flow

if TYPE_CHECKING:
    from .f32 import F32

__all__ = ["embed_flow"]


def embed_flow(
    handle: BatchModel,
    job_type: Callable[..., BatchJobBase[Any]],
    texts: Sequence[str],
    *,
    batch_size: int | None = None,
    options: Mapping[str, Any] | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    timeout: float = 3600.0,
    poll_interval: float = 1.0,
    max_interval: float = 15.0,
    max_bytes: int = MAX_BATCH_BYTES,
    as_numpy: bool = False,
) -> Flow[list[list[float]] | F32]:
    """Embed ``texts`` and return one vector per text, in input order.

    With ``as_numpy`` the result is a ``(len(texts), dim)`` float32 array, filled one request at a time
    from lean status replies (:mod:`.f32`), with batches of at most ``NUMPY_TEXTS_PER_BATCH`` texts; a
    ``BatchItemsError`` then carries that array with NaN rows for the failed texts.

    See ``ModelHandle.embed_many`` for the parameters. Raises ``BatchItemsError`` (carrying the vectors
    that did arrive) when some requests failed, ``BatchTimeoutError`` (naming every unfinished request id)
    at the deadline, and ``BatchError`` when a later submission fails (naming the batches already queued).
    """
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InputValidationError(handle.model_id, "$.texts", "expected a list of strings")
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InputValidationError(handle.model_id, f"$.texts[{i}]", "expected a non-empty string")
    if not texts:
        return numpy().empty((0, 0), dtype=numpy().float32) if as_numpy else []
    cls, limit = text_batch_limit(handle)
    per_request = batch_size or limit or len(texts)
    if per_request < 1 or (limit is not None and per_request > limit):
        raise InputValidationError(
            handle.model_id, "batch_size", f"must be between 1 and {limit} (the schema's maxItems), got {batch_size}"
        )
    extra = dict(options or {})
    extra.pop("text", None)
    plan = plan_batches(texts, per_request=per_request, extra=extra, max_bytes=max_bytes, model_id=handle.model_id)
    if as_numpy:
        numpy()  # fail before anything is sent when numpy is missing
    checker = validator_for(cls)
    units: list[Unit] = []
    spans: list[tuple[int, int]] = []  # (first text, texts) of each request
    for batch in plan:
        for start, count, body in batch:
            if checker is not None:
                _check_request(handle.model_id, checker, body, start)
            n = len(units)
            # Each request was encoded once, by plan_batches, and goes on the wire byte for byte (no
            # external_reference: items are matched by id, as embed_many always did).
            units.append(Unit(n, "", body, count))
            spans.append((start, count))
    per_batch = max(1, NUMPY_TEXTS_PER_BATCH // per_request) if as_numpy else max(len(b) for b in plan)
    opts = ManyOptions(
        timeout=timeout,
        poll_interval=poll_interval,
        max_interval=max_interval,
        max_bytes=max_bytes,
        batch_size=per_batch,
        max_in_flight=max(8, len(plan)) if not as_numpy else 8,
    )
    vectors: list[list[float] | None] = [] if as_numpy else [None] * len(texts)
    array: list[Any] = [None]  # the float32 array, made when the first block gives its width
    failures: dict[int, str] = {}

    def sink(item: BatchItem[Any]) -> None:
        start, count = spans[item.id]
        if as_numpy:
            block = decode_block(item.result, count) if item.success and item.result is not None else None
            if block is not None and array[0] is None:
                np = numpy()
                array[0] = np.full((len(texts), block.shape[1]), np.nan, dtype=np.float32)
            if block is not None and block.shape[1:] == array[0].shape[1:]:
                array[0][start : start + count] = block
                return
            message = item.error or f"the reply does not have {count} vectors of the same length as the others"
        else:
            data = _vectors(item.result) if item.success else None
            if data is not None and len(data) == count:
                vectors[start : start + count] = data
                return
            if item.success:
                got = "no vectors" if data is None else f"{len(data)} vectors"
                message = f"the reply has {got} for {count} texts"
            else:
                message = item.error or ""
        for k in range(count):
            failures[start + k] = message

    source = ListSource(units, "")
    queued: list[str] = []
    yield from many_flow(
        handle,
        job_type,
        source,
        sink,
        on_progress=on_progress,
        options=opts,
        lean=as_numpy,
        total=len(texts),
        on_queued=queued.append,
    )
    if failures:
        first = min(failures)
        results: Sequence[Any]
        if as_numpy:
            results = [None] * len(texts) if array[0] is None else cast("Sequence[Any]", array[0])
        else:
            results = vectors
        raise BatchItemsError(
            f"{handle.model_id}: {len(failures)} of {len(texts)} texts got no vector "
            f"(first: text {first}: {failures[first]})",
            request_id=queued[0] if queued else "",
            results=results,
            failures=failures,
        )
    if as_numpy:
        made: F32 = array[0] if array[0] is not None else numpy().empty((len(texts), 0), dtype=numpy().float32)
        return made
    return cast("list[list[float]]", vectors)


def _check_request(model_id: str, checker: msgspec.json.Decoder[Any], body: bytes, start: int) -> None:
    """Check one encoded request against the batch request struct; errors name the text or the option."""
    try:
        checker.decode(body)
    except msgspec.ValidationError as exc:
        path, message = split_error(exc)
        if path.startswith("$.text["):
            index, _, rest = path[len("$.text[") :].partition("]")
            path = f"$.texts[{start + int(index)}]{rest}" if index.isdigit() else "$.texts"
        elif path == "$.text" or path.startswith("$.text."):
            path = "$.texts"
        else:
            path = "$.options" + path[1:]
        raise InputValidationError(model_id, path, message) from None


def _vectors(result: Any) -> list[list[float]] | None:
    obj = as_object(result)
    data: Any = obj.get("data") if obj is not None else getattr(result, "data", None)
    return cast("list[list[float]]", data) if isinstance(data, list) else None
