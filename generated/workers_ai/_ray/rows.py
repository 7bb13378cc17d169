"""Rows that failed, never lost quietly: the error a job fails with (``on_error="raise"``, the default), and
the count a job that keeps them in a column reports (``on_error="column"``).

:class:`RowsFailedError` names each failed row of the batch by its columns (shortened) and says why it
failed. With ``on_error="column"`` the helpers run the job, count the rows whose error column is set
(:func:`count_failures`), warn with :class:`RowsFailedWarning` when there are any, and attach the count
to the dataset they return (``workers_ai.ray.failures(ds)``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .._error_base import WorkersAIWarning
from ..errors import WorkersAIError

__all__ = ["RowFailures", "RowsFailedError", "RowsFailedWarning", "count_failures", "describe_row"]

pa: Any = importlib.import_module("pyarrow")
_SHOWN = 5


class RowsFailedError(WorkersAIError):
    """Rows of a batch still failed after the client's retries. ``rows`` holds ``(row, error)`` pairs: the
    row as its columns (shortened), and its error message."""

    def __init__(self, message: str, rows: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.rows = list(rows)

    def __reduce__(self) -> tuple[type[RowsFailedError], tuple[str, list[tuple[str, str]]]]:
        return (RowsFailedError, (str(self), self.rows))


class RowsFailedWarning(WorkersAIWarning):
    """Some rows of a job run with ``on_error="column"`` failed: the warning says how many and which."""


class RowFailures(msgspec.Struct, frozen=True):
    """What failed in a job run with ``on_error="column"``: ``count`` of ``rows`` rows, and the first few as
    ``(row number, error)`` pairs (row numbers count from 0, in the dataset's order)."""

    count: int
    rows: int
    examples: list[tuple[int, str]]


def _short(value: Any, width: int) -> str:
    text = repr(value.tolist() if hasattr(value, "tolist") else value)
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_row(columns: Mapping[str, Any], index: int, skip: Sequence[str] = ()) -> str:
    """Row ``index`` of a batch as ``{column: value}``, each value and the whole shortened."""
    parts = [f"{name!r}: {_short(values[index], 40)}" for name, values in columns.items() if name not in skip]
    return _short_text("{" + ", ".join(parts) + "}", 160)


def _short_text(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def rows_failed(model_id: str, rows: int, failed: Sequence[tuple[str, str]], saved: bool) -> RowsFailedError:
    shown = "; ".join(f"row {row}: {error}" for row, error in failed[:_SHOWN])
    more = f" (and {len(failed) - _SHOWN} more)" if len(failed) > _SHOWN else ""
    after = (
        "the rows that succeeded are saved in output_path: run the job again to retry only the failed ones"
        if saved
        else "give output_path to keep the rows that succeeded, or on_error='column' to keep going"
    )
    return RowsFailedError(
        f"{model_id}: {len(failed)} of {rows} rows of a batch failed after retries: {shown}{more}; {after}", failed
    )


def count_failures(ds: Any, error_column: str) -> RowFailures:
    """Count the rows of a materialized dataset whose ``error_column`` is set (reading that column only)."""
    import ray

    refs: list[Any] = ds.select_columns([error_column]).to_arrow_refs()
    count = 0
    total = 0
    examples: list[tuple[int, str]] = []
    for ref in refs:
        table: Any = ray.get(ref)
        column = table.column(error_column)
        failed = len(column) - column.null_count
        if failed and len(examples) < _SHOWN:
            for offset, error in enumerate(column.to_pylist()):
                if error is not None and len(examples) < _SHOWN:
                    examples.append((total + offset, str(error)))
        count += failed
        total += len(column)
    return RowFailures(count, total, examples)


def failures_warning(model_id: str, failures: RowFailures, error_column: str, checkpointed: bool) -> str:
    shown = "; ".join(f"row {row}: {error}" for row, error in failures.examples)
    again = " Run the job again with the same output_path to retry only them." if checkpointed else ""
    return (
        f"{model_id}: {failures.count} of {failures.rows} rows failed after retries (first: {shown}); "
        f"their errors are in the {error_column!r} column.{again}"
    )
