"""Every error the SDK raises, under one base class :class:`WorkersAIError`.

API errors carry the HTTP status, the envelope's ``errors`` (code, message), its ``messages`` and the
``cf-ray`` header. The API token never appears in any of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from ._core.jsonview import as_list, as_object

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "BatchError",
    "BatchItemError",
    "BatchItemsError",
    "BatchTimeoutError",
    "CapacityError",
    "DECODE_ERRORS",
    "QUOTA_CODES",
    "ConfigurationError",
    "ErrorDetail",
    "InputValidationError",
    "InternalServerError",
    "InvalidInputError",
    "JsonModeError",
    "LoraFilesMissingError",
    "LoraUnsupportedError",
    "ModelAgreementError",
    "ModelDeprecatedError",
    "PaymentRequiredError",
    "ModelNotFoundError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RateLimitError",
    "RealtimeError",
    "RealtimeTimeoutError",
    "RequestTooLargeError",
    "ResponseDecodeError",
    "ResponseTooLargeError",
    "ServerTimeoutError",
    "StreamError",
    "ToolLoopError",
    "UnknownInputWarning",
    "WorkersAIError",
    "code_of",
    "details_from",
    "error_details",
    "error_for",
    "error_from",
    "format_details",
    "is_quota",
]


class WorkersAIError(Exception):
    """Base class of every error raised by this package."""


class UnknownInputWarning(UserWarning):
    """An input key the model's schema does not declare (a typo such as ``contnt``); the request is sent
    as given. ``strict_inputs=True`` on the client makes it an ``InputValidationError`` instead."""


class ConfigurationError(WorkersAIError):
    """The client is missing an account id or token, or was given options that cannot work."""


class InputValidationError(WorkersAIError, ValueError):
    """A request failed the model's input schema before anything was sent."""

    def __init__(self, model_id: str, path: str, message: str) -> None:
        self.model_id = model_id
        self.path = path
        self.detail = message
        super().__init__(f"{model_id}: invalid input at {path}: {message}")


class ErrorDetail:
    """One ``{code, message}`` entry of the envelope's ``errors`` list."""

    __slots__ = ("code", "message")

    def __init__(self, code: int | None, message: str) -> None:
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"ErrorDetail(code={self.code!r}, message={self.message!r})"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code is not None else self.message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ErrorDetail) and (self.code, self.message) == (other.code, other.message)

    def __hash__(self) -> int:
        return hash((self.code, self.message))


class APIError(WorkersAIError):
    """The API answered with an error (a non-2xx status, or ``success: false``)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        errors: Sequence[ErrorDetail] = (),
        messages: Sequence[Any] = (),
        cf_ray: str | None = None,
        model_id: str | None = None,
        body: bytes = b"",
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.errors = list(errors)
        self.messages = list(messages)
        self.cf_ray = cf_ray
        self.model_id = model_id
        self.body = body[:4096]
        self.retry_after = retry_after
        parts = [message]
        if status is not None:
            parts.append(f"HTTP {status}")
        if cf_ray:
            parts.append(f"cf-ray {cf_ray}")
        super().__init__(" | ".join(parts))

    @property
    def codes(self) -> list[int]:
        return [e.code for e in self.errors if e.code is not None]

    @property
    def code(self) -> int | None:
        return self.codes[0] if self.codes else None


class BadRequestError(APIError):
    """HTTP 400 or another 4xx the API gives no more specific meaning to."""


class InvalidInputError(BadRequestError):
    """The API rejected the input (codes 5004, 5006)."""


class ModelNotFoundError(BadRequestError):
    """No such model, or no route for the URI (codes 5007, 3042, 7000, 7003)."""


class AuthenticationError(APIError):
    """Missing or wrong token (HTTP 401, code 10000)."""


class PermissionDeniedError(APIError):
    """The token or account may not use this model (HTTP 403)."""


class RateLimitError(APIError):
    """Too many requests or the daily allocation is used up (HTTP 429, codes 3021, 3036, 4006)."""


class QuotaExceededError(RateLimitError):
    """The account's daily allocation is used up (codes 3036, 4006); it resets at midnight UTC, so it is
    not retried."""


class CapacityError(RateLimitError):
    """No capacity for the model right now (code 3040); retried like a rate limit."""


class ServerTimeoutError(APIError):
    """The API timed out or aborted the request (HTTP 408, codes 3007, 3008)."""


class RequestTooLargeError(APIError):
    """The request body is too large (HTTP 413, code 3006)."""


class InternalServerError(APIError):
    """HTTP 5xx."""


class ResponseDecodeError(APIError):
    """The reply could not be read: truncated JSON, an HTML error page, or an unexpected shape."""


class ToolLoopError(WorkersAIError):
    """``run_tools`` reached ``max_rounds`` with the model still calling tools; ``calls`` are the last ones
    it asked for and ``messages`` the conversation so far."""

    def __init__(self, message: str, *, calls: Sequence[Any], messages: Sequence[Any]) -> None:
        self.calls = list(calls)
        self.messages = list(messages)
        super().__init__(message)


class ResponseTooLargeError(APIError):
    """The reply (or one server-sent event) is larger than the client's limit (``max_response_bytes``,
    ``max_event_bytes``); the connection was dropped, not read to the end."""


class StreamError(APIError):
    """A server-sent event stream failed: an error event, or the stream ended without ``[DONE]``."""


class BatchError(WorkersAIError):
    """An async batch job failed as a whole; ``state`` is the job's last status (queued, running, ...)."""

    def __init__(self, message: str, *, request_id: str, state: str | None = None) -> None:
        self.request_id = request_id
        self.state = state
        super().__init__(message)


