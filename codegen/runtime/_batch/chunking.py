"""Embedding many texts through the async batch API: split, submit, poll, reassemble.

``ModelHandle.embed_many(texts)`` is the public entry point; it works for every model whose schema
has a ``requests`` (batch) variant whose items take ``text`` as a list of strings (the bge embedding
models). The pieces:

1. **Split** and 2. **group** the texts into requests and batches: :mod:`.embed_plan`.
3. **Submit** every batch, then **poll** them together with a growing interval until all are done or
   the deadline passes, reporting :class:`BatchProgress` after each round.
4. **Reassemble** the vectors in input order, matching batch items by ``id``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .._core.decode import split_error, validator_for
from .._core.flow import Flow, Sleep
from .._core.jsonview import as_object
from ..errors import (
    APITimeoutError,
    BatchError,
    BatchItemsError,
    BatchTimeoutError,
    InputValidationError,
)
from .embed_plan import NUMPY_TEXTS_PER_BATCH, BatchProgress, plan_batches, text_batch_limit
from .f32 import decode_block, numpy, read_lean
from .jobs import (
    MAX_BATCH_BYTES,
    AsyncBatchJob,
    BatchJob,
    BatchJobBase,
    BatchModel,
    PollSchedule,
    encode_batch,
)
from .submit import submit_flow

if TYPE_CHECKING:
    from .f32 import F32

__all__ = [
    "POLL",
    "POLL_LEAN",
    "SLEEP",
    "SUBMIT",
    "embed_many",
    "embed_steps",
]

SUBMIT, POLL, POLL_LEAN, SLEEP = 0, 1, 2, 3  # the steps of embed_steps


def embed_steps(
    handle: BatchModel,
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
) -> Generator[tuple[int, Any], Any, list[list[float]] | F32]:
    """Embed ``texts`` with the async batch API and return one vector per text, in input order.

    With ``as_numpy`` the result is a ``(len(texts), dim)`` float32 array, filled one request at a
    time from lean status replies (:mod:`._f32`), with batches of at most ``NUMPY_TEXTS_PER_BATCH``
    texts; a ``BatchItemsError`` then carries that array with NaN rows for the failed texts.

    See ``ModelHandle.embed_many`` for the parameters. Raises ``BatchItemsError`` (carrying the
    vectors that did arrive) when some requests failed, ``BatchTimeoutError`` (naming every unfinished
    request id) at the deadline (``timeout`` seconds after the call, submissions included), and
    ``BatchError`` when a whole batch failed. Every request is encoded once, by :func:`plan_batches`,
    checked against the batch request struct (errors name ``$.texts[i]`` or ``$.options.<field>``)
    and sent as those bytes.

    Sans I/O: yields ``(SUBMIT, bodies)`` (send back the job), ``(POLL, (job, deadline))`` (send back its
    status), ``(POLL_LEAN, (job, deadline))`` (send back ``_f32.read_lean`` of a poll) and ``(SLEEP, seconds)``;
    :func:`embed_many` and the async client each run the steps.
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
    schedule = PollSchedule(timeout, poll_interval, max_interval)
    deadline = time.monotonic() + timeout  # bounds every poll in flight, whatever clock the schedule uses
    plan = plan_batches(texts, per_request=per_request, extra=extra, max_bytes=max_bytes, model_id=handle.model_id)
    if as_numpy:
        numpy()  # fail before anything is sent when numpy is missing
        step = max(1, NUMPY_TEXTS_PER_BATCH // per_request)
        plan = [batch[i : i + step] for batch in plan for i in range(0, len(batch), step)]
    checker = validator_for(cls)
    if checker is not None:
        for batch in plan:
            for start, _, body in batch:
                _check_request(handle.model_id, checker, body, start)

    jobs: list[tuple[BatchJobBase[Any], list[tuple[int, int, bytes]]]] = []
    for batch in plan:
        try:
            # Each request was encoded once, by plan_batches, and checked above: it is sent as it is.
            job = yield (SUBMIT, [body for _, _, body in batch])
        except Exception as exc:
            if not jobs:
                raise
            queued = ", ".join(j.request_id for j, _ in jobs)
            raise BatchError(
                f"{handle.model_id}: submitting batch {len(jobs) + 1} of {len(plan)} failed ({exc}); "
                f"batches already queued: {queued}",
                request_id=jobs[0][0].request_id,
            ) from exc
        jobs.append((job, batch))

    vectors: list[list[float] | None] = [] if as_numpy else [None] * len(texts)
    array: F32 | None = None
    failures: dict[int, str] = {}
    pending = list(jobs)
    states: dict[str, str] = {job.request_id: "queued" for job, _ in jobs}
    done_texts = 0
    while True:
        still: list[tuple[BatchJobBase[Any], list[tuple[int, int, bytes]]]] = []
        for index, (job, batch) in enumerate(pending):
            lean_items: list[tuple[int, msgspec.Raw | None, str]] | None = None
            try:
                if as_numpy:
                    lean = yield (POLL_LEAN, (job, deadline))
                    state, lean_items = lean.state, lean.items
                else:
                    st = yield (POLL, (job, deadline))
                    state = st.state
            except APITimeoutError:
                if time.monotonic() < deadline:
                    raise
                unfinished = still + pending[index:]
                ids = ", ".join(j.request_id for j, _ in unfinished)
                raise BatchTimeoutError(
                    f"{handle.model_id}: {len(unfinished)} of {len(jobs)} batches unfinished after {timeout:g}s "
                    f"(the last poll got no answer in time): {ids}; "
                    f"resume each with batch_job({handle.model_id!r}, request_id)",
                    request_id=unfinished[0][0].request_id,
                    state=states[unfinished[0][0].request_id],
                ) from None
            states[job.request_id] = state
            if as_numpy:
                if lean_items is None:
                    if state == "failed":
                        raise BatchError(
                            f"{handle.model_id}: batch {job.request_id} failed",
                            request_id=job.request_id,
                            state="failed",
                        )
                    still.append((job, batch))
                    continue
                seen: set[int] = set()
                for item_id, raw, message in lean_items:
                    if not 0 <= item_id < len(batch) or item_id in seen:
                        continue
                    seen.add(item_id)
                    start, count, _ = batch[item_id]
                    block = decode_block(raw, count) if raw is not None else None
                    if block is not None and array is None:
                        np = numpy()
                        array = np.full((len(texts), block.shape[1]), np.nan, dtype=np.float32)
                    if block is not None and array is not None and block.shape[1:] == array.shape[1:]:
                        array[start : start + count] = block
                        continue
                    if raw is not None:
                        message = f"the reply does not have {count} vectors of the same length as the others"
                    for k in range(count):
                        failures[start + k] = message
                for item_id in range(len(batch)):
                    if item_id not in seen:
                        start, count, _ = batch[item_id]
                        for k in range(count):
                            failures[start + k] = "the finished batch has no response for this request"
                done_texts += sum(count for _, count, _ in batch)
                continue
            result = job.result
            if result is None:
                if state == "failed":
                    raise BatchError(
                        f"{handle.model_id}: batch {job.request_id} failed", request_id=job.request_id, state="failed"
                    )
                still.append((job, batch))
                continue
            for item in result.items:
                start, count, _ = batch[item.id]
                done_texts += count
                data = _vectors(item.result) if item.success else None
                if item.success and (data is None or len(data) != count):
                    got = "no vectors" if data is None else f"{len(data)} vectors"
                    message = f"the reply has {got} for {count} texts"
                    data = None
                else:
                    message = item.error or ""
                for k in range(count):
                    if data is None:
                        failures[start + k] = message
                    else:
                        vectors[start + k] = data[k]
        pending = still
        now = schedule.clock()
        if on_progress is not None:
            elapsed = now - schedule.started
            on_progress(
                BatchProgress(done_texts, len(texts), len(jobs) - len(pending), len(jobs), elapsed, dict(states))
            )
        if not pending:
            break
        wait = schedule.next_wait(now)
        if wait is None:
            ids = ", ".join(j.request_id for j, _ in pending)
            raise BatchTimeoutError(
                f"{handle.model_id}: {len(pending)} of {len(jobs)} batches unfinished after {timeout:g}s: {ids}; "
                f"resume each with batch_job({handle.model_id!r}, request_id)",
                request_id=pending[0][0].request_id,
                state=states[pending[0][0].request_id],
            )
        yield (SLEEP, wait)
    if failures:
        first = min(failures)
        raise BatchItemsError(
            f"{handle.model_id}: {len(failures)} of {len(texts)} texts got no vector "
            f"(first: text {first}: {failures[first]})",
            request_id=jobs[0][0].request_id,
            results=vectors if not as_numpy else [None] * len(texts) if array is None else cast("Sequence[Any]", array),
            failures=failures,
        )
    if as_numpy:
        return array if array is not None else numpy().empty((len(texts), 0), dtype=numpy().float32)
    return cast("list[list[float]]", vectors)


def embed_many(
    handle: BatchModel,
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
) -> Any:
    """Embed ``texts`` with the async batch API; one vector per text, in input order (see :func:`embed_steps`).

    Runs on the handle's client: the vectors with the sync client, an awaitable of them with the async one.
    """
    steps = embed_steps(
        handle,
        texts,
        batch_size=batch_size,
        options=options,
        on_progress=on_progress,
        timeout=timeout,
        poll_interval=poll_interval,
        max_interval=max_interval,
        max_bytes=max_bytes,
        as_numpy=as_numpy,
    )
    client: Any = handle.client
    job_type: Callable[..., BatchJobBase[Any]] = AsyncBatchJob[Any] if client.is_async else BatchJob[Any]
    return client.drive(embed_flow(handle, job_type, steps, max_bytes))


def embed_flow(
    handle: BatchModel,
    job_type: Callable[..., BatchJobBase[Any]],
    steps: Generator[tuple[int, Any], Any, list[list[float]] | F32],
    max_bytes: int,
) -> Flow[list[list[float]] | F32]:
    """Answer the plan's steps (submit, poll, sleep) with the batch flows."""
    try:
        kind, arg = next(steps)
    except StopIteration as stop:
        done: list[list[float]] | F32 = stop.value
        return done
    while True:
        failure: Exception | None = None
        out: Any = None
        try:
            if kind == SUBMIT:
                body = encode_batch(handle.model_id, arg)
                out = yield from submit_flow(handle, job_type, body, len(arg), None, max_bytes)
            elif kind in (POLL, POLL_LEAN):
                job: BatchJobBase[Any] = arg[0]
                if kind == POLL:
                    out = yield from job.status_flow(arg[1])
                else:
                    out = read_lean(job, (yield from job.poll_flow(arg[1])))
            else:
                yield Sleep(arg)
        except Exception as exc:
            failure = exc
        try:
            kind, arg = steps.throw(failure) if failure is not None else steps.send(out)
        except StopIteration as stop:
            vectors: list[list[float]] | F32 = stop.value
            return vectors


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
