"""Embedding replies decoded straight into float32 arrays, one request at a time.

The bulk paths (``embed_many(..., as_numpy=True)``, :mod:`._embed_rows`, :mod:`workers_ai.ray`) never
hold a job's vectors as Python lists: 10,000 x 1024 floats are 40 MB as float32 and about 330 MB as
lists. A batch status reply is read with one typed pass that keeps each item's result as raw JSON
(``msgspec.Raw``, a view of the reply bytes); each item's vectors are then decoded and copied into their
rows of the output array before the next item is touched. numpy is imported only here, on first use
(``import workers_ai`` does not import it; the ``ray`` extra installs it).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

import msgspec

from .._core.config import remember
from .._core.decode import decode_typed
from .._core.requests import Reply
from ..errors import ConfigurationError
from .jobs import BatchJobBase


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


__all__ = ["F32", "BatchPoll", "as_block", "decode_block", "numpy", "read_lean"]


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


class _Poll(msgspec.Struct):
    status: Any = None
    responses: list[msgspec.Raw] | None = None


class _Item(msgspec.Struct):
    id: Any = None
    success: Any = None
    result: msgspec.Raw = msgspec.Raw(b"null")  # msgspec reads Raw only outside unions
    errors: Any = None
    error: Any = None


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


class BatchPoll:
    """One poll of a batch, read leanly: ``state``, and when done ``items`` as ``(id, raw result or
    None, error message)`` triples (ids in request order when the reply gives none)."""

    __slots__ = ("items", "state")

    def __init__(self, state: str, items: list[tuple[int, msgspec.Raw | None, str]] | None) -> None:
        self.state = state
        self.items = items


_PENDING = frozenset({"queued", "running"})


def read_lean(job: BatchJobBase[Any], reply: Reply) -> BatchPoll:
    """A status reply read lean (no I/O). A successful envelope is read in one typed pass with each
    item's result kept raw; anything else (errors, odd shapes) goes through the job's own careful reader."""
    fast = decode_typed(reply.data, _Poll)
    if fast is None or fast[0].responses is None:
        st = job.read_status(reply)
        result = job.result
        if result is None:
            return BatchPoll(st.state, None)
        items: list[tuple[int, msgspec.Raw | None, str]] = []
        for item in result.items:
            raw = msgspec.Raw(msgspec.json.encode(item.result)) if item.success else None
            items.append((item.id, raw, item.error or ""))
        return BatchPoll(st.state, items)
    poll, messages = fast
    remember(job.handle.client, reply.status, reply.headers, messages)
    items = []
    for pos, raw_item in enumerate(poll.responses or []):
        try:
            item = msgspec.json.decode(raw_item, type=_Item)
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
        item_id = item.id if isinstance(item.id, int) and not isinstance(item.id, bool) else pos
        failed = item.success is False or bool(item.errors) or bool(item.error) or bytes(item.result) == b"null"
        if failed:
            # The careful reader words the error the same way BatchJob.wait() reports it.
            detail = job._decode_item(item_id, msgspec.json.decode(raw_item))  # pyright: ignore[reportPrivateUsage]
            items.append((item_id, None, detail.error or "the request failed"))
        else:
            items.append((item_id, item.result, ""))
    state = poll.status if isinstance(poll.status, str) and poll.status and poll.status not in _PENDING else "done"
    return BatchPoll(state, items)