class BatchTimeoutError(BatchError, TimeoutError):
    """``BatchJob.wait()`` reached its deadline before the job finished."""


class BatchItemError(BatchError):
    """``BatchItem.output`` of a request that failed: ``item_id`` is its index in the submitted list."""

    def __init__(self, message: str, *, item_id: int, request_id: str = "") -> None:
        self.item_id = item_id
        super().__init__(message, request_id=request_id, state="done")


class BatchItemsError(BatchError):
    """Some requests of a batch helper (``embed_many``) failed; the rest of the work is kept.

    ``results`` holds one entry per input (None where it failed); ``failures`` maps input index to error.
    """

    def __init__(self, message: str, *, request_id: str, results: Sequence[Any], failures: Mapping[int, str]) -> None:
        self.results = list(results)
        self.failures = dict(failures)
        super().__init__(message, request_id=request_id, state="done")


class ModelDeprecatedError(ModelNotFoundError):
    """The model reached its planned end of service (HTTP 410, code 5028): switch to a newer model.

    ``planned_end`` is the date the API named (``YYYY-MM-DD``), else the ``planned_deprecation_date``
    the catalog gave for the model (``catalog_end``, filled in by a generated model's handle), else None.
    """

    catalog_end: str | None = None

    @property
    def planned_end(self) -> str | None:
        for detail in self.errors:
            found = _DATE.search(detail.message)
            if found:
                return found.group(0)
        return self.catalog_end


class ModelAgreementError(PermissionDeniedError):
    """The model's licence terms were not accepted for this account (HTTP 403, code 5016).

    Accept them by sending the prompt ``agree`` to the model once, e.g. for Llama 3.2 Vision:
    ``ai.run("@cf/meta/llama-3.2-11b-vision-instruct", {"prompt": "agree"})``.
    """

    def __init__(self, message: str, **kwargs: Any) -> None:
        model = kwargs.get("model_id") or "the model"
        hint = f' (accept the licence once: send {{"prompt": "agree"}} to {model})'
        super().__init__(message + hint, **kwargs)


class JsonModeError(BadRequestError):
    """JSON mode was asked for with streaming (code 5023), or could not be met ("JSON Mode couldn't be met":
    the API documents no code for it; code 3030, what the emulator sends, or that message with any code)."""


class LoraUnsupportedError(BadRequestError):
    """``lora`` was sent to a model that takes no LoRA adapters (HTTP 405, code 5005)."""


class LoraFilesMissingError(BadRequestError):
    """The fine-tune lacks ``adapter_model.safetensors`` or ``adapter_config.json`` (code 3039)."""


class PaymentRequiredError(APIError):
    """A third-party model could not be billed: no Unified Billing credits (HTTP 402, code 2021)."""


class APIConnectionError(WorkersAIError):
    """The request never got an answer: DNS, refused or reset connection, TLS.

    ``request_sent`` is False when the request surely never reached the server (the connection could
    not be opened), so sending it again cannot repeat it; ``retryable`` is False for failures another
    attempt cannot mend (a TLS error).
    """

    def __init__(self, message: str, *, request_sent: bool = True, retryable: bool = True) -> None:
        self.request_sent = request_sent
        self.retryable = retryable
        super().__init__(message)


