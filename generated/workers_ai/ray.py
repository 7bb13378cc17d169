"""Bulk inference on Ray Data: :func:`embed` and :func:`map_model` (``pip install 'workers-ai[ray]'``).

Both build on ``Dataset.map_batches`` with a callable class, so each actor makes **one client** (the
given client, unpickled in the actor: its token travels in the pickle) and keeps its connections.
The client's rate budget is **split across the actors**: each gets ``1 / concurrency`` of it, so the
whole job keeps to the budget (and each actor still backs off on 429/3040 by Retry-After). Row order
and the other columns are kept.

Failures are per row: by default (``on_error="column"``) a row that could not be done gets NaN (or
None) in the output column and its message in ``error_column`` (None for rows that succeeded);
``on_error="raise"`` fails the job at the first such row instead.

**Checkpoint / resume.** With ``output_path=DIR``, every finished batch of rows is written as
``DIR/<hash>.parquet``, where the hash covers the model, the options (or method) and the batch's input
texts (or the requests ``build`` made; not ``parse``: use a new directory when it changes). A later
run with the same ``output_path`` reads a batch from its file instead of calling the API, so
re-running a job that failed half-way pays only for the batches it had not finished.
Batches with failed rows are not written (a re-run retries them). Batch boundaries come from the
dataset's blocks and ``batch_size``: re-run with the same input and the same ``batch_size``.

**The batch queue.** ``map_model(..., queue=True)`` sends each batch of rows through the async batch
API (``batch_many``: one queued batch per up to 1000 requests, not one call per row), which absorbs
capacity instead of failing on it. With ``output_path`` each batch of rows keeps a journal next to its
checkpoint (``DIR/<hash>.journal``): a re-run after a failed job polls what was already queued and pays
only for the rows that never reached the queue (docs/bulk-queue.md).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, cast

import msgspec
import numpy as np
import ray.data

from . import WorkersAI
from ._batch.embed_rows import embed_rows
from ._batch.many import BatchManyOptions, options_of
from ._batch.wire import require_batch
from ._core.pickling import with_options
from ._core.ratelimit import RateBudget
from .errors import ConfigurationError, WorkersAIError

# pyarrow ships no type information: it is reached through these two untyped handles.
pa: Any = importlib.import_module("pyarrow")
pq: Any = importlib.import_module("pyarrow.parquet")

__all__ = ["embed", "map_model"]

OnError = Literal["column", "raise"]
_ENCODER = msgspec.json.Encoder()


def _actor_client(client: WorkersAI, concurrency: int) -> WorkersAI:
    """A copy of ``client`` whose rate budget is ``1 / concurrency`` of the original's."""
    budget = client.rate_budget
    return with_options(client, rate_limit=RateBudget(budget.limit, scale=budget.scale / concurrency))


def _check(concurrency: int, on_error: str, batch_size: int | None) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if on_error not in ("column", "raise"):
        raise ConfigurationError(f"on_error must be 'column' or 'raise', got {on_error!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
        raise ConfigurationError(f"batch_size must be an int >= 1, got {batch_size!r}")


class _Checkpoint:
    """Finished batches as parquet files named by a hash of their inputs (see the module docs)."""

    def __init__(self, path: str | None, salt: bytes) -> None:
        self.path = path
        self.salt = salt
        if path is not None:
            os.makedirs(path, exist_ok=True)

    def file(self, inputs: Sequence[Any]) -> str | None:
        if self.path is None:
            return None
        digest = hashlib.sha256(self.salt)
        for value in inputs:
            part = _ENCODER.encode(value)
            digest.update(len(part).to_bytes(8, "little") + part)
        return os.path.join(self.path, digest.hexdigest()[:32] + ".parquet")

    def load(self, file: str | None) -> Any:
        if file is None or not os.path.exists(file):
            return None
        return pq.read_table(file)

    def save(self, file: str | None, table: Any) -> None:
        if file is None:
            return
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file), suffix=".part")
        os.close(fd)
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, file)  # all or nothing: a crash never leaves a half-written batch behind
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


