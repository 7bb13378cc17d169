"""The actors of ``workers_ai.ray``: one client each, one batch of rows per call.

Every call goes the same way (:meth:`_Worker.__call__`):

1. **Inputs**: each row's text (embed) or request (``build(row)``).
2. **Checkpoint**: with ``output_path``, a batch seen before is read back; only its failed rows are done
   again (:mod:`.checkpoint`).
3. **Compute** the rows to do, ``threads`` requests in flight, each waiting its turn in the job's shared
   rate budget (embed: requests of ``request_size`` texts; map_model: a request per row, or the batch
   queue with rows merged into requests where the model allows).
4. **Save** the batch, its failed rows' errors with it, and give the budget's unused slots back (the
   actor may wait a while for its next batch: the others use them meanwhile).
5. **Failed rows** fail the job, named (``on_error="raise"``), or go to the error column.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, cast

import msgspec
import numpy as np

from .._batch.embed_rows import embed_rows
from .._batch.packing import pack_rows, packable, unpack
from ..errors import WorkersAIError
from .checkpoint import Checkpoint, attempt_of, errors_of
from .rows import describe_row, rows_failed

if TYPE_CHECKING:
    from .._client import WorkersAI

__all__ = ["Embedder", "Mapper", "OnError"]

pa: Any = importlib.import_module("pyarrow")

OnError = Literal["column", "raise"]
_ENCODER = msgspec.json.Encoder()


class _Worker:
    """What both actors share: the call's steps (see the module docs); the subclasses say what a row's
    input, result and saved form are."""

    input_column = ""  # a column that is the input itself (embed's texts); "" for none

    def __init__(
        self,
        client: WorkersAI,
        model: str,
        output_column: str,
        error_column: str,
        on_error: OnError,
        output_path: str | None,
        salt: list[Any],
        threads: int,
    ) -> None:
        self.client = client
        self.handle: Any = client.model(model)
        self.output_column = output_column
        self.error_column = error_column
        self.on_error = on_error
        self.checkpoint = Checkpoint(output_path, _ENCODER.encode(salt))
        self.pool = ThreadPoolExecutor(max_workers=threads)

    # --------------------------------------------------------------- what a subclass says

    def inputs(self, columns: dict[str, list[Any]], count: int) -> list[Any]:
        raise NotImplementedError

    def empty(self, count: int) -> Any:
        """The results of ``count`` rows before any is done."""
        raise NotImplementedError

    def restore(self, table: Any, count: int) -> Any:
        """The results as saved."""
        raise NotImplementedError

    def compute(
        self, inputs: list[Any], todo: list[int], attempt: int, file: str | None
    ) -> tuple[Any, list[str | None]]:
        """The results and errors of rows ``todo`` (in that order)."""
        raise NotImplementedError

    def merge(self, results: Any, todo: list[int], got: Any, errors: list[str | None]) -> Any:
        """``results`` with rows ``todo`` replaced by ``got`` (``errors``: theirs, which this may add to)."""
        raise NotImplementedError

    def saved(self, results: Any) -> Any:
        """The results as an Arrow column."""
        raise NotImplementedError

    def column(self, results: Any) -> np.ndarray:
        """The results as the output column."""
        raise NotImplementedError

    # --------------------------------------------------------------- the call

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        names = list(batch)
        count = len(batch[names[0]]) if names else 0
        columns = {name: batch[name].tolist() for name in names}
        inputs = self.inputs(columns, count)
        file = self.checkpoint.file(inputs)
        table = self.checkpoint.load(file)
        errors: list[str | None]
        if table is None:
            results, errors, todo = self.empty(count), [cast("str | None", None)] * count, list(range(count))
        else:
            results, errors = self.restore(table, count), errors_of(table, count)
            todo = [i for i, e in enumerate(errors) if e is not None]
        attempt = attempt_of(table)
        if todo:
            try:
                got, got_errors = self.compute(inputs, todo, attempt, file)
            finally:
                self.client.rate_budget.release()  # the next batch may be a while: the other actors use them
            results = self.merge(results, todo, got, got_errors)
            for i, error in zip(todo, got_errors, strict=True):
                errors[i] = error
            kept = self.checkpoint.save(
                file, {"values": self.saved(results), "errors": pa.array(errors, type=pa.string())}, attempt + 1
            )
        else:
            kept = file is not None
        failed = [i for i, e in enumerate(errors) if e is not None]
        if failed and self.on_error == "raise":
            skip = (self.output_column, self.error_column)
            named = [(describe_row(columns, i, skip), str(errors[i])) for i in failed]
            raise rows_failed(self.handle.model_id, count, named, kept and file is not None)
        out = dict(batch)
        out[self.output_column] = self.column(results)
        if self.on_error == "column":
            out[self.error_column] = np.array(errors, dtype=object)
        return out


class Embedder(_Worker):
    """One actor of ``embed``: each batch's texts into a float32 column, ``threads`` requests in flight."""

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
        threads: int = 4,
    ) -> None:
        self.options = dict(options or {})
        self.request_size = request_size
        self.input_column = column
        salt = ["embed", model, sorted(self.options.items()), request_size]
        super().__init__(client, model, output_column, error_column, on_error, output_path, salt, threads)

    def inputs(self, columns: dict[str, list[Any]], count: int) -> list[Any]:
        return [str(t) if t is not None else "" for t in columns[self.input_column]]

    def empty(self, count: int) -> Any:
        return np.full((count, 0), np.nan, dtype=np.float32)

    def restore(self, table: Any, count: int) -> Any:
        column = table.column("values" if "values" in table.column_names else "vectors").combine_chunks()
        if not pa.types.is_fixed_size_list(column.type):  # saved before any row had a vector
            return self.empty(count)
        flat: np.ndarray = column.flatten().to_numpy(zero_copy_only=False)
        width = int(column.type.list_size)
        return np.reshape(flat.astype(np.float32, copy=False), (count, width))

    def compute(
        self, inputs: list[Any], todo: list[int], attempt: int, file: str | None
    ) -> tuple[Any, list[str | None]]:
        texts = [inputs[i] for i in todo]
        return embed_rows(self.handle, texts, batch_size=self.request_size, options=self.options, pool=self.pool)

    def merge(self, results: Any, todo: list[int], got: Any, errors: list[str | None]) -> Any:
        have, new = results.shape[1], got.shape[1]
        if have and new and have != new:  # a width other than the saved rows': these rows fail, those stand
            for k in range(len(todo)):
                if errors[k] is None:
                    errors[k] = f"vectors of {new} dimensions, not {have} as the batch's others"
            new = 0
        width = have or new
        out = results.copy() if have else np.full((len(results), width), np.nan, dtype=np.float32)
        if width:
            out[todo] = got if new else np.nan
        return out

    def saved(self, results: Any) -> Any:
        if results.shape[1] == 0:  # no row has a vector yet (Arrow has no lists of width 0)
            return pa.nulls(len(results), type=pa.float32())
        flat = pa.array(results.ravel(), type=pa.float32())
        return pa.FixedSizeListArray.from_arrays(flat, results.shape[1])

    def column(self, results: Any) -> np.ndarray:
        column: np.ndarray = results
        return column


