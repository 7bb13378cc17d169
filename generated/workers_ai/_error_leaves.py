"""The rest of the error tree: one class per failure an error reply (by HTTP status and Workers AI
code), a stream, a batch, a tool loop or a realtime session ends in, and the unknown-input warning.
Public as :mod:`..errors`, which loads this module on first use of one of these names (PEP 562): a
program whose calls succeed never creates them. Which class a reply gets is :mod:`._core.error_replies`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._error_base import APIError, WorkersAIError, WorkersAIWarning

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "BatchError",
    "BatchItemError",
    "BatchItemsError",
    "BatchTimeoutError",
    "CapacityError",
    "InternalServerError",
    "InvalidInputError",
    "JSON_MODE_UNMET",
    "JsonModeError",
    "LoraFilesMissingError",
    "LoraUnsupportedError",
    "ModelAgreementError",
    "ModelDeprecatedError",
    "ModelNotFoundError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RateLimitError",
    "RealtimeError",
    "RealtimeTimeoutError",
    "RequestTooLargeError",
    "ResponseTooLargeError",
    "RouteNotFoundError",
    "ServerTimeoutError",
    "StreamError",
    "ToolLoopError",
    "UnknownInputWarning",
    "UnknownModelWarning",
]


class UnknownInputWarning(WorkersAIWarning):
    """An input key the model's schema does not declare (a typo such as ``contnt``, with the declared key it
    is near: "did you mean 'content'?"); the request is sent as given. ``strict_inputs=True`` on the client
    makes it an ``InputValidationError`` instead."""


class UnknownModelWarning(WorkersAIWarning):
    """``model()`` or ``run()`` got a model id this package does not know that looks like a typing slip of
    one it does (``@cf/meta/llama-3-8b-instruk``: "did you mean '@cf/meta/llama-3-8b-instruct'?"). The id is
    used as given, since a model newer than this package is not in its registry; an id that differs from a
    known one by a version (digits), a suffix or a short word (``-en``/``-es``) is not warned about."""


class BadRequestError(APIError):
    """HTTP 400 or another 4xx the API gives no more specific meaning to."""


class InvalidInputError(BadRequestError):
    """The API rejected the input (codes 5004, 5006)."""


class ModelNotFoundError(BadRequestError):
    """No such model (codes 5007, 3042; HTTP 404 without a code), or no route for the URI (7000). For 5007 the
    message names the known model ids nearest the one asked for ("did you mean ...?")."""


class RouteNotFoundError(BadRequestError):
    """The API could not route the request (code 7003, HTTP 404: "Could not route to /client/v4/accounts/
    <id>/..."): the account id is almost always wrong, not the model. The message names the account id and
    where it came from (the ``account_id`` argument or ``CLOUDFLARE_ACCOUNT_ID``). A ``BadRequestError``
    like ``ModelNotFoundError``, but not one of those: ``except ModelNotFoundError`` no longer catches it."""


class AuthenticationError(APIError):
    """Missing or wrong token (HTTP 401, code 10000). The message says where the token came from (the
    ``api_token`` argument or ``CLOUDFLARE_API_TOKEN``; never its value) and what to check."""


class PermissionDeniedError(APIError):
    """The token or account may not use this model (HTTP 403); where the token came from, as for
    ``AuthenticationError``."""


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
            found = re.search(_DATE, detail.message)
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
_DATE = r"\b\d{4}-\d{2}-\d{2}\b"  # compiled (and cached by re) on first use, not at import


# Shown (repr, tracebacks, pickles) as the public module's classes, which they are.
for _name in __all__:
    if isinstance(globals()[_name], type):
        globals()[_name].__module__ = __name__.rpartition(".")[0] + ".errors"
