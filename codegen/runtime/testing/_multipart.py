"""``multipart/form-data`` request bodies, read with the standard library's email parser."""

from __future__ import annotations

from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

__all__ = ["Part", "parse_form"]


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
        name = sub.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = sub.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        declared = sub.get("content-type")
        filename = sub.get_filename()
        parts.append(Part(name, filename, sub.get_content_type() if declared else None, data))
    if not parts and message.defects:
        raise ValueError(f"malformed multipart body: {message.defects[0]!r}")
    return parts