class _Embedder:
    """One actor: one client, one handle; embeds each batch's texts into a float32 column."""

    def __init__(
        self,
        client: WorkersAI,
        model: str,
        column: str,
        output_column: str,
        error_column: str,
        on_error: OnError,
        options: Mapping[str, Any] | None,
        request_size: int | None,
        output_path: str | None,
    ) -> None:
        self.handle = client.model(model)
        self.column = column
        self.output_column = output_column
        self.error_column = error_column
        self.on_error = on_error
        self.options = dict(options or {})
        self.request_size = request_size
        salt = _ENCODER.encode(["embed", model, sorted(self.options.items()), request_size])
        self.checkpoint = _Checkpoint(output_path, salt)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) if t is not None else "" for t in batch[self.column].tolist()]
        file = self.checkpoint.file(texts)
        saved = self.checkpoint.load(file)
        vectors: Any
        if saved is not None:
            vectors = _vectors_from(saved.column("vectors"), len(texts))
            errors: list[str | None] = [None] * len(texts)
        else:
            vectors, errors = embed_rows(self.handle, texts, batch_size=self.request_size, options=self.options)
            failed = next((i for i, e in enumerate(errors) if e is not None), None)
            if failed is not None and self.on_error == "raise":
                raise WorkersAIError(f"{self.handle.model_id}: row {failed} of a batch failed: {errors[failed]}")
            if failed is None:
                dim = vectors.shape[1]
                flat = pa.array(vectors.ravel(), type=pa.float32())
                self.checkpoint.save(file, pa.table({"vectors": pa.FixedSizeListArray.from_arrays(flat, dim)}))
        out = dict(batch)
        out[self.output_column] = vectors
        if self.on_error == "column":
            out[self.error_column] = np.array(errors, dtype=object)
        return out


def _vectors_from(column: Any, rows: int) -> np.ndarray:
    array = column.combine_chunks()
    flat: np.ndarray = array.flatten().to_numpy(zero_copy_only=False)
    shaped: np.ndarray = np.reshape(flat.astype(np.float32, copy=False), (rows, int(array.type.list_size)))
    return shaped


def embed(
    ds: ray.data.Dataset,
    model: str,
    column: str = "text",
    *,
    client: WorkersAI,
    output_column: str = "embedding",
    error_column: str = "error",
    on_error: OnError = "column",
    options: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    request_size: int | None = None,
    concurrency: int = 2,
    num_cpus: float = 0.25,
    output_path: str | None = None,
) -> ray.data.Dataset:
    """Embed ``column`` of ``ds`` with ``model``; returns the dataset with a float32 vector column.

    ``output_column`` holds each row's vector as a float32 tensor (NaN for a failed row);
    ``error_column`` (with ``on_error="column"``, the default) the row's error message or None.
    Requests carry ``request_size`` texts (default and upper bound: the model's ``maxItems``, from
    the generated request struct); ``batch_size`` rows go to an actor at a time (default: 4 requests'
    worth). ``concurrency`` actors each use a copy of ``client`` with ``1 / concurrency`` of its rate
    budget; ``num_cpus`` is reserved per actor (they mostly wait on the network). ``output_path``:
    checkpoint directory (see the module docs). The dataset keeps its row order.
    """
    _check(concurrency, on_error, batch_size)
    handle = client.model(model)
    from ._batch.embed_plan import text_batch_limit

    _, limit = text_batch_limit(handle)  # refuses a model without a list-of-texts input, before Ray runs
    rows = batch_size or 4 * (request_size or limit or 100)
    return _map(
        ds,
        _Embedder,
        rows,
        client,
        concurrency,
        num_cpus,
        model=model,
        column=column,
        output_column=output_column,
        error_column=error_column,
        on_error=on_error,
        options=dict(options or {}),
        request_size=request_size,
        output_path=output_path,
    )


def _map(
    ds: ray.data.Dataset, actor: type, rows: int, client: WorkersAI, concurrency: int, num_cpus: float, **kwargs: Any
) -> ray.data.Dataset:
    """``ds`` through a pool of ``concurrency`` ``actor``s, ``rows`` rows at a time, in order; each actor
    made with a copy of ``client`` holding its share of the rate budget and ``kwargs``."""
    ds.context.execution_options.preserve_order = True
    mapper: Any = cast(Any, ds).map_batches  # Ray's own signature is only partly typed
    return cast(
        "ray.data.Dataset",
        mapper(
            actor,
            batch_size=rows,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=concurrency),
            num_cpus=num_cpus,
            fn_constructor_kwargs={"client": _actor_client(client, concurrency), **kwargs},
        ),
    )


