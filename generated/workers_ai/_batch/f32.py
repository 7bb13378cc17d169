"""Embedding replies decoded straight into float32 arrays, one request at a time.

The bulk paths (``embed_many(..., as_numpy=True)``, :mod:`._embed_rows`, :mod:`workers_ai.ray`) never
hold a job's vectors as Python lists: 10,000 x 1024 floats are 40 MB as float32 and about 330 MB as
lists. A batch status reply is read with one typed pass that keeps each item's result as raw JSON
(``msgspec.Raw``, a view of the reply bytes: :mod:`.lean`); each item's vectors are then decoded and
copied into their rows of the output array before the next item is touched. numpy is imported only here, on first use
(``import workers_ai`` does not import it; the ``ray`` extra installs it).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

import msgspec

from ..errors import ConfigurationError


class F32(Protocol):
    """A ``(rows, dim)`` float32 numpy array, typed by what it offers so that a type checker following
    this package's imports never loads numpy (pass it to numpy, which takes anything with ``__array__``)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def flags(self) -> Any: ...
    @property
    def ndim(self) -> int: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: Any, /) -> Any: ...
    def __setitem__(self, key: Any, value: Any, /) -> None: ...
    def __array__(self, dtype: Any = ..., /, *, copy: Any = ...) -> Any: ...
    def ravel(self) -> Any: ...
    def tolist(self) -> Any: ...


__all__ = ["F32", "as_block", "decode_block", "numpy"]


def numpy() -> Any:
    """numpy, imported on first use, or a clear error naming the extra that installs it."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        raise ConfigurationError("numpy is needed for float32 vectors: pip install 'workers-ai[ray]'") from None


class _Vectors(msgspec.Struct):
    """An embedding result, read for its ``data`` only."""

    data: list[list[float]]


class _Nested(msgspec.Struct):
    result: _Vectors


def as_block(data: Any, count: int) -> F32 | None:
    """``count`` vectors of one length (a list of lists) as a ``(count, dim)`` float32 array, or None."""
    if not isinstance(data, list) or len(data) != count:  # pyright: ignore[reportUnknownArgumentType]
        return None
    np = numpy()
    try:
        block: F32 = np.asarray(data, dtype=np.float32)
    except (ValueError, TypeError):
        return None
    return block if block.ndim == 2 or (count == 0) else None


def decode_block(raw: msgspec.Raw | bytes, count: int) -> F32 | None:
    """One embedding result as JSON (``{"data": [[...], ...]}``, maybe nested once in ``result``) as a
    ``(count, dim)`` float32 array; None when it is not ``count`` vectors of one length."""
    try:
        data = msgspec.json.decode(raw, type=_Vectors).data
    except msgspec.ValidationError:
        try:
            data = msgspec.json.decode(raw, type=_Nested).result.data
        except msgspec.ValidationError:
            return None
    except msgspec.DecodeError:
        return None
    return as_block(data, count)