class Mapper(_Worker):
    """One actor of ``map_model``: a request per row, ``threads`` at a time, or the batch queue."""

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
        self.build = build
        self.parse = parse
        self.method = method
        self.queue = queue
        self.queue_options = dict(queue_options or {})
        salt = ["map", model, method or "", queue]
        super().__init__(client, model, output_column, error_column, on_error, output_path, salt, threads)

    def inputs(self, columns: dict[str, list[Any]], count: int) -> list[Any]:
        names = list(columns)
        return [dict(self.build({name: columns[name][i] for name in names})) for i in range(count)]

    def empty(self, count: int) -> Any:
        return [None] * count

    def restore(self, table: Any, count: int) -> Any:
        values: list[Any] = table.column("values").to_pylist()
        return values

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
            return None, f"{type(exc).__name__}: {exc}"

    def compute(
        self, inputs: list[Any], todo: list[int], attempt: int, file: str | None
    ) -> tuple[Any, list[str | None]]:
        payloads = [inputs[i] for i in todo]
        if self.queue:
            journal = (
                None if file is None else f"{file[: -len('.parquet')]}{'' if attempt == 0 else f'.{attempt}'}.journal"
            )
            results = self._queued(payloads, journal)
        else:
            results = list(self.pool.map(self._one, payloads))
        return [v for v, _ in results], [e for _, e in results]

    def _queued(self, payloads: list[dict[str, Any]], journal: str | None) -> list[tuple[Any, str | None]]:
        """The rows through the batch queue (journaled beside the checkpoint: resumable), merged into requests
        of many texts where the model takes them (:mod:`.._batch.packing`)."""
        options = {**self.queue_options, "journal": journal}
        limit = packable(self.handle, payloads)
        if limit is None:
            items: list[Any] = self.handle._batch_many(payloads, options)  # pyright: ignore[reportUnknownMemberType]
            return [
                (self._value(item.result), None) if item.success else (None, f"BatchItemError: {item.error}")
                for item in items
            ]
        packed = pack_rows(payloads, limit)
        items = self.handle._batch_many([p.request for p in packed], options)  # pyright: ignore[reportUnknownMemberType]
        out: list[tuple[Any, str | None]] = [(None, None)] * len(payloads)
        for group, item in zip(packed, items, strict=True):
            outputs = unpack(item.result, [n for _, n in group.rows]) if item.success else None
            for k, (row, _) in enumerate(group.rows):
                if outputs is not None:
                    out[row] = (self._value(outputs[k]), None)
                else:
                    why = item.error if not item.success else "the reply does not hold a vector for every text"
                    out[row] = (None, f"BatchItemError: {why}")
        return out

    def merge(self, results: Any, todo: list[int], got: Any, errors: list[str | None]) -> Any:
        out = list(results)
        for i, value in zip(todo, got, strict=True):
            out[i] = value
        return out

    def saved(self, results: Any) -> Any:
        return pa.array(results)

    def column(self, results: Any) -> np.ndarray:
        column = np.empty(len(results), dtype=object)
        column[:] = results
        return column
