"""The Cloudflare envelope ``{result, success, errors, messages}``: the one place replies are unwrapped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ._json import as_list, as_object
from .errors import ResponseDecodeError

if TYPE_CHECKING:
    import urllib3

    from ._core import BaseClient

__all__ = ["checked", "content_type_of", "unwrap"]

_ANY = msgspec.json.Decoder()


def content_type_of(resp: urllib3.BaseHTTPResponse, default: str = "application/json") -> str:
    """The media type of a reply, lower-case and without parameters."""
    return (resp.headers.get("content-type") or default).split(";", 1)[0].strip().lower()


def unwrap(
    client: BaseClient, resp: urllib3.BaseHTTPResponse, data: bytes, *, model_id: str | None, what: str = "reply"
) -> Any:
    """The ``result`` of an enveloped reply (see :func:`checked`)."""
    return checked(client, resp, data, model_id=model_id, what=what).get("result")


def checked(
    client: BaseClient, resp: urllib3.BaseHTTPResponse, data: bytes, *, model_id: str | None, what: str = "reply"
) -> dict[str, Any]:
    """The whole envelope of a reply; ``success: false`` (even on HTTP 200) raises the mapped error.

    Lenient about the rest: ``errors``/``messages`` may be null or missing. The envelope's ``messages``
    and the ``cf-ray`` are kept on ``client.last_response``.
    """
    where = f"{model_id}: " if model_id else ""

    def unreadable(why: str) -> ResponseDecodeError:
        return ResponseDecodeError(
            f"{where}the {what} {why}",
            status=resp.status,
            cf_ray=resp.headers.get("cf-ray"),
            model_id=model_id,
            body=data,
        )

    try:
        decoded: Any = _ANY.decode(data)
    except msgspec.DecodeError:
        raise unreadable(f"is not valid JSON (truncated or malformed, {len(data)} bytes)") from None
    env = as_object(decoded)
    if env is None or not ({"result", "success", "errors"} & env.keys()):
        raise unreadable("is JSON but not a Cloudflare envelope")
    if env.get("success") is False or resp.status >= 300:
        raise client.error_from(resp.status, resp.headers, data, model_id=model_id)
    client.remember(resp, as_list(env.get("messages")) or [])
    return env
