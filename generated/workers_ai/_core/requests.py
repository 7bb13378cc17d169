"""The request flows the account endpoints and batches are built on, each one run of the request loop
(:func:`.exchange.exchange`): a reply read whole, and an account API ``GET``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .config import api_url, remember
from .envelope import checked
from .exchange import Reply, exchange
from .flow import Flow

if TYPE_CHECKING:
    from .config import SessionConfig

__all__ = ["Reply", "get_json_flow", "request_flow"]


def request_flow(
    session: SessionConfig,
    method: str,
    url: str,
    body: bytes | None = None,
    *,
    content_type: str | None = "application/json",
    headers: Mapping[str, str] | None = None,
    queued: bool = False,
    model_id: str | None = None,
    deadline: float | None = None,
) -> Flow[Reply]:
    """A request sent until a 2xx reply, its body read whole; ``queued``: a batch, never re-sent blindly."""
    flow = exchange(session, method, url, body, content_type, headers, queued, model_id, deadline, False)
    resp, data = yield from flow
    return Reply(resp.status, resp.headers, data)


def get_json_flow(session: SessionConfig, path: str, query: Mapping[str, Any] | None = None) -> Flow[dict[str, Any]]:
    """GET an account API path; the checked envelope (``result``, ``result_info``, ...)."""
    reply = yield from request_flow(session, "GET", api_url(session, path, query), content_type=None)
    env, messages = checked(reply.status, reply.headers, reply.data, model_id=None)
    remember(session, reply.status, reply.headers, messages)
    return env
