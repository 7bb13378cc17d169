"""``multipart/form-data`` request bodies, read with the standard library's email parser; a part's name and
file name as the HTML standard writes them (what urllib3 and browsers send, what the API reads): the text
between the quotes as it is, in UTF-8, with ``%22``, ``%0D`` and ``%0A`` standing for ``"``, CR and LF (a
backslash escapes nothing, unlike in a MIME quoted string)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

__all__ = ["Part", "parse_form"]

_QUOTED = re.compile(r'(?:^|;)\s*(name|filename)="([^"]*)"', re.IGNORECASE)
_ESCAPES = {"%22": '"', "%0D": "\r", "%0A": "\n"}


@dataclass(frozen=True)
class Part:
    """One form field: its name, the file name and content type it declares (if any), and its bytes."""

    name: str
    filename: str | None
    content_type: str | None
    data: bytes

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def parse_form(content_type: str, body: bytes) -> list[Part]:
    """The fields of a ``multipart/form-data`` body; ValueError when it is not one."""
    if content_type.split(";")[0].strip().lower() != "multipart/form-data" or "boundary=" not in content_type:
        raise ValueError("expected a multipart/form-data body with a boundary")
    head = b"Content-Type: " + content_type.encode("latin-1") + b"\r\nMIME-Version: 1.0\r\n\r\n"
    message = BytesParser(EmailMessage, policy=policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise ValueError("the multipart body has no parts")
    parts: list[Part] = []
    for sub in message.iter_parts():
        raw = next((str(v) for k, v in sub.raw_items() if k.lower() == "content-disposition"), "")
        utf8 = raw.encode("ascii", "surrogateescape").decode("utf-8", "replace")  # the parser read bytes as ASCII
        quoted = {k.lower(): _unescape(v) for k, v in _QUOTED.findall(utf8)}
        name = quoted.get("name", sub.get_param("name", header="content-disposition"))
        if not isinstance(name, str):
            continue
        payload = sub.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        declared = sub.get("content-type")
        filename = quoted.get("filename", sub.get_filename())
        parts.append(Part(name, filename, sub.get_content_type() if declared else None, data))
    if not parts and message.defects:
        raise ValueError(f"malformed multipart body: {message.defects[0]!r}")
    return parts


def _unescape(text: str) -> str:
    for escaped, char in _ESCAPES.items():
        text = text.replace(escaped, char)
    return text
