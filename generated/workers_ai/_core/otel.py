"""OpenTelemetry GenAI spans and metrics (loaded by :func:`.telemetry.telemetry_of` once the API imports).

Follows the GenAI semantic conventions of :data:`SEMCONV`: a span per operation named
``{gen_ai.operation.name} {gen_ai.request.model}`` (kind CLIENT), the request parameters, response id,
model, finish reasons and token usage, ``error.type`` with status ERROR; each HTTP attempt is a
``workers_ai.http.attempt`` event; the ``gen_ai.client.operation.duration`` and
``gen_ai.client.token.usage`` histograms with the conventions' bucket advice. Content only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks (docs/observability.md).
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from msgspec import UNSET

from . import telemetry

# The API is imported by name: a type checker following the SDK's imports never parses opentelemetry (its
# time goes to a user's every mypy run), and a copy vendored without the otel extra type-checks as it is.
# This module itself is loaded only once the API is importable (see telemetry.telemetry_of).
context: Any = importlib.import_module("opentelemetry.context")
metrics: Any = importlib.import_module("opentelemetry.metrics")
trace: Any = importlib.import_module("opentelemetry.trace")
SpanKind: Any = trace.SpanKind
Status: Any = trace.Status
StatusCode: Any = trace.StatusCode

if TYPE_CHECKING:
    from .flow import Flow, T

__all__ = [
    "DURATION_BUCKETS",
    "PROVIDER",
    "SEMCONV",
    "TOKEN_BUCKETS",
    "Call",
    "Telemetry",
    "operation_of",
    "traced",
]

PROVIDER = "cloudflare.workers_ai"  # gen_ai.provider.name: the conventions list no value for Cloudflare
SEMCONV = "1.37.0"  # the semantic conventions release whose GenAI text this follows
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV}"

# The conventions' advice for the two client histograms (explicit bucket boundaries).
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = tuple(float(4**i) for i in range(14))  # 1, 4, 16, ... 67108864

# The call whose HTTP attempts the retry loop is running (set by :meth:`Call.enter`), read by
# :func:`.telemetry.attempt_done`.
CURRENT: ContextVar[telemetry.Call | None] = ContextVar("workers_ai_call", default=None)
telemetry.CURRENT = CURRENT


def _capture_mode() -> tuple[bool, bool]:
    """(content on spans, content as span events) from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``."""
    mode = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
    if mode in ("true", "1", "span_only"):
        return True, False
    if mode == "span_and_event":
        return True, True
    if mode == "event_only":
        return False, True
    return False, False


@lru_cache(maxsize=64)
def host_port(url: str) -> tuple[str, int]:
    """``server.address`` and ``server.port`` of a URL."""
    scheme, _, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    default = 443 if scheme == "https" or scheme == "wss" else 80
    host, colon, port = netloc.rpartition(":")
    if colon and port.isdigit() and (not host.startswith("[") or host.endswith("]")):
        return host.strip("[]"), int(port)
    return netloc.strip("[]"), default


class Telemetry:
    """A client's tracer, meter and instruments (made on its first call; see :func:`telemetry_of`)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        version = _version()
        if tracer_provider is None:
            self.tracer = trace.get_tracer("workers_ai", version, schema_url=SCHEMA_URL)
        else:
            self.tracer = tracer_provider.get_tracer("workers_ai", version, schema_url=SCHEMA_URL)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter("workers_ai", version, schema_url=SCHEMA_URL)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk of a streamed reply",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.context = context
        self.set_in_context = trace.set_span_in_context
        self.status = Status
        self.error_code = StatusCode.ERROR
        self.client_kind = SpanKind.CLIENT
        self.internal_kind = SpanKind.INTERNAL
        self.content_on_span, self.content_as_event = _capture_mode()
        # With the global providers: the API's proxies until the application sets real ones. While both
        # are still those proxies nothing would be recorded, so calls skip telemetry (see `telemetry_of`).
        self._globals: tuple[Any, Any, Any, Any] | None = None
        self._checked = 0.0
        if tracer_provider is None and meter_provider is None:
            tp, mp = trace.get_tracer_provider(), metrics.get_meter_provider()
            if isinstance(tp, trace.ProxyTracerProvider) and type(mp).__name__ == "_ProxyMeterProvider":
                self._globals = (trace.get_tracer_provider, tp, metrics.get_meter_provider, mp)

    def unconfigured(self) -> bool:
        """Whether no provider is set yet (the globals are still the API's no-op proxies). Looked up at
        most once a second (the API's getters read the environment): a provider set later is used from
        the calls that start a second after."""
        g = self._globals
        if g is None:
            return False
        now = time.monotonic()
        if now - self._checked < 1.0:
            return True
        self._checked = now
        if g[0]() is g[1] and g[2]() is g[3]:
            return True
        self._globals = None  # set once, never unset
        return False

    @staticmethod
    def operation_of(task: str, request: Any) -> str:
        """``gen_ai.operation.name`` of a call (see :func:`operation_of`)."""
        return operation_of(task, request)

    @staticmethod
    def traced(call: telemetry.Call, flow: Flow[T], facts: Callable[[T], Mapping[str, Any]] | None = None) -> Flow[T]:
        """Run ``flow`` as ``call`` (see :func:`traced`)."""
        return traced(call, flow, facts)

    def start(
        self,
        operation: str,
        model: str,
        url: str,
        *,
        request: Any = None,
        extra: Mapping[str, Any] | None = None,
        internal: bool = False,
        name: str | None = None,
    ) -> Call:
        """Start a call's span (``{operation} {model}``, kind CLIENT) with the request's parameters."""
        host, port = host_port(url)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": model,
            "server.address": host,
            "server.port": port,
        }
        span = self.tracer.start_span(
            name or f"{operation} {model}",
            kind=self.internal_kind if internal else self.client_kind,
            attributes=attrs,
        )
        call = Call(self, span, attrs, time.monotonic())
        if call.recording:
            if request is not None:
                call.inputs = _request_attributes(span, request, self.content_on_span, self.content_as_event)
            if extra:
                span.set_attributes(dict(extra))
        return call


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("workers-ai")
    except Exception:
        return "0"


