"""A batch's status reply read in one pass, its results typed once per reply shape: how ``batch_many`` and
``embed_many`` read the batches they poll.

:func:`read_lean` decodes a status reply typed, keeping each successful item's ``result`` as raw JSON
(``msgspec.Raw``, a view of the reply bytes) and reading nothing else of it. It keeps what the careful
reader (``BatchJobBase.read_status``) keeps of a batch: its state (logged when it changes), its usage
(counted once) and the reply's messages; a failed item is read by the careful reader itself, so its error
(code and message) is the one ``BatchJob.wait()`` gives. A reply it cannot read that way (an error, an
odd shape) goes to the careful reader whole.

:class:`ResultTypes` then decodes the raw results into the model's output types straight from the bytes.
The output variant (the schema's outputs are untagged unions, told apart by ``OutputDecoder.pick``) is
decided once per *reply shape*: the result's keys, the JSON types of the values the variants are told
apart by, and the values of their tags. Items of one shape pick the same variant, so the rule runs once
for each shape instead of once per item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from .._core.config import remember
from .._core.decode import decode_typed, split_error
from .._core.usage import usage_from
from ..errors import ErrorDetail, ResponseDecodeError
from .jobs import BatchItem, BatchJobBase, finished_state

if TYPE_CHECKING:
    from .._core.decode import OutputDecoder
    from .._core.requests import Reply

__all__ = ["BatchPoll", "ResultTypes", "read_lean", "result_types"]


class _Item(msgspec.Struct):
    id: Any = None
    success: Any = None
    result: msgspec.Raw = msgspec.Raw(b"null")  # msgspec reads Raw only outside unions
    external_reference: Any = None
    errors: Any = None
    error: Any = None


class _Poll(msgspec.Struct):
    status: Any = None
    model: Any = None
    responses: list[_Item] | None = None
    usage: Any = None


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ANY = msgspec.json.Decoder()


class BatchPoll:
    """One poll of a batch, read lean: ``state``, and once it is done its ``items`` in reply order: a
    successful one with its ``result`` as raw JSON, a failed one as the careful reader words it."""

    __slots__ = ("items", "state")

    def __init__(self, state: str, items: list[BatchItem[Any]] | None) -> None:
        self.state = state
        self.items = items


def read_lean(job: BatchJobBase[Any], reply: Reply, types: ResultTypes | None = None) -> BatchPoll:
    """A status reply read lean (see the module docs; no I/O). With ``types``, each successful item's
    result is typed (:meth:`ResultTypes.decode`; one that does not fit fails its item), else raw."""
    fast = decode_typed(reply.data, _Poll)
    if fast is None or fast[0].responses is None:
        return _read_careful(job, reply, types)
    poll, messages = fast
    remember(job.handle.client, reply.status, reply.headers, messages)
    responses = poll.responses or []
    model_id = job.model
    items: list[BatchItem[Any]] = []
    append = items.append
    entries: list[Any] | None = None  # the reply as plain JSON, read only when an item failed
    general = types.decode if types is not None else None
    quick = types.quick if types is not None else None  # the result's keys alone pick its variant
    top_of = _TOP.decode
    for pos, item in enumerate(responses):
        item_id = item.id if type(item.id) is int else pos
        ref = item.external_reference if type(item.external_reference) is str else None
        result: Any = item.result
        if item.success is False or item.errors or item.error or result == _NULL:
            # The careful reader words the error (and keeps its code) as BatchJob.wait() reports it, from the
            # item exactly as the API sent it.
            if entries is None:
                entries = _entries(reply.data)
            append(job._decode_item(item_id, entries[pos]))  # pyright: ignore[reportPrivateUsage]
            continue
        if general is not None:
            try:
                picked = None
                if quick is not None:
                    try:
                        top = top_of(result)
                        picked = quick(tuple(top)) if len(top) != 1 or "result" not in top else None
                    except msgspec.ValidationError:  # not an object
                        pass
                if type(picked) is msgspec.json.Decoder:
                    try:
                        result = picked.decode(result)
                    except msgspec.ValidationError:
                        result = general(result, model_id)  # the general path words the error
                else:
                    result = general(result, model_id)
            except ResponseDecodeError as exc:
                if entries is None:
                    entries = _entries(reply.data)
                append(BatchItem(item_id, False, None, ref, [ErrorDetail(None, str(exc))], entries[pos]))
                continue
        append(BatchItem(item_id, True, result, ref))
    job.count_usage(usage_from(poll.usage), len(responses))
    state = finished_state(poll.status)
    job.settle(state, poll.model, {"status": poll.status, "request_id": job.request_id, "model": poll.model})
    return BatchPoll(state, items)


def _entries(data: bytes) -> list[Any]:
    """The ``responses`` of a reply the lean pass read, as plain JSON (for the items that failed)."""
    env: Any = _ANY.decode(data)
    responses: list[Any] = env["result"]["responses"]
    return responses


def _read_careful(job: BatchJobBase[Any], reply: Reply, types: ResultTypes | None) -> BatchPoll:
    """A reply the lean pass cannot read (an error, an odd shape), read by ``BatchJobBase.read_status``."""
    st = job.read_status(reply)
    result = job.result
    if result is None:
        return BatchPoll(st.state, None)
    if types is not None:
        return BatchPoll(st.state, list(result.items))
    raw = [
        BatchItem(i.id, True, msgspec.Raw(msgspec.json.encode(i.result)), i.external_reference) if i.success else i
        for i in result.items
    ]
    return BatchPoll(st.state, raw)


_NULL = msgspec.Raw(b"null")
_KIND = {ord("{"): "object", ord('"'): "string", ord("t"): "boolean", ord("f"): "boolean", ord("n"): "null",
         ord("["): "array"}  # fmt: skip
_SPACE = frozenset(b" \t\r\n")


def _kind(raw: msgspec.Raw) -> str:
    """The JSON type of a raw value as ``json_shape`` names it (an array by its first element's type)."""
    view = memoryview(raw)
    kind = _KIND.get(view[0], "number")
    if kind != "array":
        return kind
    rest = bytes(view[1:64]).lstrip() if len(view) > 1 and view[1] in _SPACE else bytes(view[1:2])
    return "array" if not rest or rest[0] == ord("]") else "array<" + _KIND.get(rest[0], "number") + ">"


class ResultTypes:
    """Raw results into one model's output types (see the module docs). One per output decoder."""

    def __init__(self, decoder: OutputDecoder) -> None:
        self.decoder = decoder
        self.checks, self.tags = decoder.told_apart_by()
        self._picked: dict[Any, msgspec.json.Decoder[Any] | type[Any] | None] = {}
        # With no checks or tags, a result's keys alone are its shape: ``quick(keys)`` gives the decoder it
        # was decided for (None when not decided yet); :func:`read_lean` looks it up without the general path.
        self.quick = self._picked.get if decoder.variants and not self.checks and not self.tags else None

    def decode(self, raw: msgspec.Raw, model_id: str) -> Any:
        """The typed output; ``ResponseDecodeError`` as ``OutputDecoder.decode`` raises it."""
        decoder = self.decoder
        if not decoder.variants:
            return _ANY.decode(raw)
        shape, raw = self._shape(raw)
        picked = self._picked.get(shape, _UNSEEN)
        if picked is _UNSEEN:
            picked = self._picked[shape] = self._choose(_ANY.decode(raw))
        if isinstance(picked, msgspec.json.Decoder):
            try:
                return picked.decode(raw)
            except msgspec.ValidationError as exc:
                path, message = split_error(exc)
                name = getattr(picked.type, "__name__", "the output")
                raise ResponseDecodeError(
                    f"{model_id}: result does not fit {name} at {path}: {message}", model_id=model_id
                ) from None
        return decoder.decode(_ANY.decode(raw), model_id)  # no variant fits (it raises), or a type msgspec
        # cannot decode from JSON: the careful way

    def _choose(self, value: Any) -> msgspec.json.Decoder[Any] | type[Any] | None:
        cls = self.decoder.pick(value)
        if cls is None:
            return None
        try:
            return msgspec.json.Decoder(cls)
        except TypeError:
            return cls

    def _shape(self, raw: msgspec.Raw) -> tuple[Any, msgspec.Raw]:
        """What the variant depends on, and the result itself (a result nested once more is unwrapped)."""
        try:
            top = _TOP.decode(raw)
        except msgspec.ValidationError:  # not an object
            return _kind(raw), raw
        if len(top) == 1 and "result" in top:
            return self._shape(top["result"])  # some batch replies nest each result once more
        if not self.checks and not self.tags:
            return tuple(top), raw
        shape: list[Any] = list(top)
        for key in self.checks:
            value = top.get(key)
            shape.append(None if value is None else _kind(value))
        for key in self.tags:
            value = top.get(key)
            shape.append(None if value is None else bytes(value))
        return tuple(shape), raw


_UNSEEN: Any = object()
_TYPES: dict[int, ResultTypes] = {}


def result_types(decoder: OutputDecoder) -> ResultTypes:
    """The (cached) :class:`ResultTypes` of ``decoder``."""
    found = _TYPES.get(id(decoder))
    if found is None or found.decoder is not decoder:
        found = _TYPES[id(decoder)] = ResultTypes(decoder)
    return found
