"""Plain-HTTP calls to an emulator's account routes (no SDK in between), for the route tests."""

from __future__ import annotations

import json
from typing import Any

import urllib3
from workers_ai.testing import Emulator

_POOL = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=30))


def call(
    emu: Emulator,
    method: str,
    path: str,
    body: Any = None,
    *,
    fields: dict[str, Any] | None = None,
    token: str | None = None,
    **headers: str,
) -> urllib3.BaseHTTPResponse:
    """``method`` on ``…/accounts/{account}/{path}``: a JSON body, or a multipart form of ``fields``."""
    hdrs = {"Authorization": f"Bearer {token or emu.api_token}", **headers}
    url = f"{emu.base_url}/accounts/{emu.account_id}/{path}"
    if fields is not None:
        return _POOL.request(method, url, fields=fields, headers=hdrs)
    if body is None:
        return _POOL.request(method, url, headers=hdrs)
    hdrs.setdefault("Content-Type", "application/json")
    return _POOL.request(method, url, body=json.dumps(body).encode(), headers=hdrs)


def result(resp: urllib3.BaseHTTPResponse) -> Any:
    """The envelope's ``result`` of a 200 reply."""
    assert resp.status == 200, resp.data[:500]
    env = json.loads(resp.data)
    assert env["success"] is True and env["errors"] == []
    return env["result"]


def error(resp: urllib3.BaseHTTPResponse) -> tuple[int, int, str]:
    """``(HTTP status, code, message)`` of an enveloped error reply."""
    env = json.loads(resp.data)
    assert env["success"] is False and env["result"] is None, env
    first = env["errors"][0]
    return resp.status, int(first["code"]), str(first["message"])


def sse(resp: urllib3.BaseHTTPResponse) -> list[str]:
    """The ``data:`` payloads of a server-sent event stream, in order."""
    assert resp.status == 200 and resp.headers["content-type"].startswith("text/event-stream")
    text = resp.data.decode()
    return [line[len("data: ") :] for line in text.split("\n") if line.startswith("data: ")]
