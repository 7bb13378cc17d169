"""The batch API's wire format, without I/O: encoding the ``{"requests": [...]}`` body (each request
checked against the model's batch item types), and reading the submission, status and result replies.

See :mod:`.jobs` for the protocol and the jobs that poll it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Protocol, TypeVar, cast

import msgspec

from .._core.body import encode_body
from .._core.config import SessionConfig, remember
from .._core.decode import OutputDecoder, split_error
from .._core.envelope import checked
from .._core.error_replies import error_details, format_details
from .._core.jsonview import as_object
from .._core.requests import Reply
from .._core.usage import Usage
from ..errors import BatchItemError, ConfigurationError, ErrorDetail, InputValidationError, ResponseDecodeError

__all__ = [
    "KNOWN",
    "MAX_BATCH_BYTES",
    "PENDING",
    "BatchItem",
    "BatchModel",
    "BatchRequest",
    "BatchResult",
    "BatchStatus",
    "batch_item_types",
    "check_batch_size",
    "encode_requests",
    "require_batch",
    "failure_text",
    "missing_item",
    "request_data",
    "result_object",
    "strip_annotated",
    "submitted_id",
    "union_members",
]


if TYPE_CHECKING:
    pass

T_co = TypeVar("T_co", covariant=True)
OutT = TypeVar("OutT", covariant=True)

PENDING = frozenset({"queued", "running"})
KNOWN = frozenset({"queued", "running", "done", "failed"})
# "Ensure that the total payload is under 10 MB" (batch API docs); kept a little under 10 MiB on purpose.
MAX_BATCH_BYTES = 10_000_000


class BatchModel(Protocol):
    """What encoding and decoding a batch need of a model handle: its session, id, decoder and input types."""

    @property
    def client(self) -> SessionConfig: ...

    @property
    def model_id(self) -> str: ...

    decoder: ClassVar[OutputDecoder]
    batch_input: ClassVar[type[Any] | None]
    input_types: ClassVar[tuple[tuple[type[Any], tuple[str, ...]], ...]]

    def validate(self, request: msgspec.Struct) -> bytes: ...

    def check_schema(self, body: bytes, *, item: bool = False, where: str = "$") -> bool: ...

    def check_value(self, value: Any, *, item: bool = False, where: str = "$") -> bool: ...


class BatchRequest(msgspec.Struct, Generic[T_co], frozen=True):
    """One request of a batch plus the ``external_reference`` the API echoes back on its result.

    Plain request structs and mappings are accepted in a batch too; this wrapper only adds the label.
    """

    request: T_co
    external_reference: str | None = None


class BatchStatus(msgspec.Struct, frozen=True):
    """One poll's answer: ``state`` is queued, running, done or failed, or whatever new word the API used."""

    state: str
    request_id: str
    model: str | None = None
    raw: Any = None

    @property
    def pending(self) -> bool:
        """Still queued or running."""
        return self.state in PENDING

    @property
    def known(self) -> bool:
        """One of the statuses this SDK understands (queued, running, done, failed)."""
        return self.state in KNOWN


class BatchItem(msgspec.Struct, Generic[OutT]):
    """The outcome of one request; ``id`` is its index in the submitted list.

    A failed request is an item with ``success=False`` and its ``errors``, never an exception, so one
    bad request does not hide the others. ``raw`` is the item exactly as the API sent it.
    """

    id: int
    success: bool
    result: OutT | None = None
    external_reference: str | None = None
    errors: list[ErrorDetail] = []
    raw: Any = None

    @property
    def error(self) -> str | None:
        """The errors as one line, or None for a successful item."""
        if self.success:
            return None
        return format_details(self.errors) or "failed without an error message"

    @property
    def output(self) -> OutT:
        """The decoded result of a successful request, with no ``None`` to check; a failed request raises
        :class:`~workers_ai.errors.BatchItemError` naming the item and its errors."""
        if not self.success or self.result is None:
            why = self.error or "succeeded without a result"
            raise BatchItemError(f"batch request {self.id} failed: {why}", item_id=self.id)
        return self.result


