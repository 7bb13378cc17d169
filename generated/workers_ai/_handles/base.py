"""What every model handle shares, whichever client runs it: validation, encoding, decoding, usage
counting and the call flows (sent by the client's driver: see :mod:`.._core.flow`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

import msgspec

from .._core.accounting import usage_of
from .._core.body import encode_body
from .._core.config import SessionConfig, remember, run_url
from .._core.decode import OutputDecoder, convert, decode_typed, split_error, validator_for
from .._core.envelope import media_type, unwrap
from .._core.exchange import Reply, exchange
from .._core.flow import Flow
from .._core.jsonview import as_list, as_object, whole_numbers
from .._core.schema_check import input_schema
from .._core.telemetry import active, log, telemetry_of
from .._core.unknown import check_unknown_keys
from .._core.usage import Usage
from .._error_base import APIError, InputValidationError, ResponseDecodeError
from ..families import family_result

if TYPE_CHECKING:
    from .._batch.jobs import BatchJobBase
    from .._core.telemetry import Call, Telemetry
    from .._tools.structured import Parsed
    from ..errors import ModelDeprecatedError
    from .ops import Op

    JobType = Callable[..., BatchJobBase[Any]]  # the sync or the async job class, as the face names it

__all__ = ["HandleBase", "ModelInfo", "OutputDecoder"]

SessionT = TypeVar("SessionT", bound=SessionConfig)
InT = TypeVar("InT")
OutT = TypeVar("OutT")
T = TypeVar("T")

_JSON = "application/json"
_SSE = "text/event-stream"
_OCTETS = "application/octet-stream"
_PACKAGE = __name__.rsplit(".", 2)[0]  # workers_ai, or a vendored copy's name


class ModelInfo(msgspec.Struct, frozen=True):
    """What the catalog says about a model: task, description, price and properties."""

    model_id: str
    task: str = ""
    description: str = ""
    price: Any = ()
    properties: Any = None
    schema: str = ""  # a generated model's: its module's path (models/cf/baai/bge_m3.json), set by its handle class
    raw_body: str | None = None  # the input field the REST API takes as the raw body (options as query)
    form_body: str | None = None  # the input struct the REST API takes as a multipart/form-data body

    def __post_init__(self) -> None:
        # Generated modules print the price once (``price=``); ``properties["price"]`` is the same list.
        props = as_object(self.properties)
        if self.price and props is not None and "price" not in props:
            msgspec.structs.force_setattr(self, "properties", {**props, "price": self.price})


# Replies read as bytes (``BinaryOutput``): nothing else is taken as an answer, whatever the model.
_BINARY_FAMILIES = ("image/", "audio/", "video/")
_BINARY_TYPES = frozenset({"application/octet-stream", "application/pdf", "application/zip"})


class HandleBase(Generic[SessionT, InT, OutT]):
    """What sync and async handles share: model info, validation, encoding and decoding (no I/O)."""

    info: ClassVar[ModelInfo] = ModelInfo(model_id="")
    decoder: ClassVar[OutputDecoder] = OutputDecoder()
    input_types: ClassVar[tuple[tuple[type[Any], tuple[str, ...]], ...]] = ()
    batch_input: ClassVar[type[Any] | None] = None  # the `{"requests": [...]}` variant, when the model has one
    _tools_op: ClassVar[Op[Any]]  # the method ``run_tools()`` calls, where a shape has it (``.typed_bases``)

    def __init_subclass__(
        cls,
        *,
        info: ModelInfo | None = None,
        decoder: OutputDecoder | None = None,
        inputs: tuple[tuple[type[Any], tuple[str, ...]], ...] | None = None,
        batch_input: type[Any] | None = None,
        tools: Op[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A generated handle states its model in its class line: ``class ShapeHandle(ModelHandle[...],
        decoder=DECODER, inputs=INPUTS, batch_input=BatchInput)`` for a shape, ``class BgeM3(ShapeHandle,
        info=INFO)`` for a model of it; the sync and async handles of one model share its module's INFO and
        DECODER."""
        super().__init_subclass__(**kwargs)
        if info is not None:
            cls.info = info
            module = cls.__module__.removeprefix(_PACKAGE + ".")
            if module.startswith("models."):  # a generated model's handle: the rest comes from its module
                if not info.schema:
                    msgspec.structs.force_setattr(info, "schema", module.replace(".", "/") + ".json")
                if decoder is None:  # its shape's, named for the model's output in errors; the module's DECODER
                    namespace = sys.modules[cls.__module__].__dict__
                    if "DECODER" not in namespace:  # the sync class comes first: ``BgeM3`` -> BgeM3Output
                        namespace["DECODER"] = cls.decoder.named(f"{cls.__name__}Output")
                    decoder = cast("OutputDecoder", namespace["DECODER"])
        if decoder is not None:
            cls.decoder = decoder
        if inputs is not None:
            cls.input_types = inputs
        if batch_input is not None:
            cls.batch_input = batch_input
        if tools is not None:
            cls._tools_op = tools

    def __init__(self, client: SessionT, model_id: str | None = None) -> None:
        self.client = client
        self.model_id = model_id or self.info.model_id
        self._url: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id}>"

    def __reduce__(self) -> tuple[Any, ...]:
        # The client pickles as its configuration (token included, see _pickle); the copy's own handle.
        from .._core.pickling import handle_of

        return (handle_of, (self.client, self.model_id, type(self)))

    def validate(self, request: msgspec.Struct) -> bytes:
        """Encode ``request`` and check it against the model's input schema; returns the JSON body. Keys the
        schema does not declare are warned about once it is accepted (a refused request warns of nothing)."""
        body = encode_body(request, self.model_id)
        kind = type(request)
        checker = (
            None
            if self.check_schema(body, variant=frozenset(request.__struct_encode_fields__))
            else validator_for(kind)
        )
        if checker is not None:  # no schema ships (a vendored copy): the struct's own constraints
            try:
                checker.decode(body)
            except msgspec.ValidationError as exc:
                raise self._invalid(*split_error(exc), body) from None
        check_unknown_keys(self.model_id, request, kind, strict=self.client.strict_inputs)
        return body

    def check_schema(
        self, body: bytes, *, item: bool = False, where: str = "$", variant: frozenset[str] | None = None
    ) -> bool:
        """Check a JSON request body against the model's effective input schema (see
        :mod:`.._core.schema_check`): ``item``, as one request of a batch (at ``where``); ``variant``, as the
        input variant with these keys (a typed request). False when no schema ships."""
        if not self.info.schema or input_schema(self.info.schema) is None:
            return False
        return self.check_value(msgspec.json.decode(body), item=item, where=where, variant=variant)

    def check_value(
        self, value: Any, *, item: bool = False, where: str = "$", variant: frozenset[str] | None = None
    ) -> bool:
        """:meth:`check_schema` of a request already in its JSON form (``msgspec.to_builtins`` of what is
        sent): a batch checks each item so, without encoding it twice."""
        schema = input_schema(self.info.schema) if self.info.schema else None
        if schema is None:
            return False
        found = schema.problem(value, item=item, variant=variant)
        if found is not None:
            raise self._invalid(*found, value, where)
        return True

    def _invalid(self, path: str, message: str, payload: Any, where: str = "$") -> InputValidationError:
        """The error for an input that failed its schema at ``path`` of ``payload`` (the input, or its JSON
        body; itself at ``where`` of the request); a required key left out next to a misspelling of it says
        "did you mean"."""
        if message.startswith("Object missing required field"):
            from .._core.suggest import missing_field_hint  # here: only this error needs it

            data = msgspec.json.decode(payload) if isinstance(payload, bytes) else payload
            message += missing_field_hint(message, path, data)
        return InputValidationError(self.model_id, where + path[1:], message)

    def encode_input(self, payload: Any, *, check_keys: bool = True) -> bytes:
        """The JSON body for a struct or mapping payload, checked against the model's input schema; keys
        the variant does not declare warn (``UnknownInputWarning``) or, with ``strict_inputs``, raise.
        ``check_keys=False`` is for payloads the SDK extends itself (the tool loop's turns)."""
        if isinstance(payload, msgspec.Struct):
            return self.validate(payload)
        if not isinstance(payload, Mapping):
            raise InputValidationError(
                self.model_id, "$", f"expected a mapping or request struct, got {type(payload).__name__}"
            )
        data: Mapping[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
        if data.get("stream") is True:
            from .._tools.structured import check_no_stream

            check_no_stream(self.model_id, data.get("response_format"))
        body = encode_body(data, self.model_id)
        if self.input_types:
            if "response_format" in data and not any(
                "response_format" in getattr(cls, "__struct_fields__", ()) for cls, _ in self.input_types
            ):
                raise InputValidationError(
                    self.model_id, "$.response_format", "this model has no JSON mode (no `response_format` input)"
                )
            matched = self._check_mapping(data, body)
            if check_keys:
                check_unknown_keys(self.model_id, data, matched, strict=self.client.strict_inputs)
        else:
            self.check_schema(body)
        return body

    def _special_body_flow(self, payload: Any, headers: Mapping[str, str] | None) -> Flow[Any] | None:
        """``run(payload)`` for a model whose REST body is a form or one raw field (``info.form_body``,
        ``info.raw_body``): the payload checked as given, then sent in that body with every key it has;
        None for every other model and payload (sent as JSON)."""
        info = self.info
        if info.raw_body is None and info.form_body is None:
            return None
        if isinstance(payload, msgspec.Struct):
            return self._request_flow(payload, None, headers)
        body = self.encode_input(payload)
        data: Mapping[str, Any] = payload
        cls = self._check_mapping(data, body)
        if cls.__name__ != info.form_body and (info.raw_body is None or info.raw_body not in data):
            return self._call_flow(body, None, headers=headers, request=payload)
        request: msgspec.Struct = msgspec.convert(whole_numbers(data), cls)
        wire = set(request.__struct_encode_fields__)
        return self._request_flow(request, None, headers, extra={k: v for k, v in data.items() if k not in wire})

    def _check_mapping(self, data: Mapping[str, Any], body: bytes) -> type[Any]:
        """The input variant ``data`` (encoded as ``body``) is; refused when it fits none (the schema says
        why, or, where none ships, the closest variant's struct)."""
        matching = [(cls, req) for cls, req in self.input_types if all(k in data for k in req)]
        if not matching:
            wants = "; ".join(f"{cls.__name__} needs {', '.join(req) or 'nothing'}" for cls, req in self.input_types)
            gaps: list[list[str]] = [[k for k in req if k not in data] for _, req in self.input_types]
            missing: list[str] = min(gaps, key=len) if gaps else []
            path = f"$.{missing[0]}" if missing else "$"
            from .._core.suggest import missing_key_hint  # here: only this error needs it

            declared = {f for cls, _ in self.input_types for f in getattr(cls, "__struct_fields__", ())}
            hint = missing_key_hint(map(str, data), [k for gap in gaps for k in gap], declared)
            raise InputValidationError(
                self.model_id, path, f"missing required field for every input variant ({wants}){hint}"
            )
        checked = self.check_schema(body)
        first_error: InputValidationError | None = None
        ranked = sorted(matching, key=lambda m: -len(m[1]))
        for cls, _ in ranked:
            try:
                msgspec.convert(whole_numbers(data) if checked else data, cls)
                return cls
            except msgspec.ValidationError as exc:
                first_error = first_error or self._invalid(*split_error(exc), data)
            except TypeError:
                return cls
        if checked or first_error is None:
            return ranked[0][0]
        raise first_error

    def _stream_body(self, payload: Any) -> bytes:
        """The validated JSON body of ``stream(payload)``: the payload with ``stream: true``."""
        if isinstance(payload, msgspec.Struct):
            data: Any = msgspec.to_builtins(payload)
        elif isinstance(payload, Mapping):
            data = dict(cast("Mapping[str, Any]", payload))
        else:
            raise TypeError("stream() takes a request struct or a mapping")
        data["stream"] = True
        from .._tools.structured import check_no_stream

        check_no_stream(self.model_id, data.get("response_format"))
        return self.encode_input(data)

    def _batch_requests(self, payload: Any) -> tuple[list[Any], dict[str, Any]]:
        """The ``requests`` list of a ``submit_batch`` payload (a mapping or a struct) and the keys beside it
        (sent as given)."""
        value: object = payload
        source = as_object(value)
        requests = as_list(source.get("requests") if source is not None else getattr(value, "requests", None))
        if requests is None:
            raise InputValidationError(self.model_id, "$.requests", "a batch needs a `requests` list")
        return requests, {k: v for k, v in (source or {}).items() if k != "requests"}

    def _stream_options(self, resp: Any, call: Call | None = None) -> dict[str, Any]:
        """The keyword arguments of a stream over ``resp`` (the sync and async streams take the same)."""
        session = self.client
        remember(session, resp.status, resp.headers, [])

        def on_messages(messages: list[Any]) -> None:
            remember(session, resp.status, resp.headers, messages)

        return {
            "model_id": self.model_id,
            "idle_timeout": session.stream_idle_timeout,
            "total_timeout": session.stream_timeout,
            "max_event_bytes": session.max_event_bytes,
            "max_response_bytes": session.max_response_bytes,
            "on_messages": on_messages,
            "on_end": self._count_stream,
            "call": call,
        }

    def _stream_request_body(self, request: msgspec.Struct) -> bytes:
        """The body of a generated ``*_stream`` call; JSON mode does not stream (refused before sending)."""
        from .._tools.structured import check_no_stream

        check_no_stream(self.model_id, getattr(request, "response_format", None))
        return self.validate(request)

    def _decoded_pair(self, reply: Reply, expect: type[T] | None) -> tuple[T, Any]:
        """``(output decoded into expect, result as sent)`` of a JSON reply."""
        value, messages = unwrap(reply.status, reply.headers, reply.data, model_id=self.model_id)
        remember(self.client, reply.status, reply.headers, messages)
        return self._convert(value, expect, reply), value

    def _parsed(self, reply: Reply, expect: type[Any] | None, response_format: Any) -> Parsed[Any, Any]:
        """A JSON-mode reply: its object parsed into ``response_format`` when that is a type (else left as
        decoded), next to the model's usual output (the object as JSON text in ``response``)."""
        from .._tools.structured import Parsed, is_schema_type, json_payload, parse_into, textual

        if media_type(reply.headers) == _SSE:
            from ..errors import StreamError

            raise StreamError(
                f"{self.model_id}: the server streamed a JSON-mode reply", status=reply.status, model_id=self.model_id
            )
        value, messages = unwrap(reply.status, reply.headers, reply.data, model_id=self.model_id)
        remember(self.client, reply.status, reply.headers, messages)
        payload = json_payload(value, self.model_id, reply.data)
        parsed: Any = payload
        if is_schema_type(response_format):
            parsed = parse_into(payload, response_format, self.model_id, reply.status, reply.data)
        output: Any = self._convert(textual(value), expect, reply)
        return Parsed(parsed, output, value)

    def _convert(self, value: Any, expect: type[T] | None, reply: Reply) -> T:
        try:
            if expect is None:
                return cast("T", self.decoder.decode(value, self.model_id))
            return convert(value, expect)
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            raise ResponseDecodeError(
                f"{self.model_id}: result does not fit {getattr(expect, '__name__', expect)} at {path}: {message}",
                status=reply.status,
                model_id=self.model_id,
                body=reply.data,
            ) from None

    @staticmethod
    def _is_binary(payload: object) -> bool:
        return isinstance(payload, (bytes, bytearray, memoryview)) or hasattr(payload, "read")

    # ------------------------------------------------------------------ usage (``ai.usage``)

    def _counted(self, result: T) -> T:
        """The result handed back: counted in ``ai.usage``, a JSON-list answer as its family's list view."""
        info = self.info
        self.client.usage.record(self.model_id, usage_of(result), info.price)
        if type(result) is list:  # a JSON list of a listed task: its family's list view
            result = cast("T", family_result(info.task, cast("object", result)))
        return result

    def _count_stream(self, usage: Usage | None) -> None:
        self.client.usage.record(self.model_id, usage, self.info.price)

    def _note_deprecation(self, exc: ModelDeprecatedError) -> None:
        """Add the catalog's planned end of service to a deprecation error."""
        planned = as_object(self.info.properties) or {}
        when = planned.get("planned_deprecation_date")
        exc.catalog_end = when if isinstance(when, str) else None
        log.warning("%s is deprecated (%s)%s", self.model_id, exc, f"; end of service {when}" if when else "")

    def _run_url(self) -> str:
        if self._url is None:
            self._url = run_url(self.client, self.model_id)
        return self._url

    def _decode(self, reply: Reply, expect: type[T] | None) -> T:
        content_type = reply.headers.get("content-type")
        if content_type != _JSON:  # the usual reply needs no taking apart (see media_type)
            content_type = media_type(reply.headers)
        if content_type == _SSE:
            from ..errors import StreamError  # here: a reply that fits needs no error class

            raise StreamError(
                f"{self.model_id}: the server streamed the reply; call the *_stream method or stream()",
                status=reply.status,
                model_id=self.model_id,
            )
        data = reply.data
        if not (content_type == _JSON or content_type.endswith("+json")):
            if content_type.startswith("text/") and data[:1] in (b"{", b"["):
                pass  # some proxies mislabel JSON; read it as JSON
            elif self._binary_ok(content_type):
                remember(self.client, reply.status, reply.headers, [])
                from .._core.binary import BinaryOutput

                out: Any = BinaryOutput(data, content_type)
                return cast("T", out)
            else:
                # A 200 HTML page (a proxy or challenge page) is not this model's answer.
                from .._core.error_replies import error_from

                raise error_from(reply.status, reply.headers, data, model_id=self.model_id)
        return self.decode_envelope(reply, expect)

    def _binary_ok(self, content_type: str) -> bool:
        """Bytes are an answer only when they are declared as binary media (image, audio, octet-stream),
        and, for a generated model, only when its schema has a binary output."""
        binary = content_type.startswith(_BINARY_FAMILIES) or content_type in _BINARY_TYPES
        if not self.info.model_id:
            return binary
        return bool(self.decoder.binary_types) and (binary or content_type in self.decoder.binary_types)

    def decode_envelope(self, reply: Reply, expect: type[T] | None) -> T:
        """Unwrap ``{result, success, errors, messages}``; ``success: false`` raises even on HTTP 200."""
        if expect is not None:
            fast = decode_typed(reply.data, expect)  # one pass straight into the expected struct
            if fast is not None:
                remember(self.client, reply.status, reply.headers, fast[1])
                return fast[0]
        value, messages = unwrap(reply.status, reply.headers, reply.data, model_id=self.model_id)
        remember(self.client, reply.status, reply.headers, messages)
        if expect is None:
            return cast("T", self.decoder.decode(value, self.model_id))
        try:
            return convert(value, expect)
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            actual = self.decoder.pick(value) if self.decoder.variants else None
            hint = f"; it looks like {actual.__name__}" if actual is not None and actual is not expect else ""
            wanted = getattr(expect, "__name__", expect)
            raise ResponseDecodeError(
                f"{self.model_id}: result does not fit {wanted} at {path}: {message}{hint}",
                status=reply.status,
                cf_ray=reply.headers.get("cf-ray"),
                model_id=self.model_id,
                body=reply.data,
            ) from None

    # ------------------------------------------------------------------ flows (run by the client's driver)

    def _post_flow(
        self, body: bytes, content_type: str = _JSON, headers: Mapping[str, str] | None = None, query: str = ""
    ) -> Flow[Reply]:
        try:
            url = f"{self._run_url()}?{query}" if query else self._run_url()
            # The request loop itself, not ``request_flow``: one generator layer and its keyword
            # handling less on every call.
            resp, data = yield from exchange(
                self.client, "POST", url, body, content_type, headers, False, self.model_id, None, False
            )
            return Reply(resp.status, resp.headers, data)
        except APIError as exc:
            from ..errors import ModelDeprecatedError  # loaded with the error reply's class

            if isinstance(exc, ModelDeprecatedError):
                self._note_deprecation(exc)
            raise

    def _call_flow(
        self,
        body: bytes,
        expect: type[T] | None,
        content_type: str = _JSON,
        headers: Mapping[str, str] | None = None,
        query: str = "",
        request: Any = None,
    ) -> Flow[T]:
        """One call: sent, decoded into ``expect`` (or the output union) and counted in ``ai.usage``."""
        tel = telemetry_of(self.client)
        if tel is None:  # the common case, a generator layer shorter
            reply = yield from self._post_flow(body, content_type, headers, query)
            return self._counted(self._decode(reply, expect))
        flow = self._plain_call_flow(body, expect, content_type, headers, query)
        return (yield from tel.traced(self._start_call(tel, request), flow))

    def _plain_call_flow(
        self, body: bytes, expect: type[T] | None, content_type: str, headers: Mapping[str, str] | None, query: str
    ) -> Flow[T]:
        reply = yield from self._post_flow(body, content_type, headers, query)
        return self._counted(self._decode(reply, expect))

    def _start_call(self, tel: Telemetry, request: Any) -> Call:
        """The span of one call to this model (``chat``, ``embeddings``, ...: see :mod:`.._core.telemetry`)."""
        return tel.start(tel.operation_of(self.info.task, request), self.model_id, self._run_url(), request=request)

    def _request_flow(
        self,
        request: msgspec.Struct,
        expect: type[T] | None,
        headers: Mapping[str, str] | None,
        extra: Mapping[str, Any] | None = None,
    ) -> Flow[T]:
        """A typed method's call: the request validated (here, before the flow starts), then sent as JSON,
        or, for a model whose REST API takes one field as the raw body (``info.raw_body``, nova-3's audio),
        that field's bytes with their media type and the other fields as query parameters. ``extra``: keys
        of a ``run()`` payload the struct does not declare, sent beside its fields. It hands back
        :meth:`_call_flow`'s flow itself, so a call runs through one generator less."""
        body = self.validate(request)
        info = self.info
        if info.form_body is not None and type(request).__name__ == info.form_body:
            from .rest_bodies import form_body

            form, form_type = form_body(request, extra)
            return self._call_flow(form, expect, form_type, headers, request=request)
        if info.raw_body is not None:
            from .rest_bodies import raw_body

            raw = raw_body(request, info.raw_body, extra)
            if raw is not None:
                return self._call_flow(raw[0], expect, raw[1], headers, raw[2], request=request)
        return self._call_flow(body, expect, headers=headers, request=request)

    def _op_flow(self, op: Op[Any], params: Mapping[str, Any], first: Any, response_format: Any) -> Flow[Any]:
        """A generated method's call (see :mod:`.ops`): its arguments built into the request (a bad one is
        refused before anything is sent); JSON mode when ``response_format`` was given, else the typed
        call; base64 media JSON handed back as bytes where the method says so."""
        if response_format is not None:
            request = op.build({**params, "response_format": response_format}, self.model_id, first)
            return (yield from self._parsed_flow(self.validate(request), op.expect, response_format, request))
        request = op.build(params, self.model_id, first)
        result = yield from self._request_flow(request, op.expect, None)
        if not op.media_bytes:
            return result
        from ..families.media import as_binary

        return as_binary(result)

    @staticmethod
    def _tool_loop_options(
        op: Op[Any],
        messages: Any,
        tools: Sequence[Callable[..., Any]],
        max_rounds: int,
        on_tool_error: str,
        options: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """The tool loop's keyword arguments for a generated ``run_tools()`` over the method ``op`` names."""
        return {
            "messages": messages,
            "tools": tools,
            "form": op.tools,
            "max_rounds": max_rounds,
            "on_tool_error": on_tool_error,
            "options": options,
        }

    def _parsed_flow(
        self, body: bytes, expect: type[Any] | None, response_format: Any, request: Any = None
    ) -> Flow[Parsed[Any, Any]]:
        """A JSON-mode call (see :meth:`_parsed`), counted in ``ai.usage``."""
        tel = telemetry_of(self.client)
        if tel is None:
            return (yield from self._plain_parsed_flow(body, expect, response_format))
        call = self._start_call(tel, request)
        return (yield from tel.traced(call, self._plain_parsed_flow(body, expect, response_format)))

    def _plain_parsed_flow(self, body: bytes, expect: type[Any] | None, response_format: Any) -> Flow[Parsed[Any, Any]]:
        result = self._parsed((yield from self._post_flow(body)), expect, response_format)
        self._counted(result.output)
        return result

    def _decoded_flow(self, body: bytes, expect: type[T] | None, request: Any = None) -> Flow[tuple[T, Any]]:
        """``(output decoded into expect, result as sent)``, counted in ``ai.usage`` (a tool-loop round)."""
        tel = telemetry_of(self.client)
        if tel is None:
            return (yield from self._plain_decoded_flow(body, expect))
        call = self._start_call(tel, request)
        with active(call):
            output, raw = yield from self._plain_decoded_flow(body, expect)
        call.end(raw)  # the span reads the result as sent (its tool calls, usage)
        return output, raw

    def _plain_decoded_flow(self, body: bytes, expect: type[T] | None) -> Flow[tuple[T, Any]]:
        output, raw = self._decoded_pair((yield from self._post_flow(body)), expect)
        return self._counted(output), raw

    def _stream_open_flow(
        self, body: bytes, headers: Mapping[str, str] | None, request: Any
    ) -> Flow[tuple[Any, Call | None]]:
        """POST a stream request until a 2xx reply (its body unread); with telemetry on, the call whose
        span the stream ends (see :class:`.._core.stream_parser.StreamParser`). ``request`` (the struct or
        mapping ``body`` was encoded from) is what the span reads its parameters from."""
        tel = telemetry_of(self.client)
        flow = exchange(self.client, "POST", self._run_url(), body, _JSON, headers, False, self.model_id, None, True)
        if tel is None:
            return (yield from flow)[0], None
        call = self._start_call(tel, request)
        with active(call):
            resp, _ = yield from flow
        return resp, call  # open: the stream ends it

    def _many_flow(self, job_type: JobType, requests: Sequence[Any], given: Mapping[str, Any]) -> Flow[list[Any]]:
        """``batch_many``: every request validated and encoded first (nothing is sent when one is bad),
        then the bulk flow of :mod:`.._batch.many` polling ``job_type`` jobs; the items in input order."""
        from .._batch.many import many_flow, options_of, prepare

        opts, journal, on_progress = options_of(cast("Any", given))
        source = prepare(self, requests, opts.max_bytes)
        items: list[Any] = []
        yield from many_flow(
            self, job_type, source, items.append, journal=journal, on_progress=on_progress, options=opts
        )
        return items

    def _submit_flow(
        self,
        job_type: JobType,
        requests: Sequence[Any],
        headers: Mapping[str, str] | None,
        beside: Mapping[str, Any] | None = None,
    ) -> Flow[Any]:
        """``submit_batch``: the requests (and the payload's keys ``beside`` them, unknown ones warned about)
        encoded, the whole body checked against the input schema, and queued; a ``job_type`` job for them."""
        from .._batch.jobs import MAX_BATCH_BYTES, encode_requests
        from .._batch.submit import submit_flow

        if beside and self.batch_input is not None:
            check_unknown_keys(self.model_id, beside, self.batch_input, strict=self.client.strict_inputs)
        body = encode_requests(self, requests, beside)
        self.check_schema(body)
        return (yield from submit_flow(self, job_type, body, len(requests), headers, MAX_BATCH_BYTES))
