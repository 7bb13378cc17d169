"""The Cloudflare envelope ``{result, success, errors, messages}``: the one place replies are unwrapped.

A bottom layer: it works on a reply's status, headers and bytes, returns what the envelope holds and
raises the mapped error; it calls nothing above it (the caller keeps ``messages`` where it wants). The
error mapping (:mod:`.error_replies`) is loaded by the first reply that is an error: a client that only
succeeds never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import msgspec

from .._error_base import ResponseDecodeError
from .jsonview import DECODE_ERRORS, as_list, as_object

__all__ = ["checked", "media_type", "unreadable", "unwrap"]

_ANY = msgspec.json.Decoder()


def media_type(headers: Mapping[str, str], default: str = "application/json") -> str:
    """The media type of a reply, lower-case and without parameters."""
    given = headers.get("content-type")
    if given == "application/json":  # the usual reply, as the API writes it: nothing to take apart
        return given
    return (given or default).split(";", 1)[0].strip().lower()


def unreadable(
    status: int, headers: Mapping[str, str], data: bytes, why: str, *, model_id: str | None, what: str = "reply"
) -> ResponseDecodeError:
    """The error for a reply that cannot be read as what it should be."""
    where = f"{model_id}: " if model_id else ""
    return ResponseDecodeError(
        f"{where}the {what} {why}", status=status, cf_ray=headers.get("cf-ray"), model_id=model_id, body=data
    )


def checked(
    status: int, headers: Mapping[str, str], data: bytes, *, model_id: str | None, what: str = "reply"
) -> tuple[dict[str, Any], list[Any]]:
    """The whole envelope of a reply and its ``messages``.

    Raises the mapped error for ``success: false`` (even on HTTP 200) or a non-2xx status, and
    ``ResponseDecodeError`` for bytes that are not a JSON envelope (bad UTF-8, nesting too deep,
    truncated) or whose ``success`` is anything but the JSON boolean ``true``. Lenient about the rest:
    ``errors``/``messages`` may be null or missing.
    """
    try:
        decoded: Any = _ANY.decode(data)
    except DECODE_ERRORS as exc:
        if status >= 300:
            from .error_replies import error_from

            raise error_from(status, headers, data, model_id=model_id) from None
        why = "nests too deeply" if isinstance(exc, RecursionError) else "is not valid JSON"
        raise unreadable(status, headers, data, f"{why} ({len(data)} bytes)", model_id=model_id, what=what) from None
    env = as_object(decoded)
    if env is None or not ({"result", "success", "errors"} & env.keys()):
        if status >= 300:
            from .error_replies import error_from

            raise error_from(status, headers, data, model_id=model_id)
        raise unreadable(status, headers, data, "is JSON but not a Cloudflare envelope", model_id=model_id, what=what)
    success = env.get("success")
    if success is not True or status >= 300:
        _failed(status, headers, data, env, model_id=model_id, what=what)
    return env, as_list(env.get("messages")) or []


def _failed(
    status: int, headers: Mapping[str, str], data: bytes, env: dict[str, Any], *, model_id: str | None, what: str
) -> NoReturn:
    """Raise what an envelope that is not a success means (see :func:`checked`)."""
    from .error_replies import error_details, error_from

    success = env.get("success")
    if success is False or status >= 300 or error_details(env):
        raise error_from(status, headers, data, model_id=model_id, envelope=env)
    raise unreadable(status, headers, data, f"has success={success!r}, not true", model_id=model_id, what=what)


def unwrap(
    status: int, headers: Mapping[str, str], data: bytes, *, model_id: str | None, what: str = "reply"
) -> tuple[Any, list[Any]]:
    """The ``result`` of an enveloped reply and its ``messages``; a missing or null ``result`` is an error."""
    env, messages = checked(status, headers, data, model_id=model_id, what=what)
    result = env.get("result")
    if result is None:
        raise unreadable(status, headers, data, "has success true but no result", model_id=model_id, what=what)
    return result, messages