class APITimeoutError(APIConnectionError, TimeoutError):
    """The client-side timeout expired before the reply arrived."""


class RealtimeError(WorkersAIError):
    """A realtime (WebSocket) session ended badly: an abnormal close, a frame too large, a deadline.

    ``close_code``/``close_reason`` are the server's close frame (None when the connection just broke);
    ``unanswered`` lists what the client sent that the server had not answered yet.
    """

    def __init__(
        self,
        message: str,
        *,
        model_id: str,
        close_code: int | None = None,
        close_reason: str = "",
        unanswered: tuple[str, ...] = (),
    ) -> None:
        self.model_id = model_id
        self.close_code = close_code
        self.close_reason = close_reason
        self.unanswered = unanswered
        super().__init__(message)


class RealtimeTimeoutError(RealtimeError, TimeoutError):
    """A realtime session's deadline passed: no answer to what was sent, or a close that never finished."""


_BY_CODE: dict[int, type[APIError]] = {
    5007: ModelNotFoundError,
    3042: ModelNotFoundError,
    7000: ModelNotFoundError,
    7003: ModelNotFoundError,
    5004: InvalidInputError,
    5006: InvalidInputError,
    10000: AuthenticationError,
    3021: RateLimitError,
    3036: QuotaExceededError,
    4006: QuotaExceededError,
    3040: CapacityError,
    3007: ServerTimeoutError,
    3008: ServerTimeoutError,
    3006: RequestTooLargeError,
    5028: ModelDeprecatedError,
    5016: ModelAgreementError,
    5023: JsonModeError,
    3030: JsonModeError,
    5005: LoraUnsupportedError,
    3039: LoraFilesMissingError,
    2021: PaymentRequiredError,
}
JSON_MODE_UNMET = "json mode couldn't be met"  # the API's message, matched whatever code comes with it


_BY_STATUS: Mapping[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: ModelNotFoundError,
    408: ServerTimeoutError,
    413: RequestTooLargeError,
    402: PaymentRequiredError,
    410: ModelDeprecatedError,
    422: InvalidInputError,
    429: RateLimitError,
}


_MAX_CODE_DIGITS = 18  # Workers AI codes have 4 digits; a longer run of digits is not a code


def code_of(value: object) -> int | None:
    """An error code as an int: ints as they are, strings of ASCII digits (``"²"`` and 5,000-digit strings
    are not codes: ``int()`` would raise on them), anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit() and len(text) <= _MAX_CODE_DIGITS:
            return int(text)
    return None


def _detail(item: object) -> ErrorDetail:
    if isinstance(item, dict):
        entry = cast("dict[str, Any]", item)
        message = entry.get("message")
        return ErrorDetail(code_of(entry.get("code")), "" if message is None else str(message))
    text = str(item)
    # Binding-style errors read "3040: Capacity temporarily exceeded".
    head, sep, tail = text.partition(":")
    code = code_of(head) if sep else None
    return ErrorDetail(code, tail.strip() if code is not None else text)


def details_from(raw: object) -> list[ErrorDetail]:
    """The ``{code, message}`` entries of an ``errors`` value (a list, one object, or strings), leniently:
    codes sent as strings become ints, a null message becomes empty."""
    if raw is None:
        return []
    items: list[object] = cast("list[object]", raw) if isinstance(raw, list) else [raw]
    return [_detail(item) for item in items if item is not None]


def format_details(details: Sequence[ErrorDetail]) -> str:
    """``"5007: No such model; ..."`` for messages and logs."""
    return "; ".join(str(d) for d in details)


def error_for(status: int | None, codes: Sequence[int]) -> type[APIError]:
    """The most specific class for an HTTP status and the Workers AI codes of the envelope."""
    for code in codes:
        if code in _BY_CODE:
            return _BY_CODE[code]
    if status is None:
        return APIError
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return InternalServerError
    if 400 <= status < 500:
        return BadRequestError
    return APIError


QUOTA_CODES = frozenset({3036, 4006})
# What msgspec raises on bytes it cannot read: malformed JSON, invalid UTF-8, nesting too deep.
DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, UnicodeError, RecursionError)
_ANY = msgspec.json.Decoder()
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def _decode_object(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object, or None for anything unreadable (bad UTF-8, too deep, not JSON)."""
    try:
        return as_object(_ANY.decode(data))
    except DECODE_ERRORS:
        return None