class BatchResult(msgspec.Struct, Generic[OutT]):
    """Every item in request order (matched by ``id``, whatever order they came in) and the batch usage.

    ``unmatched`` holds reply entries that could not be placed: no usable id, a duplicate id, or an id
    beyond the number of requests submitted from this process.
    """

    items: list[BatchItem[OutT]]
    usage: Usage | None = None
    request_id: str = ""
    unmatched: list[Any] = []

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[BatchItem[OutT]]:
        return iter(self.items)

    @property
    def ok(self) -> bool:
        """Every item succeeded and nothing was left unmatched."""
        return not self.unmatched and all(i.success for i in self.items)

    @property
    def failed(self) -> list[BatchItem[OutT]]:
        return [i for i in self.items if not i.success]

    @property
    def results(self) -> list[OutT | None]:
        """The decoded results in request order (None where a request failed)."""
        return [i.result for i in self.items]


def missing_item(item_id: int) -> BatchItem[Any]:
    return BatchItem(
        item_id, False, None, None, [ErrorDetail(None, "the finished batch has no response for this request")]
    )


def failure_text(raw: Any) -> str:
    details = error_details(raw)
    obj = as_object(raw)
    if not details and obj is not None and isinstance(obj.get("message"), str):
        details = [ErrorDetail(None, obj["message"])]
    return ": " + format_details(details) if details else ""


def result_object(client: SessionConfig, reply: Reply, model: str, what: str) -> dict[str, Any]:
    """The ``result`` object of an enveloped reply (the envelope is checked by ``_envelope.checked``)."""
    env, messages = checked(reply.status, reply.headers, reply.data, model_id=model, what=f"{what} reply")
    remember(client, reply.status, reply.headers, messages)
    result = as_object(env.get("result"))
    if result is None:
        raise ResponseDecodeError(
            f"{model}: the {what} reply has no result object", status=reply.status, model_id=model, body=reply.data
        )
    return result


# ---------------------------------------------------------------------- submitting


def union_members(tp: Any) -> list[Any]:
    """The members of a (possibly Annotated) union, each still wrapped in its own Annotated."""
    base = typing.get_args(tp)[0] if typing.get_origin(tp) is Annotated else tp
    if typing.get_origin(base) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(base) for m in union_members(arg)]
    return [tp]


def strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp


_ITEM_TYPES: dict[type[Any], tuple[type[Any], ...]] = {}


def require_batch(handle: BatchModel, why: str = "") -> None:
    """``ConfigurationError`` for a model without an async batch (``requests``) input variant."""
    if getattr(handle, "batch_input", None) is None:
        raise ConfigurationError(f"{handle.model_id} has no async batch (`requests`) input variant{why}")


def batch_item_types(handle: BatchModel) -> tuple[type[Any], ...]:
    """The struct types a request in this model's batch may have (from its ``requests`` variant).

    Falls back to the model's ordinary input variants when the handle has no ``batch_input`` type.
    """
    cls = type(handle)
    found = _ITEM_TYPES.get(cls)
    if found is None:
        batch_input: type[Any] | None = getattr(handle, "batch_input", None)
        found = ()
        if batch_input is not None:
            for field in msgspec.structs.fields(batch_input):
                if field.encode_name == "requests":
                    seq = strip_annotated(field.type)
                    args = typing.get_args(seq)
                    if args:
                        found = tuple(
                            m for m in (strip_annotated(a) for a in union_members(args[0])) if isinstance(m, type)
                        )
        if not found:
            found = tuple(c for c, _ in handle.input_types)
        _ITEM_TYPES[cls] = found
    return found


def check_item(handle: BatchModel, data: Mapping[str, Any], kinds: Sequence[type[Any]], where: str) -> None:
    """Raise when ``data`` is no request of the batch: the model's input schema says, or, where none
    ships, the closest of ``kinds`` does."""
    try:
        value = msgspec.to_builtins(data)  # the item as the JSON it is sent as, without a text round trip
    except (TypeError, ValueError):
        value = msgspec.json.decode(encode_body(data, handle.model_id, where))  # raises, naming the model
    if handle.check_value(value, item=True, where=where):
        return
    best: tuple[int, InputValidationError] | None = None
    for cls in kinds:
        try:
            msgspec.convert(data, cls)
            return
        except TypeError:
            return  # a union msgspec cannot check; the server will
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            missing = len(handle.decoder.required_keys(cls) - set(data))
            err = InputValidationError(handle.model_id, where + path[1:], message)
            if best is None or missing < best[0]:
                best = (missing, err)
    if best is not None:
        raise best[1]


