"""A :class:`Reply` as the bytes to write and when: :func:`frames` turns it into a :class:`Plan`
(status line and headers, the body whole or chunked, the pauses of a slow reply or a stream, and how
the connection ends: kept open, closed, or reset)."""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Literal

from ._reply import Reply

__all__ = ["Ending", "Frame", "Plan", "frames"]

Ending = Literal["keep", "close", "reset"]


@dataclass(frozen=True)
class Frame:
    delay: float  # seconds to wait before writing ``data``
    data: bytes


@dataclass(frozen=True)
class Plan:
    frames: list[Frame]
    ending: Ending


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def frames(reply: Reply, keep_alive: bool) -> Plan:
    """How to send ``reply`` on a connection whose client asked for keep-alive (``keep_alive``) or not."""
    lines = [f"HTTP/1.1 {reply.status} {_reason(reply.status)}"]
    lines += [f"{k}: {v}" for k, v in reply.headers]
    if reply.chunks is not None:
        lines.append("transfer-encoding: chunked")
    else:
        lines.append(f"content-length: {len(reply.body)}")
    ending: Ending = "keep"
    if reply.cut_mode is not None:
        ending = reply.cut_mode
    elif reply.close or not keep_alive:
        ending = "close"
    if ending != "keep":
        lines.append("connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    if reply.chunks is None:
        body = reply.body if reply.cut is None else reply.body[: reply.cut]
        return Plan([Frame(reply.delay, head + body)], ending)  # one write: no Nagle / delayed-ACK stall
    chunks = reply.chunks if reply.cut is None else reply.chunks[: reply.cut]
    out: list[Frame] = []
    pending = head
    for i, chunk in enumerate(chunks):
        data = pending + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        if i == len(chunks) - 1 and reply.cut is None:
            data += b"0\r\n\r\n"
        out.append(Frame(reply.delay if i == 0 else reply.chunk_interval, data))
        pending = b""
    if pending:  # no chunks at all
        out.append(Frame(reply.delay, pending + (b"0\r\n\r\n" if reply.cut is None else b"")))
    return Plan(out, ending)