def is_quota(data: bytes) -> bool:
    """Whether an error reply says the daily allocation is used up (retrying cannot help)."""
    env = _decode_object(data)
    return env is not None and any(d.code in QUOTA_CODES for d in details_from(env.get("errors")))


def error_details(data: Any) -> list[ErrorDetail] | None:
    """The errors an error object carries, or None when ``data`` is not an error object.

    An error object has a non-empty ``errors``, a truthy ``error`` or ``success: false``.
    """
    obj = as_object(data)
    if obj is None:
        return None
    errors, error = obj.get("errors"), obj.get("error")
    if not errors and not error and obj.get("success") is not False:
        return None
    return details_from(errors) + (details_from(error) if error else [])


def error_from(
    status: int,
    headers: Mapping[str, str],
    data: bytes,
    *,
    model_id: str | None,
    retry_after: float | None = None,
    envelope: Mapping[str, Any] | None = None,
) -> APIError:
    """The error for a failed reply, built from whatever the body holds (envelope, HTML, nothing).

    ``envelope`` is the already decoded body when the caller has it. A body that is not readable JSON
    (bad UTF-8, too deep) still gives the status's error class, with a snippet of its text.
    """
    cf_ray = headers.get("cf-ray")
    errors: list[ErrorDetail] = []
    messages: list[Any] = []
    content_type = headers.get("content-type", "")
    parsed = dict(envelope) if envelope is not None else (_decode_object(data) if data else None)
    if parsed is not None:
        errors = details_from(parsed.get("errors"))
        messages = as_list(parsed.get("messages")) or []
        message = format_details(errors)
        if not message and parsed.get("error") is not None:
            errors = details_from(parsed.get("error"))
            message = format_details(errors)
        if not message:
            message = f"HTTP {status} reply with no error details"
    elif data:
        errors = _salvage_details(data)
        snippet = format_details(errors) or _text_snippet(data, content_type)
        message = f"unreadable {content_type or 'reply'}: {snippet}" if snippet else f"unreadable {content_type}"
    else:
        message = f"HTTP {status} with an empty body"
    where = f"{model_id}: " if model_id else ""
    cls = error_for(status, [e.code for e in errors if e.code is not None])
    if JSON_MODE_UNMET in message.lower():
        cls = JsonModeError
    if parsed is None and 200 <= status < 300:
        cls = ResponseDecodeError
    return cls(
        where + message,
        status=status,
        errors=errors,
        messages=messages,
        cf_ray=cf_ray,
        model_id=model_id,
        body=data,
        retry_after=retry_after,
    )


class _Detail(msgspec.Struct):
    code: Any = None
    message: Any = None


class _ErrorsOnly(msgspec.Struct):
    errors: list[_Detail] = []


_ERRORS_ONLY: list[msgspec.json.Decoder[_ErrorsOnly]] = []  # built on first use: a typed decoder costs import time
_CODE_AND_MESSAGE = re.compile(r'"code"\s*:\s*"?([0-9]{1,18})"?\s*,\s*"message"\s*:\s*"((?:[^"\\]|\\.){0,500})"')


def _salvage_details(data: bytes) -> list[ErrorDetail]:
    """The ``errors`` of an envelope that is not valid JSON as a whole, where they can still be read:
    bytes that are not UTF-8 elsewhere in it (an unrelated string) are replaced first."""
    text = data[:65536].decode("utf-8", "replace")
    try:
        if not _ERRORS_ONLY:
            _ERRORS_ONLY.append(msgspec.json.Decoder(_ErrorsOnly))
        env = _ERRORS_ONLY[0].decode(text.encode())
    except DECODE_ERRORS:
        match = _CODE_AND_MESSAGE.search(text)
        return [ErrorDetail(code_of(match.group(1)), match.group(2))] if match else []
    return [ErrorDetail(code_of(d.code), "" if d.message is None else str(d.message)) for d in env.errors]


def _text_snippet(data: bytes, content_type: str) -> str:
    text = data[:2048].decode("utf-8", "replace")
    if "html" in content_type or text.lstrip().startswith("<"):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        text = title.group(1) if title else re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:200]