def encode_requests(handle: BatchModel, requests: Sequence[Any], beside: Mapping[str, Any] | None = None) -> bytes:
    """The ``{"requests": [...]}`` body (with the payload's other keys ``beside``, as given). Each request (a
    struct, a mapping, or either wrapped in :class:`BatchRequest`) is validated against the model's batch
    item types; errors name ``$.requests[i]`` and the field."""
    if isinstance(requests, (str, bytes, Mapping)) or not isinstance(requests, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InputValidationError(handle.model_id, "$.requests", "expected a list of requests")
    kinds = batch_item_types(handle)
    encoded = [request_data(handle, item, f"$.requests[{i}]", kinds) for i, item in enumerate(requests)]
    return encode_body({**(beside or {}), "requests": encoded}, handle.model_id)


def request_data(handle: BatchModel, item: Any, where: str, kinds: Sequence[type[Any]]) -> dict[str, Any]:
    """One request of a batch as the JSON object it is sent as, validated against the batch item types
    (a struct, a mapping, or either wrapped in :class:`BatchRequest`); errors name ``where`` and the field."""
    if type(item) is dict:  # the usual request, first: a plain mapping, no wrapper
        plain = dict(cast("dict[str, Any]", item))
        if kinds:
            check_item(handle, plain, kinds, where)
        ext = plain.get("external_reference")
        if ext is not None and type(ext) is not str:
            raise InputValidationError(handle.model_id, where + ".external_reference", "must be a string")
        return plain
    ref: Any = None
    if isinstance(item, BatchRequest):
        wrapped: BatchRequest[Any] = item  # pyright: ignore[reportUnknownVariableType]
        ref, item = wrapped.external_reference, wrapped.request
    if isinstance(item, msgspec.Struct):
        try:
            handle.validate(item)
        except InputValidationError as exc:
            raise InputValidationError(handle.model_id, where + exc.path[1:], exc.detail) from None
        data: dict[str, Any] = msgspec.to_builtins(item)
        if kinds and type(item) not in kinds:
            check_item(handle, data, kinds, where)
    elif isinstance(item, Mapping):
        data = dict(cast("Mapping[str, Any]", item))
        if kinds:
            check_item(handle, data, kinds, where)
    else:
        raise InputValidationError(
            handle.model_id, where, f"expected a request struct or mapping, got {type(item).__name__}"
        )
    if ref is not None:
        data["external_reference"] = ref
    ext = data.get("external_reference")
    if ext is not None and not isinstance(ext, str):
        raise InputValidationError(handle.model_id, where + ".external_reference", "must be a string")
    return data


def check_batch_size(model_id: str, body: bytes, max_bytes: int) -> None:
    """Refuse a batch body the API would refuse (10 MB), before anything is sent."""
    if len(body) >= max_bytes:
        raise InputValidationError(
            model_id,
            "$.requests",
            f"the batch body is {len(body):,} bytes; the API takes under {max_bytes:,}: split it into smaller batches",
        )


def submitted_id(model_id: str, client: SessionConfig, reply: Reply) -> str:
    """The ``request_id`` of a batch submission's reply (the envelope checked, ``messages`` kept)."""
    try:
        data = result_object(client, reply, model_id, "batch submission")
    except ResponseDecodeError as exc:
        err = ResponseDecodeError(
            f"{exc}; the batch may have been queued anyway", cf_ray=exc.cf_ray, model_id=model_id, body=exc.body
        )
        err.status = exc.status  # kept out of the message, which already names it
        raise err from None
    request_id = data.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        raise ResponseDecodeError(
            f"{model_id}: the batch submission reply has no request_id (status {data.get('status')!r})",
            status=reply.status,
            model_id=model_id,
        )
    return request_id