class _Mapper:
    """One actor: one client; one request per row, ``threads`` rows at a time."""

    def __init__(
        self,
        client: WorkersAI,
        model: str,
        build: Callable[[dict[str, Any]], Mapping[str, Any]],
        parse: Callable[[Any], Any] | None,
        method: str | None,
        output_column: str,
        error_column: str,
        on_error: OnError,
        threads: int,
        output_path: str | None,
        queue: bool = False,
        queue_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.handle = client.model(model)
        self.queue = queue
        self.queue_options = dict(queue_options or {})
        self.build = build
        self.parse = parse
        self.method = method
        self.output_column = output_column
        self.error_column = error_column
        self.on_error = on_error
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self.checkpoint = _Checkpoint(output_path, _ENCODER.encode(["map", model, method or "", queue]))

    def _value(self, output: Any) -> Any:
        return self.parse(output) if self.parse is not None else _ENCODER.encode(output).decode()

    def _one(self, payload: Mapping[str, Any]) -> tuple[Any, str | None]:
        try:
            if self.method is not None:
                out = getattr(self.handle, self.method)(**payload)
            else:
                out = self.handle.run(payload)
            return self._value(out), None
        except WorkersAIError as exc:
            if self.on_error == "raise":
                raise
            return None, f"{type(exc).__name__}: {exc}"

    def _queued(self, payloads: list[dict[str, Any]], file: str | None) -> list[tuple[Any, str | None]]:
        """The rows through the batch queue, with a journal beside the checkpoint file (resumable)."""
        journal = None if file is None else file[: -len(".parquet")] + ".journal"
        options = {**self.queue_options, "journal": journal}
        items: list[Any] = self.handle._batch_many(payloads, options)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportPrivateUsage]
        out: list[tuple[Any, str | None]] = []
        for item in items:
            if item.success:
                out.append((self._value(item.result), None))
            elif self.on_error == "raise":
                raise WorkersAIError(f"{self.handle.model_id}: row {item.id} of a batch failed: {item.error}")
            else:
                out.append((None, f"BatchItemError: {item.error}"))
        return out

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        names = list(batch)
        count = len(batch[names[0]]) if names else 0
        columns = {name: batch[name].tolist() for name in names}
        payloads = [dict(self.build({name: columns[name][i] for name in names})) for i in range(count)]
        file = self.checkpoint.file(payloads)
        saved = self.checkpoint.load(file)
        if saved is not None:
            values: list[Any] = saved.column("values").to_pylist()
            errors: list[str | None] = [None] * count
        else:
            results = self._queued(payloads, file) if self.queue else list(self.pool.map(self._one, payloads))
            values = [v for v, _ in results]
            errors = [e for _, e in results]
            if all(e is None for e in errors):
                try:
                    self.checkpoint.save(file, pa.table({"values": pa.array(values)}))
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    pass  # values Arrow cannot hold as one column are not checkpointed
        out = dict(batch)
        out[self.output_column] = _object_column(values)
        if self.on_error == "column":
            out[self.error_column] = np.array(errors, dtype=object)
        return out


def _object_column(values: list[Any]) -> np.ndarray:
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def map_model(
    ds: ray.data.Dataset,
    model: str,
    *,
    build: Callable[[dict[str, Any]], Mapping[str, Any]],
    client: WorkersAI,
    parse: Callable[[Any], Any] | None = None,
    method: str | None = None,
    output_column: str = "output",
    error_column: str = "error",
    on_error: OnError = "column",
    batch_size: int = 64,
    concurrency: int = 2,
    threads: int = 4,
    num_cpus: float = 0.25,
    output_path: str | None = None,
    queue: bool = False,
    queue_options: Mapping[str, Any] | None = None,
) -> ray.data.Dataset:
    """Run ``model`` once per row of ``ds``; returns the dataset with ``output_column`` added.

    ``build(row)`` turns a row (a dict of its columns) into the request: the keyword arguments of
    ``method`` (e.g. ``"classify"``, ``"summarize"``, ``"chat"``) or, without a method, the payload of
    ``handle.run``. ``parse(output)`` turns the typed output into the column's value (a string or a
    number is safest; default: the output as JSON text). Each actor sends ``threads`` rows at a time
    through one client with ``1 / concurrency`` of its rate budget. Errors, order and ``output_path``
    as in :func:`embed`.

    ``queue=True`` sends each batch of rows through the async batch queue instead (``build`` then makes
    the request as the model's batch takes it; no ``method``), journaled under ``output_path`` so a re-run
    pays only for rows that never reached the queue. ``queue_options`` go to ``batch_many`` (``timeout``,
    ``poll_interval``, ``item_retries``, ...).
    """
    _check(concurrency, on_error, batch_size)
    if method is not None and not callable(getattr(client.model(model), method, None)):
        raise ConfigurationError(f"{model} has no method {method!r}")
    if isinstance(threads, bool) or threads < 1:
        raise ConfigurationError(f"threads must be an int >= 1, got {threads!r}")
    if queue and method is not None:
        raise ConfigurationError("queue=True sends the requests build() makes as they are: give no method")
    if queue:  # checked here, by batch_many's own rules, not first on a worker
        require_batch(client.model(model), ": it cannot use queue=True")
        options_of(cast(BatchManyOptions, {**(queue_options or {}), "journal": None}))
    return _map(
        ds,
        _Mapper,
        batch_size,
        client,
        concurrency,
        num_cpus,
        model=model,
        build=build,
        parse=parse,
        method=method,
        output_column=output_column,
        error_column=error_column,
        on_error=on_error,
        threads=threads,
        output_path=output_path,
        queue=queue,
        queue_options=dict(queue_options or {}),
    )