_REQUEST_PARAMS = (
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("top_k", "gen_ai.request.top_k"),
    ("seed", "gen_ai.request.seed"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
)


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` or ``obj.key``; None when missing or left unset (``msgspec.UNSET``)."""
    value: Any
    if isinstance(obj, Mapping):
        value = cast("Mapping[str, Any]", obj).get(key)
    else:
        value = getattr(obj, key, None)
    return None if value is UNSET else value


def operation_of(task: str, request: Any) -> str:
    """``gen_ai.operation.name`` of a call: ``chat`` for messages (or a Responses ``input``),
    ``text_completion`` for a prompt,
    ``embeddings`` for embedding models, else ``generate_content``."""
    if task == "Text Embeddings":
        return "embeddings"
    if request is not None:
        if _get(request, "messages") is not None:
            return "chat"
        if task == "Text Generation" and _get(request, "input") is not None:
            return "chat"  # the Responses form: its input is a conversation (or one user turn)
        if task == "Text Generation" and _get(request, "prompt") is not None:
            return "text_completion"
    return "generate_content"


def _request_attributes(span: Any, request: Any, on_span: bool, as_event: bool) -> str | None:
    """Set the request parameters the conventions name; the input messages (JSON) when content is captured."""
    for key, attr in _REQUEST_PARAMS:
        value = _get(request, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            span.set_attribute(attr, value)
    stop = _get(request, "stop")
    if isinstance(stop, str):
        span.set_attribute("gen_ai.request.stop_sequences", [stop])
    elif isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):  # pyright: ignore[reportUnknownVariableType]
        span.set_attribute("gen_ai.request.stop_sequences", list(stop))  # pyright: ignore[reportUnknownArgumentType]
    if _get(request, "response_format") is not None:
        span.set_attribute("gen_ai.output.type", "json")
    if not (on_span or as_event):
        return None
    messages = input_messages(request)
    if messages is not None and on_span:
        span.set_attribute("gen_ai.input.messages", messages)
    return messages


def _json(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value, enc_hook=repr).decode()


def input_messages(request: Any) -> str | None:
    """``gen_ai.input.messages`` (JSON) of a request: its messages, or its prompt as one user message."""
    import msgspec

    messages = _get(request, "messages")
    if messages is None:
        prompt = _get(request, "prompt")
        if prompt is None:
            prompt = _get(request, "text")
        if prompt is None:
            return None
        return _json([{"role": "user", "parts": [{"type": "text", "content": msgspec.to_builtins(prompt)}]}])
    out: list[dict[str, Any]] = []
    for m in messages:
        role = _get(m, "role")
        content = _get(m, "content")
        out.append({"role": role, "parts": [{"type": "text", "content": msgspec.to_builtins(content, enc_hook=repr)}]})
    return _json(out)


def _reply_facts(result: Any) -> tuple[str | None, str | None, list[str], str | None]:
    """(response id, response model, finish reasons, output text) of a decoded reply, where it has them."""
    if result is None:
        return None, None, [], None
    rid = _get(result, "id")
    model = _get(result, "model")
    reasons: list[str] = []
    text: str | None = None
    choices = _get(result, "choices")
    if isinstance(choices, (list, tuple)):
        for choice in choices:  # pyright: ignore[reportUnknownVariableType]
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str):
                reasons.append(reason)
            message = _get(choice, "message")
            content = _get(message, "content") if message is not None else None
            if isinstance(content, str) and text is None:
                text = content
    reason = _get(result, "finish_reason")
    if isinstance(reason, str) and not reasons:
        reasons.append(reason)
    response = _get(result, "response")
    if isinstance(response, str) and text is None:
        text = response
    return (
        rid if isinstance(rid, str) else None,
        model if isinstance(model, str) else None,
        reasons,
        text,
    )


class Call:
    """One operation's span and metrics, from :meth:`Telemetry.start` to :meth:`end`."""

    __slots__ = ("_first", "_token", "attrs", "inputs", "recording", "span", "started", "tel")

    def __init__(self, tel: Telemetry, span: Any, attrs: dict[str, Any], started: float) -> None:
        self.tel = tel
        self.span = span
        self.attrs = attrs
        self.started = started
        self.recording: bool = span.is_recording()
        self._token: Any = None
        self._first: float | None = None
        self.inputs: str | None = None  # gen_ai.input.messages, kept for the content event

    # -- while it runs

    def enter(self) -> Any:
        """Make the span current for nested instrumentation (the HTTP attempts, a tool's own spans) and
        this call the one the retry loop reports attempts to; the token for :meth:`leave`."""
        token = CURRENT.set(self)
        if self.recording:
            self._token = self.tel.context.attach(self.tel.set_in_context(self.span))
        return token

    def leave(self, token: Any) -> None:
        if self._token is not None:
            self.tel.context.detach(self._token)
            self._token = None
        CURRENT.reset(token)

    def attempt(
        self, method: str, status: int | None, failure: BaseException | None, ms: float, number: int, ray: str | None
    ) -> None:
        """One HTTP attempt, as a span event (retries are the events after the first)."""
        if not self.recording:
            return
        attrs: dict[str, Any] = {"http.request.method": method, "workers_ai.attempt": number}
        attrs["workers_ai.duration_ms"] = ms
        if status is not None:
            attrs["http.response.status_code"] = status
        if failure is not None:
            attrs["error.type"] = type(failure).__name__
        if ray:
            attrs["workers_ai.cf_ray"] = ray
        self.span.add_event("workers_ai.http.attempt", attrs)
        if number > 1:
            self.span.set_attribute("workers_ai.attempts", number)

    def first_chunk(self) -> None:
        """A stream's first events arrived: ``gen_ai.response.time_to_first_chunk`` and its histogram."""
        if self._first is not None:
            return
        self._first = now = time.monotonic()
        seconds = now - self.started
        if self.recording:
            self.span.set_attribute("gen_ai.response.time_to_first_chunk", seconds)
        self.tel.first_chunk.record(seconds, self._metric_attrs(None))

    # -- the end

    def end(
        self,
        result: Any = None,
        *,
        error: BaseException | None = None,
        usage: Any = None,
        text: str | None = None,
        reasons: Sequence[str] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """End the span and record the metrics: the reply's id/model/finish reasons and token usage, or the
        error's type with status ERROR."""
        tel = self.tel
        span = self.span
        elapsed = time.monotonic() - self.started
        rid, rmodel, found, out_text = _reply_facts(result)
        reasons = list(reasons) or found
        text = text if text is not None else out_text
        if usage is None and result is not None:
            from .accounting import usage_of

            usage = usage_of(result)
        inp = out = None
        if usage is not None:
            inp = int(getattr(usage, "prompt_tokens", 0) or 0)
            out = int(getattr(usage, "completion_tokens", 0) or 0)
        error_type = _error_type(error) if error is not None else None
        if self.recording:
            if rid:
                span.set_attribute("gen_ai.response.id", rid)
            if rmodel:
                span.set_attribute("gen_ai.response.model", rmodel)
            if reasons:
                span.set_attribute("gen_ai.response.finish_reasons", reasons)
            if inp is not None:
                span.set_attribute("gen_ai.usage.input_tokens", inp)
                span.set_attribute("gen_ai.usage.output_tokens", out)
            if extra:
                span.set_attributes(dict(extra))
            if text is not None and (tel.content_on_span or tel.content_as_event):
                output = _json(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": text}],
                            "finish_reason": reasons[0] if reasons else "stop",
                        }
                    ]
                )
                if tel.content_on_span:
                    span.set_attribute("gen_ai.output.messages", output)
                if tel.content_as_event:
                    event: dict[str, Any] = {"gen_ai.output.messages": output}
                    if self.inputs is not None:
                        event["gen_ai.input.messages"] = self.inputs
                    span.add_event("gen_ai.client.inference.operation.details", event)
            if error_type is not None:
                span.set_attribute("error.type", error_type)
                span.set_status(tel.status(tel.error_code, error_type))
        span.end()
        attrs = self._metric_attrs(rmodel)
        if error_type is not None:
            attrs["error.type"] = error_type
        tel.duration.record(elapsed, attrs)
        if inp is not None and out is not None:
            tel.tokens.record(inp, {**attrs, "gen_ai.token.type": "input"})
            tel.tokens.record(out, {**attrs, "gen_ai.token.type": "output"})

    def _metric_attrs(self, response_model: str | None) -> dict[str, Any]:
        a = self.attrs
        attrs = {
            "gen_ai.operation.name": a["gen_ai.operation.name"],
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": a["gen_ai.request.model"],
            "server.address": a["server.address"],
            "server.port": a["server.port"],
        }
        if response_model:
            attrs["gen_ai.response.model"] = response_model
        return attrs


def _error_type(error: BaseException) -> str:
    if isinstance(error, GeneratorExit):
        return "cancelled"
    return type(error).__name__


def traced(call: telemetry.Call, flow: Flow[T], facts: Callable[[T], Mapping[str, Any]] | None = None) -> Flow[T]:
    """Run ``flow`` as ``call``: its attempts reported to the span, which ends with the result (and the
    attributes ``facts`` reads from it) or the error."""
    with telemetry.active(call):
        result = yield from flow
    call.end(result, extra=facts(result) if facts is not None else None)
    return result


if TYPE_CHECKING:  # the type checkers hold these classes to the protocols the rest of the package uses
    _telemetry_class: type[telemetry.Telemetry] = Telemetry
    _call_class: type[telemetry.Call] = Call
