"""Faults the emulator can inject: API errors, slow or broken replies, broken streams, failed batch items.

Inject them per test with :meth:`Emulator.inject`, or per request with the header
``x-emulator-fault: <name>[; option=value ...]`` (for example ``rate_limit; retry_after=0``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._records import RecordedRequest
from ._reply import JSON, Reply, envelope, error_reply

__all__ = ["FAULTS", "Fault", "FaultKind", "parse_fault_header", "replace_reply", "shape_reply"]

FaultKind = Literal["request", "stream", "batch", "json_mode", "third_party"]
_HTML_502 = (
    "<!DOCTYPE html>\n<html><head><title>api.cloudflare.com | 502: Bad gateway</title></head>\n"
    "<body><h1>Bad gateway</h1><p>Error code 502</p><p>The web server reported a bad gateway error.</p>"
    "<p>Ray ID: {ray} &bull; emulated</p></body></html>\n"
)


@dataclass(frozen=True)
class _Spec:
    kind: FaultKind
    help: str
    status: int | None = None
    code: int | None = None
    message: str | None = None
    retry_after: float | None = None
    delay: float | None = None


FAULTS: Mapping[str, _Spec] = {
    "rate_limit": _Spec(
        "request", "429, code 3021, with Retry-After", 429, 3021, "Rate limited: too many requests per minute", 1.0
    ),
    "daily_limit": _Spec(
        "request",
        "429, code 3036 (daily free allocation used up), with Retry-After",
        429,
        3036,
        "You have used up your daily free allocation of 10,000 neurons; upgrade to the Workers Paid plan to continue",
        1.0,
    ),
    "capacity": _Spec(
        "request",
        "429, code 3040 (out of capacity), with Retry-After",
        429,
        3040,
        "Capacity temporarily exceeded, please try again.",
        1.0,
    ),
    "unavailable": _Spec("request", "503 envelope, code 7009", 503, 7009, "Upstream service unavailable"),
    "internal_error": _Spec("request", "500 envelope, code 3043", 500, 3043, "Internal server error"),
    "timeout": _Spec("request", "408, code 3007", 408, 3007, "Request timeout"),
    "slow": _Spec("request", "the normal reply after `delay` seconds (default 1)", delay=1.0),
    "reset": _Spec("request", "send the headers and half the body, then reset the connection"),
    "truncated": _Spec("request", "declare the full Content-Length, send half the body, close"),
    "truncated_json": _Spec("request", "a well-framed 200 whose JSON body is cut in half"),
    "html_502": _Spec("request", "a 502 HTML error page instead of JSON", 502),
    "success_false": _Spec("request", "HTTP 200 with success:false and an error", 200, 3043, "Internal server error"),
    "model_deprecated": _Spec(
        "request",
        "410, code 5028: the model is deprecated (the message names it and its planned end)",
        410,
        5028,
        "Model {model} is deprecated and reached its planned end of service on 2026-01-01",
    ),
    "model_agreement": _Spec(
        "request",
        "403, code 5016: the model's licence terms were not accepted (send the prompt 'agree' once)",
        403,
        5016,
        "User has not agreed to the {model} model terms; send the prompt 'agree' to this model once to accept them",
    ),
    # Only requests with `response_format` meet it. The message is the documented one; the docs give no
    # code or status for it, so 400 with code 3030 stands in (override both with `status=`/`code=`).
    "json_mode_unmet": _Spec(
        "json_mode",
        "400, JSON Mode couldn't be met (requests with response_format only)",
        400,
        3030,
        "JSON Mode couldn't be met",
    ),
    # Only third-party models (universal route, /ai/v1/* with a provider id) meet it.
    "unfunded": _Spec(
        "third_party",
        "402, code 2021: Unified Billing has no credits for a third-party model",
        402,
        2021,
        "Insufficient Unified Billing credits for {model}: add credits to the account to use third-party models",
    ),
    "stream_error": _Spec(
        "stream",
        "a few events, then an error event (code 3040), then the stream closes",
        None,
        3040,
        "Capacity temporarily exceeded, please try again.",
    ),
    "stream_no_done": _Spec("stream", "the stream ends without data: [DONE]"),
    "batch_item_error": _Spec(
        "batch",
        "batch item `item` (default 0), or each of `items` (e.g. items=1,4,9), fails",
        None,
        3040,
        "Capacity exceeded",
    ),
    "batch_failed": _Spec("batch", "the whole batch ends with status 'failed'", None, None, "the batch failed"),
}


@dataclass
class Fault:
    """One injected fault. ``times=None`` keeps it active until :meth:`Emulator.clear_faults`."""

    name: str
    times: int | None = 1
    model: str | None = None
    match: Callable[[RecordedRequest], bool] | None = None
    status: int | None = None
    code: int | None = None
    message: str | None = None
    retry_after: float | None = None
    delay: float | None = None
    item: int = 0
    items: tuple[int, ...] = ()
    hits: int = field(default=0)

    def __post_init__(self) -> None:
        spec = FAULTS.get(self.name)
        if spec is None:
            raise ValueError(f"unknown fault {self.name!r}; known faults: {', '.join(sorted(FAULTS))}")
        if self.times is not None and self.times < 1:
            raise ValueError("times must be >= 1 (or None for every request)")
        self.status = self.status if self.status is not None else spec.status
        self.code = self.code if self.code is not None else spec.code
        self.message = self.message if self.message is not None else spec.message
        self.retry_after = self.retry_after if self.retry_after is not None else spec.retry_after
        self.delay = self.delay if self.delay is not None else spec.delay

    @property
    def kind(self) -> FaultKind:
        return FAULTS[self.name].kind

    @property
    def active(self) -> bool:
        return self.times is None or self.hits < self.times

    def applies(self, request: RecordedRequest, kind: FaultKind) -> bool:
        if not self.active or self.kind != kind:
            return False
        if self.model is not None and request.model != self.model:
            return False
        return self.match is None or bool(self.match(request))


_OPTIONS: dict[str, Callable[[str], Any]] = {
    "status": int,
    "code": int,
    "message": str,
    "retry_after": float,
    "delay": float,
    "item": int,
    "items": lambda raw: tuple(int(p) for p in raw.split(",") if p.strip()),
}


def parse_fault_header(value: str) -> Fault:
    """``"rate_limit; retry_after=0"`` -> a one-shot :class:`Fault`; ValueError names what is wrong."""
    parts = [p.strip() for p in value.split(";")]
    name = parts[0]
    options: dict[str, Any] = {}
    for part in parts[1:]:
        if not part:
            continue
        key, sep, raw = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in _OPTIONS:
            raise ValueError(f"bad fault option {part!r}; options: {', '.join(sorted(_OPTIONS))}")
        try:
            options[key] = _OPTIONS[key](raw.strip())
        except ValueError:
            raise ValueError(f"bad value for fault option {key!r}: {raw.strip()!r}") from None
    return Fault(name, times=1, **options)


def replace_reply(fault: Fault, ray: str, model: str | None = None) -> Reply | None:
    """The reply a request fault answers instead of the real one; None for faults that only change how
    the real reply is sent (see :func:`shape_reply`). ``{model}`` in a message becomes ``model``."""
    extra: list[tuple[str, str]] = []
    if fault.retry_after is not None:
        extra.append(("retry-after", f"{fault.retry_after:g}"))
    if fault.name == "html_502":
        body = _HTML_502.format(ray=ray).encode()
        return Reply(fault.status or 502, [("content-type", "text/html; charset=UTF-8"), *extra], body)
    if fault.name == "success_false":
        errors = [{"code": fault.code, "message": fault.message or ""}]
        return Reply(
            fault.status or 200, [("content-type", JSON), *extra], envelope(None, success=False, errors=errors)
        )
    if fault.status is not None and fault.code is not None:
        message = (fault.message or "").replace("{model}", model or "this model")
        return error_reply(fault.status, fault.code, message, extra)
    return None


def shape_reply(fault: Fault, reply: Reply) -> None:
    """Make ``reply`` slow, cut short or broken the way ``fault`` says."""
    if fault.name == "slow":
        reply.delay = fault.delay or 0.0
    elif fault.name in ("reset", "truncated"):
        reply.cut_mode = "reset" if fault.name == "reset" else "close"
        reply.cut = max(1, len(reply.chunks) // 2) if reply.chunks is not None else len(reply.body) // 2
    elif fault.name == "truncated_json" and reply.chunks is None:
        reply.body = reply.body[: len(reply.body) // 2]
