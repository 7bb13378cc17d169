"""Bulk inference on Ray Data: :func:`embed` and :func:`map_model` (``pip install 'workers-ai[ray]'``).

Both build on ``Dataset.map_batches`` with a callable class, so each actor makes **one client** (the
given client, unpickled in the actor: its token travels in the pickle) and keeps its connections. Row
order and the other columns are kept.

**One rate budget for the job.** The client's ``rate_limit`` (the published limits by default) is the
budget of the whole job, never split: every actor's requests take their turn from one schedule per model,
kept by one small actor of the job (:func:`cluster_budget`), in leases of a few slots so a request does
not wait on a round trip. However many actors run, the job keeps to the limit; an actor that dies, is
restarting, was never placed (too few CPUs) or waits for work leaves its share to the others; a 429 or
3040 with ``Retry-After`` slows every actor. Pass the client with the account's whole limit: a client
already holding a Ray job's budget keeps it, a host budget becomes a job budget of the same limits, and
a budget that is a share of its limit (``RateBudget.scaled``) is warned about and used as it is. The
helper logs the budget it uses (INFO, ``workers_ai`` logger).

**Nothing lost quietly.** A row that still fails after the client's retries fails the job by default
(``on_error="raise"``) with a :class:`RowsFailedError` naming the rows (their columns, shortened) and
their errors, once the rest of its batch is done and saved. With ``on_error="column"`` the helper runs
the job before returning (to count), puts each failed row's error in ``error_column`` (NaN vector or None
value), warns with :class:`RowsFailedWarning` saying how many rows failed, and :func:`failures` gives the
count for the returned dataset.

**Checkpoint / resume.** With ``output_path=DIR``, every batch of rows is written as ``DIR/<hash>.parquet``
with its failed rows' errors, where the hash covers the model, the options (or method) and the batch's
input texts (or the requests ``build`` made; not ``parse``: use a new directory when it changes). A later
run with the same ``output_path`` reads each batch from its file and calls the API only for the rows that
failed (or batches never written). Batch boundaries come from the dataset's blocks and ``batch_size``:
re-run with the same input and the same ``batch_size``.

**The batch queue.** ``map_model(..., queue=True)`` sends each batch of rows through the async batch API
(``batch_many``), which absorbs capacity instead of failing on it. For models whose batch requests take a
list of texts (the bge embedding models) the rows are merged into requests of up to ``maxItems`` texts,
so 1,000 rows are ten requests in one queued batch. With ``output_path`` each batch of rows keeps a
journal next to its checkpoint: a re-run after a failed job polls what was already queued and pays only
for the rows that never reached the queue (docs/bulk-queue.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import ray.data

from ._batch.many import BatchManyOptions, options_of
from ._batch.wire import require_batch
from ._core.pickling import with_options
from ._core.warn import warn_user
from ._ray.actors import Embedder, Mapper, OnError
from ._ray.budget import cluster_budget, job_budget
from ._ray.rows import RowFailures, RowsFailedError, RowsFailedWarning, count_failures, failures_warning
from .errors import ConfigurationError

if TYPE_CHECKING:
    from . import WorkersAI

__all__ = [
    "RowFailures",
    "RowsFailedError",
    "RowsFailedWarning",
    "cluster_budget",
    "embed",
    "failures",
    "map_model",
]

_FAILURES = "_workers_ai_failures"


def _count(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be an int >= 1, got {value!r}")


def _check(concurrency: int, on_error: str, batch_size: int | None, threads: int) -> None:
    _count(concurrency, "concurrency")
    _count(threads, "threads")
    if batch_size is not None:
        _count(batch_size, "batch_size")
    if on_error not in ("column", "raise"):
        raise ConfigurationError(f"on_error must be 'column' or 'raise', got {on_error!r}")


def failures(ds: ray.data.Dataset) -> RowFailures | None:
    """What failed in a dataset returned by :func:`embed` or :func:`map_model` with ``on_error="column"``:
    how many rows, of how many, and the first few (row number, error); None for any other dataset."""
    found: RowFailures | None = getattr(ds, _FAILURES, None)
    return found


def embed(
    ds: ray.data.Dataset,
    model: str,
    column: str = "text",
    *,
    client: WorkersAI,
    output_column: str = "embedding",
    error_column: str = "error",
    on_error: OnError = "raise",
    options: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    request_size: int | None = None,
    concurrency: int = 2,
    threads: int = 4,
    num_cpus: float = 0.25,
    output_path: str | None = None,
) -> ray.data.Dataset:
    """Embed ``column`` of ``ds`` with ``model``; returns the dataset with a float32 vector column.

    ``output_column`` holds each row's vector as a float32 tensor. Requests carry ``request_size`` texts
    (default and upper bound: the model's ``maxItems``, from the generated request struct); ``batch_size``
    rows go to an actor at a time (default: ``threads`` requests' worth, at least 4), and each actor keeps
    ``threads`` requests in flight. ``concurrency`` actors share the client's rate budget as one budget for
    the job (see the module docs); ``num_cpus`` is reserved per actor (they mostly wait on the network).
    ``on_error``: ``"raise"`` (default) fails the job naming the failed rows; ``"column"`` runs the job,
    gives a failed row NaN and its message in ``error_column`` (None for rows that succeeded) and reports
    the count (:func:`failures`). ``output_path``: checkpoint directory (see the module docs). The dataset
    keeps its row order.
    """
    _check(concurrency, on_error, batch_size, threads)
    handle = client.model(model)
    from ._batch.embed_plan import text_batch_limit

    _, limit = text_batch_limit(handle)  # refuses a model without a list-of-texts input, before Ray runs
    rows = batch_size or max(4, threads) * (request_size or limit or 100)
    out = _map(
        ds,
        Embedder,
        rows,
        client,
        model,
        concurrency,
        num_cpus,
        column=column,
        output_column=output_column,
        error_column=error_column,
        on_error=on_error,
        options=dict(options or {}),
        request_size=request_size,
        output_path=output_path,
        threads=threads,
    )
    return _finish(out, model, on_error, error_column, output_path)


def _map(
    ds: ray.data.Dataset,
    actor: type,
    rows: int,
    client: WorkersAI,
    model: str,
    concurrency: int,
    num_cpus: float,
    **kwargs: Any,
) -> ray.data.Dataset:
    """``ds`` through a pool of ``concurrency`` ``actor``s, ``rows`` rows at a time, in order; each actor
    made with a copy of ``client`` holding the job's shared rate budget, and ``kwargs``."""
    ds.context.execution_options.preserve_order = True
    shared = with_options(client, rate_limit=job_budget(client, model, concurrency))
    mapper: Any = cast(Any, ds).map_batches  # Ray's own signature is only partly typed
    return cast(
        "ray.data.Dataset",
        mapper(
            actor,
            batch_size=rows,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=concurrency),
            num_cpus=num_cpus,
            fn_constructor_kwargs={"client": shared, "model": model, **kwargs},
        ),
    )


def _finish(
    out: ray.data.Dataset, model: str, on_error: OnError, error_column: str, output_path: str | None
) -> ray.data.Dataset:
    """With ``on_error="column"``: the job run, its failed rows counted, said (a warning) and kept on the
    dataset (:func:`failures`). Otherwise the lazy dataset as it is (a failed row fails it)."""
    if on_error != "column":
        return out
    done: Any = cast(Any, out).materialize()
    found = count_failures(done, error_column)
    setattr(done, _FAILURES, found)  # an attribute Ray's class does not declare
    if found.count:
        warn_user(failures_warning(model, found, error_column, output_path is not None), RowsFailedWarning)
    result: ray.data.Dataset = done
    return result


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
    on_error: OnError = "raise",
    batch_size: int | None = None,
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
    number is safest; default: the output as JSON text). Each actor sends ``threads`` rows at a time;
    ``batch_size`` rows go to an actor at a time (default 64). The actors share the client's rate budget
    as one budget for the job. Errors, order and ``output_path`` as in :func:`embed`.

    ``queue=True`` sends each batch of rows through the async batch queue instead (``build`` then makes
    the request as the model's batch takes it; no ``method``), journaled under ``output_path`` so a re-run
    pays only for rows that never reached the queue; ``batch_size`` defaults to 1000 rows (one queued
    batch), and rows of models whose requests take a list of texts are merged into requests of up to
    ``maxItems`` texts. ``queue_options`` go to ``batch_many`` (``timeout``, ``poll_interval``,
    ``item_retries``, ...).
    """
    _check(concurrency, on_error, batch_size, threads)
    if method is not None and not callable(getattr(client.model(model), method, None)):
        raise ConfigurationError(f"{model} has no method {method!r}")
    if queue and method is not None:
        raise ConfigurationError("queue=True sends the requests build() makes as they are: give no method")
    if queue:  # checked here, by batch_many's own rules, not first on a worker
        require_batch(client.model(model), ": it cannot use queue=True")
        options_of(cast(BatchManyOptions, {**(queue_options or {}), "journal": None}))
    out = _map(
        ds,
        Mapper,
        batch_size or (1000 if queue else 64),
        client,
        model,
        concurrency,
        num_cpus,
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
    return _finish(out, model, on_error, error_column, output_path)
