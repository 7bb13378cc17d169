"""AI Gateway: the Universal Endpoint (``POST /v1/{account}/{gateway}`` with an array of provider steps,
tried in order until one succeeds; ``cf-aig-step`` says which one answered), the response cache that
``cf-aig-cache-ttl`` turns on (``cf-aig-cache-status: HIT``/``MISS``), and ``cf-aig-log-id``.

A step runs as the request it stands for, through the same API (so it is recorded, validated and meets
injected faults like any other request): a ``workers-ai`` step is ``POST /ai/run/{endpoint}`` with the
step's own ``Authorization``; a step for another provider (``openai``, ``anthropic``, ...) is a chat
completion in that provider's shape. Any reply of 400 or above, or a cut-off one, moves on to the next
step; when every step fails, the last failure is the answer.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from .._core.jsonview import as_list, as_object
from ._reply import APIError, Reply, error_reply
from ._thirdparty import PROVIDERS

__all__ = ["ResponseCache", "log_id", "universal"]

Handle = Callable[[str, str, Mapping[str, str], bytes], Reply]
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PROVIDER_ENDPOINTS = frozenset({"chat/completions", "v1/chat/completions", "messages", "v1/messages"})


def log_id() -> str:
    """A ULID, the form of AI Gateway's log ids: 48 bits of milliseconds, 80 random bits, base 32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def _failed(reply: Reply) -> bool:
    return reply.status >= 400 or reply.cut is not None


def universal(handle: Handle, account: str, token: str, body: bytes) -> Reply:
    """Run the steps of a Universal Endpoint request in order; the first success answers."""
    try:
        steps: Any = msgspec.json.decode(body) if body.strip() else None
    except msgspec.DecodeError:
        steps = None
    listed = as_list(steps)
    if listed is None and as_object(steps) is not None:
        listed = [steps]  # one step may come as an object
    if not listed:
        raise APIError(400, 2001, "Invalid request: expected a JSON array of provider steps")
    last: Reply | None = None
    for i, raw in enumerate(listed):
        reply = _step(handle, account, token, as_object(raw), i)
        reply.headers.append(("cf-aig-step", str(i)))
        if not _failed(reply):
            return reply
        last = reply
    assert last is not None
    return last


def _step(handle: Handle, account: str, token: str, step: dict[str, Any] | None, i: int) -> Reply:
    if step is None:
        return error_reply(400, 2001, f"Invalid request: step {i} is not an object")
    provider, endpoint = step.get("provider"), step.get("endpoint")
    query = as_object(step.get("query"))
    if not isinstance(provider, str) or not isinstance(endpoint, str) or query is None:
        return error_reply(400, 2001, f"Invalid request: step {i} needs provider, endpoint and query (an object)")
    step_headers = {str(k).lower(): str(v) for k, v in (as_object(step.get("headers")) or {}).items()}
    if "authorization" not in step_headers and isinstance(step.get("authorization"), str):
        step_headers["authorization"] = str(step["authorization"])
    headers = {"content-type": "application/json", **step_headers}
    payload = msgspec.json.encode(query)
    provider = provider.lower()
    if provider == "workers-ai":
        target = endpoint.lstrip("/")
        if target.startswith(("v1/", "compat/")):
            return handle("POST", f"/v1/{account}/gw/workers-ai/{target}", headers, payload)
        if target.startswith("run/"):
            target = target[len("run/") :]
        return handle("POST", f"/client/v4/accounts/{account}/ai/run/{target}", headers, payload)
    if provider not in PROVIDERS:
        return error_reply(400, 2008, "Invalid provider")
    if endpoint.strip("/") not in _PROVIDER_ENDPOINTS:
        return error_reply(400, 7000, f"No route for that URI: {provider}/{endpoint}")
    # Another provider: its key is its own business; the emulator answers in its shape.
    model = query.get("model")
    body = dict(query)
    body["model"] = f"{provider}/{model}" if isinstance(model, str) else provider
    headers["authorization"] = f"Bearer {token}"
    return handle("POST", f"/v1/{account}/gw/compat/chat/completions", headers, msgspec.json.encode(body))


class ResponseCache:
    """Replies kept for ``cf-aig-cache-ttl`` seconds, by route and body (at most ``size`` of them)."""

    def __init__(self, size: int = 256) -> None:
        self._items: OrderedDict[tuple[str, bytes], tuple[float, Reply]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    @staticmethod
    def ttl(headers: Mapping[str, str]) -> float | None:
        """How long the request asks its reply to be cached; None when it asks for no caching."""
        if headers.get("cf-aig-skip-cache", "").lower() == "true":
            return None
        try:
            ttl = float(headers.get("cf-aig-cache-ttl", ""))
        except ValueError:
            return None
        return ttl if ttl > 0 else None

    def get(self, key: tuple[str, bytes]) -> Reply | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            expires, reply = found
            if expires < time.monotonic():
                del self._items[key]
                return None
            return Reply(reply.status, list(reply.headers), reply.body)

    def put(self, key: tuple[str, bytes], reply: Reply, ttl: float) -> None:
        if reply.status != 200 or reply.chunks is not None or reply.cut is not None:
            return  # only whole, successful replies are cached
        with self._lock:
            self._items[key] = (time.monotonic() + ttl, Reply(reply.status, list(reply.headers), reply.body))
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
