"""Documents to Markdown: ``POST /ai/tomarkdown`` (multipart ``files``) and the formats it takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, cast

import msgspec

from .._core.config import SessionConfig, api_url, remember
from .._core.envelope import unwrap
from .._core.flow import Flow
from .._core.form import FileInput, FormField, encode_form, guess_type, read_file_input
from .._core.requests import get_json_flow, request_flow
from ..errors import InputValidationError, ResponseDecodeError

__all__ = ["MarkdownFormat", "MarkdownResult", "supported_flow", "to_markdown_flow"]

T = TypeVar("T")


class MarkdownResult(msgspec.Struct, frozen=True, rename={"mime_type": "mimeType"}):
    """One file converted: its Markdown ``data`` and ``tokens``, or the ``error`` that stopped it."""

    name: str
    mime_type: str = ""
    tokens: int = 0
    data: str = ""
    error: str | None = None
    format: str = "markdown"

    @property
    def ok(self) -> bool:
        return self.error is None and self.format != "error"


class MarkdownFormat(msgspec.Struct, frozen=True, rename={"mime_type": "mimeType"}):
    """A format ``/ai/tomarkdown`` converts: a file extension and its MIME type."""

    extension: str
    mime_type: str


def to_markdown_flow(session: SessionConfig, files: Sequence[FileInput] | FileInput) -> Flow[list[MarkdownResult]]:
    """Convert ``files`` (paths, binary files, ``(name, bytes)`` pairs) in one request; one result per file,
    in order. A file the API cannot convert gets a result with ``error`` set; the others are still converted."""
    single = isinstance(files, (str, tuple)) or not isinstance(files, Sequence)
    items = [cast("FileInput", files)] if single else cast("Sequence[FileInput]", files)
    fields: list[FormField] = []
    for index, item in enumerate(items):
        name, data = read_file_input(item, index)
        fields.append(("files", (name, data, guess_type(name))))
    if not fields:
        raise InputValidationError("tomarkdown", "$.files", "to_markdown needs at least one file")
    body, content_type = encode_form(fields)
    reply = yield from request_flow(session, "POST", api_url(session, "ai/tomarkdown"), body, content_type=content_type)
    result, messages = unwrap(reply.status, reply.headers, reply.data, model_id=None, what="tomarkdown reply")
    remember(session, reply.status, reply.headers, messages)
    return in_order(_convert(result, list[MarkdownResult], reply.data), [f[0] for _, f in fields], reply.data)


def in_order(results: list[MarkdownResult], names: list[str], body: bytes) -> list[MarkdownResult]:
    """``results`` in the order of the files sent (matched by name): one result per file, or
    ``ResponseDecodeError`` (a reply with more, fewer or other files is never returned as if it fit)."""
    if [r.name for r in results] == names:
        return results
    if sorted(r.name for r in results) != sorted(names):
        raise ResponseDecodeError(
            f"tomarkdown: sent {len(names)} file(s) {names!r}, the reply has {len(results)}"
            f" {[r.name for r in results]!r}",
            body=body,
        )
    pending: dict[str, list[MarkdownResult]] = {}
    for r in results:
        pending.setdefault(r.name, []).append(r)
    return [pending[name].pop(0) for name in names]


def supported_flow(session: SessionConfig) -> Flow[list[MarkdownFormat]]:
    """``GET /ai/tomarkdown/supported``."""
    env = yield from get_json_flow(session, "ai/tomarkdown/supported")
    return _convert(env.get("result"), list[MarkdownFormat], b"")


def _convert(value: Any, kind: type[T], body: bytes) -> T:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise ResponseDecodeError(f"tomarkdown: unexpected reply shape: {exc}", body=body) from None
