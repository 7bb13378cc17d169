"""Every error the SDK raises, under one base class :class:`WorkersAIError`.

API errors carry the HTTP status, the envelope's ``errors`` (code, message), its ``messages`` and the
``cf-ray`` header. The API token never appears in any of them. Which class a failed reply gets (by HTTP
status and Workers AI code) and how its body is read is :mod:`._core.error_replies`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "ArgumentError",
    "AuthenticationError",
    "BadRequestError",
    "BatchError",
    "BatchItemError",
    "BatchItemsError",
    "BatchTimeoutError",
    "CapacityError",
    "ConfigurationError",
    "ErrorDetail",
    "InputValidationError",
    "InternalServerError",
    "InvalidInputError",
    "JSON_MODE_UNMET",
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


class ArgumentError(InputValidationError, TypeError):
    """A typed method got a keyword argument it does not take, or lacks one it needs (a ``TypeError``,
    as Python raises for a plain function; nothing was sent)."""


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


JSON_MODE_UNMET = "json mode couldn't be met"  # the API's message, matched whatever code comes with it
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
