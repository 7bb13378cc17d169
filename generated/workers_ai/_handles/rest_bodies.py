"""The request bodies the REST API takes instead of JSON, for the models whose schema says so: a form-body
model's request (FLUX.2) as ``multipart/form-data``, and a raw-body model's field (nova-3's audio) as the
body itself with the other fields as query parameters. Loaded by the first such call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlencode

import msgspec

from .._core.form import encode_form
from ..families.media import sniff

if TYPE_CHECKING:
    from .._core.form import FormField

__all__ = ["form_body", "raw_body"]


def form_body(request: msgspec.Struct, extra: Mapping[str, Any] | None = None) -> tuple[bytes, str]:
    """``(body, content type)``: each set field a part under its wire name, bytes as a file part with their
    sniffed media type, everything else (and each key of ``extra``) as text."""
    fields: list[FormField] = [(name, _query_text(value)) for name, value in (extra or {}).items()]
    for name, wire in zip(request.__struct_fields__, request.__struct_encode_fields__, strict=True):
        value = getattr(request, name)
        if value is msgspec.UNSET or value is None:
            continue
        if isinstance(value, bytes):  # binary fields hold bytes (the method read the path or file)
            fields.append((wire, (wire, value, sniff(value))))
        else:
            fields.append((wire, _query_text(value)))
    return encode_form(fields)


def raw_body(
    request: msgspec.Struct, field: str, extra: Mapping[str, Any] | None = None
) -> tuple[bytes, str, str] | None:
    """``(body, content type, query)`` when ``field`` holds bytes, the other fields (and ``extra``) as the
    query; None when it does not (sent as JSON)."""
    data = getattr(request, field, None)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    options = {**{k: v for k, v in msgspec.to_builtins(request).items() if k != field}, **(extra or {})}
    raw = bytes(cast("bytes", data))
    return raw, sniff(raw), urlencode({k: _query_text(v) for k, v in options.items()})


def _query_text(value: Any) -> str:
    """A query parameter's or form field's text: JSON's spelling for booleans and numbers, strings as they are."""
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()
