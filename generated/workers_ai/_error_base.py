"""The trunk of the error tree: :class:`WorkersAIError` and the errors a call's own machinery raises
without an error reply (configuration, input, connection, timeout, a reply it cannot read), with
:class:`APIError`, the base of every reply's error. Public as :mod:`..errors`, which re-exports these and
loads the rest of the tree (:mod:`._error_leaves`) on first use; imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "ArgumentError",
    "ConfigurationError",
    "ErrorDetail",
    "InputValidationError",
    "ResponseDecodeError",
    "WorkersAIError",
    "WorkersAIWarning",
]


class WorkersAIError(Exception):
    """Base class of every error raised by this package."""


class WorkersAIWarning(UserWarning):
    """Base class of every warning this package emits; each points at the line of yours that caused it."""


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


class ResponseDecodeError(APIError):
    """The reply could not be read: truncated JSON, an HTML error page, or an unexpected shape."""


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


# Shown (repr, tracebacks, pickles) as the public module's classes, which they are.
for _name in __all__:
    if isinstance(globals()[_name], type):
        globals()[_name].__module__ = __name__.rpartition(".")[0] + ".errors"
