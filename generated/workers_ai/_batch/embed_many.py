"""``embed_many``: many texts embedded through the async batch API (``ModelHandle.embed_many(texts)``).

It works for every model whose schema has a ``requests`` (batch) variant whose items take ``text`` as a
list of strings (the bge embedding models). It is one user of the bulk machinery of :mod:`.many` (the
same flow ``batch_many``, ``workers-ai batch`` and Ray's queue mode run), with its own two ends:

1. **Check** the texts (:func:`_check_texts`), **split** and **group** them into requests under the limits
   (:func:`_plan`, :mod:`.embed_plan`), each request encoded once and checked against the batch request
   struct before anything is sent (:func:`_units`).
2. The requests go through :func:`.many.many_flow`: submitted, polled, failed requests retried, delivered
   in input order, with :class:`BatchProgress` counting texts.
3. **Reassemble** (:class:`_Rows`): each request's vectors go to their rows as its batch is delivered (with
   ``as_numpy``, decoded straight from the raw reply into the float32 array).
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
    from lean status replies (:mod:`.lean`), with batches of at most ``NUMPY_TEXTS_PER_BATCH`` texts; a
    ``BatchItemsError`` then carries that array with NaN rows for the failed texts.

    See ``ModelHandle.embed_many`` for the parameters. Raises ``BatchItemsError`` (carrying the vectors
    that did arrive) when some requests failed, ``BatchTimeoutError`` (naming every unfinished request id)
    at the deadline, and ``BatchError`` when a later submission fails (naming the batches already queued).
    """
    _check_texts(handle.model_id, texts)
    if not texts:
        return numpy().empty((0, 0), dtype=numpy().float32) if as_numpy else []
    plan, per_request = _plan(handle, texts, batch_size, options, max_bytes)
    if as_numpy:
        numpy()  # fail before anything is sent when numpy is missing
    units, spans = _units(handle, plan)
    per_batch = max(1, NUMPY_TEXTS_PER_BATCH // per_request) if as_numpy else max(len(b) for b in plan)
    opts = ManyOptions(
        timeout=timeout,
        poll_interval=poll_interval,
        max_interval=max_interval,
        max_bytes=max_bytes,
        batch_size=per_batch,
        max_in_flight=max(8, len(plan)) if not as_numpy else 8,
    )
    rows = _Rows(len(texts), spans, as_numpy)
    queued: list[str] = []
    yield from many_flow(
        handle,
        job_type,
        ListSource(units, ""),
        rows.take,
        on_progress=on_progress,
        options=opts,
        lean=as_numpy,
        total=len(texts),
        on_queued=queued.append,
    )
    return rows.result(handle.model_id, queued[0] if queued else "")


def _check_texts(model_id: str, texts: Sequence[str]) -> None:
    """A list of non-empty strings; else ``InputValidationError`` naming the text, before anything is sent."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InputValidationError(model_id, "$.texts", "expected a list of strings")
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InputValidationError(model_id, f"$.texts[{i}]", "expected a non-empty string")


def _plan(
    handle: BatchModel,
    texts: Sequence[str],
    batch_size: int | None,
    options: Mapping[str, Any] | None,
    max_bytes: int,
) -> tuple[list[list[tuple[int, int, bytes]]], int]:
    """The texts split into requests of ``batch_size`` (at most the schema's ``maxItems``) and grouped into
    batches under ``max_bytes`` (:func:`.embed_plan.plan_batches`), and the texts per request."""
    _, limit = text_batch_limit(handle)
    per_request = batch_size or limit or len(texts)
    if per_request < 1 or (limit is not None and per_request > limit):
        raise InputValidationError(
            handle.model_id, "batch_size", f"must be between 1 and {limit} (the schema's maxItems), got {batch_size}"
        )
    extra = dict(options or {})
    extra.pop("text", None)
    plan = plan_batches(texts, per_request=per_request, extra=extra, max_bytes=max_bytes, model_id=handle.model_id)
    return plan, per_request


def _units(handle: BatchModel, plan: list[list[tuple[int, int, bytes]]]) -> tuple[list[Unit], list[tuple[int, int]]]:
    """Each planned request as a :class:`.many.Unit` (checked against the batch request struct), and the
    ``(first text, texts)`` it holds."""
    cls, _ = text_batch_limit(handle)
    checker = validator_for(cls)
    units: list[Unit] = []
    spans: list[tuple[int, int]] = []
    for batch in plan:
        for start, count, body in batch:
            if checker is not None:
                _check_request(handle.model_id, checker, body, start)
            # Each request was encoded once, by plan_batches, and goes on the wire byte for byte (no
            # external_reference: items are matched by id, as embed_many always did).
            units.append(Unit(len(units), "", body, count))
            spans.append((start, count))
    return units, spans


class _Rows:
    """The vectors, put in their rows as each request's item is delivered (:meth:`take`, the run's sink),
    and the failed texts with why."""

    def __init__(self, count: int, spans: list[tuple[int, int]], as_numpy: bool) -> None:
        self.count = count
        self.spans = spans
        self.as_numpy = as_numpy
        self.vectors: list[list[float] | None] = [] if as_numpy else [None] * count
        self.array: Any = None  # the float32 array, made when the first block gives its width
        self.failures: dict[int, str] = {}

    def take(self, item: BatchItem[Any]) -> None:
        start, count = self.spans[item.id]
        message = self._into_array(item, start, count) if self.as_numpy else self._into_list(item, start, count)
        if message is not None:
            for k in range(count):
                self.failures[start + k] = message

    def _into_array(self, item: BatchItem[Any], start: int, count: int) -> str | None:
        block = decode_block(item.result, count) if item.success and item.result is not None else None
        if block is not None and self.array is None:
            np = numpy()
            self.array = np.full((self.count, block.shape[1]), np.nan, dtype=np.float32)
        if block is not None and block.shape[1:] == self.array.shape[1:]:
            self.array[start : start + count] = block
            return None
        return item.error or f"the reply does not have {count} vectors of the same length as the others"

    def _into_list(self, item: BatchItem[Any], start: int, count: int) -> str | None:
        data = _vectors(item.result) if item.success else None
        if data is not None and len(data) == count:
            self.vectors[start : start + count] = data
            return None
        if item.success:
            got = "no vectors" if data is None else f"{len(data)} vectors"
            return f"the reply has {got} for {count} texts"
        return item.error or ""

    def result(self, model_id: str, request_id: str) -> list[list[float]] | F32:
        """Every text's vector; ``BatchItemsError`` (carrying what did arrive) when some failed."""
        failures = self.failures
        if failures:
            first = min(failures)
            results: Sequence[Any]
            if self.as_numpy:
                results = [None] * self.count if self.array is None else cast("Sequence[Any]", self.array)
            else:
                results = self.vectors
            raise BatchItemsError(
                f"{model_id}: {len(failures)} of {self.count} texts got no vector "
                f"(first: text {first}: {failures[first]})",
                request_id=request_id,
                results=results,
                failures=failures,
            )
        if self.as_numpy:
            made: F32 = self.array if self.array is not None else numpy().empty((self.count, 0), dtype=numpy().float32)
            return made
        return cast("list[list[float]]", self.vectors)


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
