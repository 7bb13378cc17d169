"""Every error the SDK raises, under one base class :class:`WorkersAIError`, and every warning it emits,
under :class:`WorkersAIWarning` (each pointing at the caller's line).

API errors carry the HTTP status, the envelope's ``errors`` (code, message), its ``messages`` and the
``cf-ray`` header. The API token never appears in any of them. Which class a failed reply gets (by HTTP
status and Workers AI code) and how its body is read is :mod:`._core.error_replies`; what the client adds
to name the real cause (the account id of a 7003, where the token of a 401 came from, the known model ids
nearest an unknown one) is :mod:`._core.causes`.

The classes are defined in two private modules: the trunk (:mod:`._error_base`: the base classes and
what a call's own machinery raises) and the rest (:mod:`._error_leaves`), which loads on the first use of
one of its names here (PEP 562), so a program whose calls succeed never creates those classes. Each
class shows this module as its own; import and catch them from here.
"""

from typing import TYPE_CHECKING, Any

from ._error_base import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ArgumentError,
    ConfigurationError,
    ErrorDetail,
    InputValidationError,
    ResponseDecodeError,
    WorkersAIError,
    WorkersAIWarning,
)

if TYPE_CHECKING:
    from ._error_leaves import (
        JSON_MODE_UNMET,
        AuthenticationError,
        BadRequestError,
        BatchError,
        BatchItemError,
        BatchItemsError,
        BatchTimeoutError,
        CapacityError,
        InternalServerError,
        InvalidInputError,
        JsonModeError,
        LoraFilesMissingError,
        LoraUnsupportedError,
        ModelAgreementError,
        ModelDeprecatedError,
        ModelNotFoundError,
        PaymentRequiredError,
        PermissionDeniedError,
        QuotaExceededError,
        RateLimitError,
        RealtimeError,
        RealtimeTimeoutError,
        RequestTooLargeError,
        ResponseTooLargeError,
        RouteNotFoundError,
        ServerTimeoutError,
        StreamError,
        ToolLoopError,
        UnknownInputWarning,
        UnknownModelWarning,
    )

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
    "RouteNotFoundError",
    "ServerTimeoutError",
    "StreamError",
    "ToolLoopError",
    "UnknownInputWarning",
    "UnknownModelWarning",
    "WorkersAIError",
    "WorkersAIWarning",
]

if not TYPE_CHECKING:  # type checkers see the imports above: a misspelt name stays an error, not Any

    def __getattr__(name: str) -> Any:
        if name not in __all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from . import _error_leaves

        value = getattr(_error_leaves, name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
