"""Which error a failed reply means: the class for an HTTP status and Workers AI codes, and the reading
of an error body (an envelope, one that is not quite JSON, HTML, nothing).

The classes themselves are :mod:`workers_ai.errors`; this module holds the rules for picking one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

from ..errors import (
    JSON_MODE_UNMET,
    APIError,
    AuthenticationError,
    BadRequestError,
    CapacityError,
    ErrorDetail,
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
    RequestTooLargeError,
    ResponseDecodeError,
    RouteNotFoundError,
    ServerTimeoutError,
)
from .jsonview import DECODE_ERRORS, as_list, as_object

if TYPE_CHECKING:
    from .causes import Credentials

__all__ = [
    "DECODE_ERRORS",
    "QUOTA_CODES",
    "code_of",
    "details_from",
    "error_details",
    "error_for",
    "error_from",
    "format_details",
    "is_quota",
    "until_daily_reset",
]


_BY_CODE: dict[int, type[APIError]] = {
    5007: ModelNotFoundError,
    3042: ModelNotFoundError,
    7000: ModelNotFoundError,
    7003: RouteNotFoundError,
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
_ANY = msgspec.json.Decoder()


def _decode_object(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object, or None for anything unreadable (bad UTF-8, too deep, not JSON)."""
    try:
        return as_object(_ANY.decode(data))
    except DECODE_ERRORS:
        return None


def until_daily_reset(now: float | None = None) -> float:
    """Seconds until the daily allocation resets: the next midnight UTC (as the API documents)."""
    now = time.time() if now is None else now
    return 86400.0 - now % 86400.0


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
    client: Credentials | None = None,
) -> APIError:
    """The error for a failed reply, built from whatever the body holds (envelope, HTML, nothing).

    ``envelope`` is the already decoded body when the caller has it. A body that is not readable JSON
    (bad UTF-8, too deep) still gives the status's error class, with a snippet of its text. ``client`` (the
    client that sent the request) lets the message name the real cause (:mod:`.causes`): the account id of a
    7003, where the token of a 401 came from, the known model ids nearest an unknown one.
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
    if issubclass(cls, (RouteNotFoundError, AuthenticationError, PermissionDeniedError, ModelNotFoundError)):
        from .causes import hint_for

        hint = hint_for(cls, [e.code for e in errors if e.code is not None], model_id, client)
        message += f" ({hint})" if hint else ""
    if issubclass(cls, QuotaExceededError):
        reset = until_daily_reset()
        retry_after = reset if retry_after is None else retry_after
        message += (
            f" (the daily allocation resets at 00:00 UTC, in {int(reset // 3600)}h {int(reset % 3600 // 60):02d}m;"
            " not retried)"
        )
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
# Compiled (and cached by ``re``) by the first error body that needs it: compiling costs import time.
_CODE_AND_MESSAGE = r'"code"\s*:\s*"?([0-9]{1,18})"?\s*,\s*"message"\s*:\s*"((?:[^"\\]|\\.){0,500})"'


def _salvage_details(data: bytes) -> list[ErrorDetail]:
    """The ``errors`` of an envelope that is not valid JSON as a whole, where they can still be read:
    bytes that are not UTF-8 elsewhere in it (an unrelated string) are replaced first."""
    text = data[:65536].decode("utf-8", "replace")
    try:
        if not _ERRORS_ONLY:
            _ERRORS_ONLY.append(msgspec.json.Decoder(_ErrorsOnly))
        env = _ERRORS_ONLY[0].decode(text.encode())
    except DECODE_ERRORS:
        match = re.search(_CODE_AND_MESSAGE, text)
        return [ErrorDetail(code_of(match.group(1)), match.group(2))] if match else []
    return [ErrorDetail(code_of(d.code), "" if d.message is None else str(d.message)) for d in env.errors]


def _text_snippet(data: bytes, content_type: str) -> str:
    text = data[:2048].decode("utf-8", "replace")
    if "html" in content_type or text.lstrip().startswith("<"):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        text = title.group(1) if title else re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:200]
