"""The emulator under unfinished uploads and with bad options: bounded memory, still serving; options
checked where they are written."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"
BODY = 9_900_000  # under the 10 MB request limit: each upload alone is acceptable


def _status(sock: socket.socket) -> int | None:
    """The status of what the server sent back on ``sock`` within 0.3 s, or None (still waiting)."""
    sock.settimeout(0.3)
    try:
        data = sock.recv(4096)
    except (TimeoutError, OSError):
        return None
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None


def test_unfinished_uploads_are_refused_past_a_memory_bound_and_the_server_keeps_serving() -> None:
    with Emulator() as emu:
        host, port = emu.url.split("://")[1].split(":")
        head = (
            f"POST /client/v4/accounts/{emu.account_id}/ai/run/{BGE} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {emu.api_token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {BODY}\r\n\r\n"
        ).encode()
        socks: list[socket.socket] = []
        try:
            for _ in range(10):  # 10 x 9.9 MB: half again what the server holds for unfinished requests (64 MiB)
                sock = socket.create_connection((host, int(port)))
                sock.sendall(head + b"x" * (BODY - 10))  # all but the last 10 bytes
                socks.append(sock)
            time.sleep(0.5)
            statuses = [_status(s) for s in socks]
            refused = statuses.count(413)
            assert 2 <= refused <= 5, statuses  # six fit in 64 MiB, the rest are refused
            assert statuses.count(None) == len(socks) - refused  # the others still wait for their last bytes
            with emu.client() as ai:
                out = ai.model(BGE).embed(text=["still serving"])
            assert len(out.data) == 1
        finally:
            for sock in socks:
                sock.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("batch_delay", (30, 1, 2)),  # one number (for both) or a pair: issue 28
        ("batch_delay", float("nan")),
        ("batch_delay", (1, float("nan"))),
        ("batch_delay", (-1, 0)),
        ("batch_polls", (1,)),
        ("batch_polls", (1, -1)),
        ("stream_interval", "fast"),
        ("stream_interval", float("inf")),
        ("keep_requests", 0),
        ("keep_jobs", 1.5),
        ("shuffle_batches", "yes"),
        ("account_id", "acc1"),
        ("api_token", " token"),
        ("log", "emulator.log"),
        ("workers", 0),
        ("port", 70000),
    ],
)
def test_options_are_checked_where_they_are_written(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        Emulator(start=False, **{option: value})


def test_options_set_later_are_checked_too() -> None:
    emu = Emulator(start=False)
    with pytest.raises(ValueError, match="batch_delay"):
        emu.batch_delay = (30, 1, 2)  # type: ignore[assignment]
    emu.batch_delay = 30  # type: ignore[assignment]  # one number: as long queued as running
    assert emu.batch_delay == (30.0, 30.0)
    emu.batch_delay = (0.0, 0.1)
    assert emu.batch_delay == (0.0, 0.1)
