"""Model handles: what ``ai.model(id)`` returns, and the output-union decoder generated modules use."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

import msgspec

from ._binary import BinaryInput, BinaryOutput, read_binary
from ._envelope import content_type_of, unwrap
from ._json import as_list, as_object
from .errors import InputValidationError, ResponseDecodeError, StreamError

if TYPE_CHECKING:
    import urllib3

    from ._batch import BatchJob
    from ._chunking import BatchProgress
    from ._core import BaseClient
    from ._stream import EventStream

__all__ = ["GenericHandle", "ModelHandle", "ModelInfo", "OutputDecoder"]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
T = TypeVar("T")

_JSON = "application/json"
_SSE = "text/event-stream"


class ModelInfo(msgspec.Struct, frozen=True):
    """What the catalog says about a model: task, description, price and properties."""

    model_id: str
    task: str = ""
    description: str = ""
    price: Any = ()
    properties: Any = None
    schema: str = ""


class _Envelope(msgspec.Struct, Generic[T]):
    result: T | None = None
    success: bool = True
    errors: Any = None
    messages: Any = None


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}
_VALIDATORS: dict[type[Any], msgspec.json.Decoder[Any] | None] = {}
_ENCODER = msgspec.json.Encoder()


def _envelope_decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    dec = _DECODERS.get(tp)
    if dec is None:
        dec = _DECODERS[tp] = msgspec.json.Decoder(_Envelope[tp])
    return dec


def validator_for(tp: type[Any]) -> msgspec.json.Decoder[Any] | None:
    if tp not in _VALIDATORS:
        try:
            _VALIDATORS[tp] = msgspec.json.Decoder(tp)
        except TypeError:  # a union msgspec cannot decode; such variants are validated per item
            _VALIDATORS[tp] = None
    return _VALIDATORS[tp]


def split_error(exc: Exception) -> tuple[str, str]:
    text = str(exc)
    if " - at `" in text:
        message, _, path = text.rpartition(" - at `")
        return path.rstrip("`"), message
    return "$", text


def _json_shape(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        if not value:
            return "array"
        return f"array<{_json_shape(value[0]).split('<')[0]}>"  # pyright: ignore[reportUnknownArgumentType]
    return "any"


class OutputDecoder:
    """Decodes a result into the output variant its JSON shape says it is.

    msgspec cannot decode a union of untagged structs, so the generator emits ``rules`` from the
    schema: each is ``(variant index, json type, keys only that variant has, (key, shape) checks)``.
    A candidate must have the right JSON type and pass its shape checks; among those, one carrying a
    key only it declares wins, then the one declaring the largest share of the value's keys. Keys
    nobody declares are ignored, so fields the API adds later never break decoding.
    """

    def __init__(
        self,
        *,
        variants: Sequence[type[Any]],
        rules: Sequence[tuple[Any, ...]],
        indexes: Sequence[int],
        binary_types: Sequence[str] = (),
        streams: bool = False,
        name: str = "Output",
    ) -> None:
        by_index = dict(zip(indexes, variants, strict=True))
        self.variants = tuple(variants)
        self.binary_types = tuple(binary_types)
        self.streams = streams
        self.name = name
        # An optional fifth item lists (key, values) pairs: a value only this variant declares for that key.
        self._rules = [
            (by_index[r[0]], r[1], tuple(r[2]), tuple(r[3]), tuple(r[4]) if len(r) > 4 else ())
            for r in rules
            if r[0] in by_index
        ]
        self._keys: dict[type[Any], frozenset[str]] = {}
        self._needs: dict[type[Any], frozenset[str]] = {}

    def _declared(self, cls: type[Any]) -> frozenset[str]:
        keys = self._keys.get(cls)
        if keys is None:
            try:
                keys = frozenset(f.encode_name for f in msgspec.structs.fields(cls))
            except TypeError:
                keys = frozenset[str]()
            self._keys[cls] = keys
        return keys

    def required_keys(self, cls: type[Any]) -> frozenset[str]:
        keys = self._needs.get(cls)
        if keys is None:
            try:
                keys = frozenset(f.encode_name for f in msgspec.structs.fields(cls) if f.required)
            except TypeError:
                keys = frozenset[str]()
            self._needs[cls] = keys
        return keys

    def pick(self, value: Any) -> type[Any] | None:
        """The variant class ``value`` belongs to, or None when no variant fits its JSON type."""
        shape = _json_shape(value)
        kind = shape.split("<")[0]
        best: tuple[float, int] | None = None
        chosen: type[Any] | None = None
        for order, (cls, json_type, unique, checks, tags) in enumerate(self._rules):
            if json_type not in (kind, "any") and not (json_type == "integer" and kind == "number"):
                continue
            if kind == "object":
                ok = True
                for key, want in checks:
                    if key in value:
                        got = _json_shape(value[key])
                        if (
                            got != want
                            and got not in ("null", "array")
                            and not (got == "array" and want.startswith("array"))
                        ):
                            ok = False
                            break
                if not ok:
                    continue
                declared = self._declared(cls)
                has_unique = any(k in value for k in unique)
                share = (sum(1 for k in value if k in declared) / len(value)) if value else 0.0
                tagged = any(k in value and value[k] in allowed for k, allowed in tags)
                score = (4.0 if tagged else 0.0) + (2.0 if has_unique else 0.0) + share
                if any(k not in value for k in self.required_keys(cls)):
                    score -= 8.0  # it would not decode; only a last resort
            else:
                score = 1.0
            if best is None or score > best[0]:
                best, chosen = (score, -order), cls
        return chosen

    def decode(self, value: Any, model_id: str) -> Any:
        if not self.variants:
            return value
        cls = self.pick(value)
        if cls is None:
            raise ResponseDecodeError(
                f"{model_id}: the result matches no variant of {self.name} (got JSON {_json_shape(value)})",
                model_id=model_id,
            )
        try:
            return msgspec.convert(value, cls)
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            raise ResponseDecodeError(
                f"{model_id}: result does not fit {cls.__name__} at {path}: {message}", model_id=model_id
            ) from None


class ModelHandle(Generic[InT, OutT]):
    """Base of every generated model handle: validation, encoding, the call and decoding.

    Subclasses add one method per input variant of the model's schema.
    """

    info: ClassVar[ModelInfo] = ModelInfo(model_id="")
    decoder: ClassVar[OutputDecoder] = OutputDecoder(variants=(), rules=(), indexes=())
    input_types: ClassVar[tuple[tuple[type[Any], tuple[str, ...]], ...]] = ()
    batch_input: ClassVar[type[Any] | None] = None  # the `{"requests": [...]}` variant, when the model has one

    def __init__(self, client: BaseClient, model_id: str | None = None) -> None:
        self.client = client
        self.model_id = model_id or self.info.model_id
        self._url: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id}>"

    # ------------------------------------------------------------------ public

    def run(self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> OutT:
        """Run with a request struct or a plain mapping; returns the decoded output variant."""
        if isinstance(payload, (bytes, bytearray, memoryview)) or hasattr(payload, "read"):
            binary = cast("BinaryInput", payload)
            result: OutT = self._call_binary(binary, None, headers=headers)
            return result
        body = self.encode_input(payload)
        return self._send_and_decode(body, None, headers=headers)

    def stream(self, payload: InT | Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> EventStream:
        """Run with ``stream: true`` and iterate the server-sent events."""
        from ._stream import EventStream

        if isinstance(payload, msgspec.Struct):
            data: Any = msgspec.to_builtins(payload)
        elif isinstance(payload, Mapping):
            data = dict(payload)  # pyright: ignore[reportUnknownArgumentType]
        else:
            raise TypeError("stream() takes a request struct or a mapping")
        data["stream"] = True
        body = self.encode_input(data)
        resp = self._post(body, stream=True, headers=headers)
        return EventStream(resp, model_id=self.model_id, client=self.client)

    def submit_batch(self, payload: Any, *, headers: Mapping[str, str] | None = None) -> BatchJob[OutT]:
        """Queue ``{"requests": [...]}`` with the async batch API."""
        value: object = payload
        source = as_object(value)
        requests = as_list(source.get("requests") if source is not None else getattr(value, "requests", None))
        if requests is None:
            raise InputValidationError(self.model_id, "$.requests", "a batch needs a `requests` list")
        return self._submit_batch(requests, headers=headers)

    def batch_job(self, request_id: str) -> BatchJob[OutT]:
        """A job for an already queued ``request_id``."""
        from ._batch import BatchJob

        return BatchJob(self, request_id)

    def embed_many(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        options: Mapping[str, Any] | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        timeout: float = 3600.0,
        poll_interval: float = 1.0,
    ) -> list[list[float]]:
        """Embed any number of texts through the async batch API; one vector per text, in input order.

        For models with a batch (``requests``) variant whose requests take a list of ``text`` (the bge
        embedding models); others raise ``ConfigurationError``. The texts are split into requests of at
        most ``batch_size`` strings (default and upper bound: the schema's ``maxItems``), grouped into
        batches under 10 MB each, submitted, polled together until done, and put back in order.
        ``options`` are extra request fields (e.g. ``{"pooling": "cls"}``); ``on_progress`` gets a
        ``BatchProgress`` after every polling round. Failed requests raise ``BatchItemsError`` carrying
        the vectors that did arrive; the deadline raises ``BatchTimeoutError`` naming the unfinished
        request ids (resume them with :meth:`batch_job`).
        """
        from ._chunking import embed_many

        return embed_many(
            self,
            texts,
            batch_size=batch_size,
            options=options,
            on_progress=on_progress,
            timeout=timeout,
            poll_interval=poll_interval,
        )

    # ------------------------------------------------------------------ encoding and validation

    def validate(self, request: msgspec.Struct) -> bytes:
        """Encode ``request`` and check it against the schema constraints; returns the JSON body."""
        body = _ENCODER.encode(request)
        checker = validator_for(type(request))
        if checker is not None:
            try:
                checker.decode(body)
            except msgspec.ValidationError as exc:
                path, message = split_error(exc)
                raise InputValidationError(self.model_id, path, message) from None
        return body

    def encode_input(self, payload: Any) -> bytes:
        """The JSON body for a struct or mapping payload, validated against its input variant."""
        if isinstance(payload, msgspec.Struct):
            return self.validate(payload)
        if not isinstance(payload, Mapping):
            raise InputValidationError(
                self.model_id, "$", f"expected a mapping or request struct, got {type(payload).__name__}"
            )
        data: Mapping[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
        if self.input_types:
            self._check_mapping(data)
        try:
            return _ENCODER.encode(data)
        except TypeError as exc:
            raise InputValidationError(self.model_id, "$", f"not JSON-serialisable: {exc}") from None

    def _check_mapping(self, data: Mapping[str, Any]) -> type[Any]:
        matching = [(cls, req) for cls, req in self.input_types if all(k in data for k in req)]
        if not matching:
            wants = "; ".join(f"{cls.__name__} needs {', '.join(req) or 'nothing'}" for cls, req in self.input_types)
            gaps: list[list[str]] = [[k for k in req if k not in data] for _, req in self.input_types]
            missing: list[str] = min(gaps, key=len) if gaps else []
            path = f"$.{missing[0]}" if missing else "$"
            raise InputValidationError(self.model_id, path, f"missing required field for every input variant ({wants})")
        first_error: InputValidationError | None = None
        for cls, _ in sorted(matching, key=lambda m: -len(m[1])):
            try:
                msgspec.convert(data, cls)
                return cls
            except msgspec.ValidationError as exc:
                path, message = split_error(exc)
                first_error = first_error or InputValidationError(self.model_id, path, message)
            except TypeError:
                return cls
        assert first_error is not None
        raise first_error

    # ------------------------------------------------------------------ calls

    def _post(
        self, body: bytes, *, content_type: str = _JSON, stream: bool = False, headers: Mapping[str, str] | None = None
    ) -> urllib3.BaseHTTPResponse:
        client = self.client
        if self._url is None:
            self._url = client.run_url(self.model_id)
        return client.request(
            "POST",
            self._url,
            body,
            content_type=content_type,
            headers=headers,
            stream=stream,
            model_id=self.model_id,
        )

    def _call(self, request: msgspec.Struct, expect: type[T] | None, *, headers: Mapping[str, str] | None = None) -> T:
        return self._send_and_decode(self.validate(request), expect, headers=headers)

    def _call_binary(self, data: BinaryInput, expect: type[T] | None, *, headers: Mapping[str, str] | None = None) -> T:
        body = read_binary(data)
        resp = self._post(body, content_type="application/octet-stream", headers=headers)
        return self._decode(resp, expect)

    def _stream(self, request: msgspec.Struct) -> EventStream:
        from ._stream import EventStream

        resp = self._post(self.validate(request), stream=True)
        return EventStream(resp, model_id=self.model_id, client=self.client)

    def _submit_batch(self, requests: Sequence[Any], *, headers: Mapping[str, str] | None = None) -> BatchJob[Any]:
        from ._batch import submit

        return submit(self, requests, headers=headers)

    def _send_and_decode(self, body: bytes, expect: type[T] | None, *, headers: Mapping[str, str] | None = None) -> T:
        return self._decode(self._post(body, headers=headers), expect)

    # ------------------------------------------------------------------ decoding

    def _decode(self, resp: urllib3.BaseHTTPResponse, expect: type[T] | None) -> T:
        content_type = content_type_of(resp)
        if content_type == _SSE:
            resp.release_conn()
            raise StreamError(
                f"{self.model_id}: the server streamed the reply; call the *_stream method or stream()",
                status=resp.status,
                model_id=self.model_id,
            )
        data = resp.data
        if not (content_type == _JSON or content_type.endswith("+json")):
            if content_type.startswith("text/") and data[:1] in (b"{", b"["):
                pass  # some proxies mislabel JSON; read it as JSON
            elif self._binary_ok(content_type):
                self.client.remember(resp, [])
                out: Any = BinaryOutput(data, content_type)
                return out  # type: ignore[no-any-return]
            else:
                # A 200 HTML page (a proxy or challenge page) is not this model's answer.
                raise self.client.error_from(resp.status, resp.headers, data, model_id=self.model_id)
        return self.decode_envelope(resp, data, expect)

    def _binary_ok(self, content_type: str) -> bool:
        """Bytes are an answer only from models that declare a binary output (or unknown models)."""
        if not self.info.model_id:
            return True
        return bool(self.decoder.binary_types) and content_type not in ("text/html", "text/plain")

    def decode_envelope(self, resp: urllib3.BaseHTTPResponse, data: bytes, expect: type[T] | None) -> T:
        """Unwrap ``{result, success, errors, messages}``; ``success: false`` raises even on HTTP 200."""
        if expect is not None:
            # Fast path: one pass straight into the expected struct.
            try:
                env = _envelope_decoder(expect).decode(data)
            except (msgspec.ValidationError, msgspec.DecodeError):
                pass
            else:
                if env.success and env.result is not None:
                    self.client.remember(resp, as_list(env.messages) or [])
                    result: T = env.result
                    return result
        value = unwrap(self.client, resp, data, model_id=self.model_id)
        if expect is None:
            return self.decoder.decode(value, self.model_id)  # type: ignore[no-any-return]
        try:
            return msgspec.convert(value, expect)
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            actual = self.decoder.pick(value) if self.decoder.variants else None
            hint = f"; it looks like {actual.__name__}" if actual is not None and actual is not expect else ""
            wanted = getattr(expect, "__name__", expect)
            raise ResponseDecodeError(
                f"{self.model_id}: result does not fit {wanted} at {path}: {message}{hint}",
                status=resp.status,
                cf_ray=resp.headers.get("cf-ray"),
                model_id=self.model_id,
                body=data,
            ) from None


class GenericHandle(ModelHandle[Any, Any]):
    """Handle for a model this package was not generated for: plain JSON in, ``dict``/bytes out."""
