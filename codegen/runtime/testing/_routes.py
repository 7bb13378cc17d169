"""Which API a request path names: ``run`` (direct or through AI Gateway), the universal and
OpenAI/Anthropic-compatible routes, markdown conversion, fine-tunes, or one of the discovery routes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from ._reply import APIError

__all__ = ["Route", "RouteKind", "route"]

RouteKind = Literal[
    "run",
    "universal",
    "chat",
    "embeddings",
    "responses",
    "messages",
    "v1_models",
    "tomarkdown",
    "tomarkdown_supported",
    "finetunes",
    "finetunes_public",
    "finetune_assets",
    "search",
    "schema",
    "tasks",
    "authors",
    "gateway_universal",
]
_FIXED: dict[tuple[str, ...], RouteKind] = {
    ("ai", "run"): "universal",
    ("ai", "v1", "chat", "completions"): "chat",
    ("ai", "v1", "embeddings"): "embeddings",
    ("ai", "v1", "responses"): "responses",
    ("ai", "v1", "messages"): "messages",
    ("ai", "v1", "models"): "v1_models",
    ("ai", "tomarkdown"): "tomarkdown",
    ("ai", "tomarkdown", "supported"): "tomarkdown_supported",
    ("ai", "finetunes"): "finetunes",
    ("ai", "finetunes", "public"): "finetunes_public",
    ("ai", "models", "search"): "search",
    ("ai", "models", "schema"): "schema",
    ("ai", "tasks", "search"): "tasks",
    ("ai", "authors", "search"): "authors",
}
_GATEWAY_COMPAT: dict[tuple[str, ...], RouteKind] = {("chat", "completions"): "chat", ("embeddings",): "embeddings"}
_METHODS: dict[RouteKind, frozenset[str]] = {
    "search": frozenset({"GET"}),
    "schema": frozenset({"GET"}),
    "tasks": frozenset({"GET"}),
    "authors": frozenset({"GET"}),
    "tomarkdown_supported": frozenset({"GET"}),
    "finetunes_public": frozenset({"GET"}),
    "finetunes": frozenset({"GET", "POST"}),
    "v1_models": frozenset(),  # the API has no model list under /ai/v1: every method gets 405/7001
}


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    account: str
    model_id: str | None
    gateway: bool
    item: str | None = None  # the fine-tune id or name of ``finetune_assets``

    @property
    def methods(self) -> frozenset[str]:
        """The HTTP methods the route answers."""
        return _METHODS.get(self.kind, frozenset({"POST"}))


def route(path: str) -> Route:
    """The route of ``path``; 400/7000 for anything else (a ``%2F``-encoded model id too)."""
    segments = [unquote(s) for s in path.split("/")]
    if any("/" in s for s in segments):  # %2F inside a segment: the model id was percent-encoded
        raise APIError(400, 7000, "No route for that URI")
    parts = segments[1:]
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) >= 5 and parts[:3] == ["client", "v4", "accounts"]:
        account, rest = parts[3], parts[4:]
        if len(rest) >= 3 and rest[:2] == ["ai", "run"]:
            return Route("run", account, "/".join(rest[2:]), False)
        kind = _FIXED.get(tuple(rest))
        if kind is not None:
            return Route(kind, account, None, False)
        if len(rest) == 4 and rest[:2] == ["ai", "finetunes"] and rest[3] == "finetune-assets":
            return Route("finetune_assets", account, None, False, rest[2])
    if len(parts) == 3 and parts[0] == "v1":
        return Route("gateway_universal", parts[1], None, True)  # AI Gateway's Universal Endpoint
    if len(parts) >= 5 and parts[0] == "v1" and parts[3] in ("workers-ai", "compat"):
        rest = parts[4:]
        compat = _GATEWAY_COMPAT.get(tuple(rest[1:] if parts[3] == "workers-ai" and rest[0] == "v1" else rest))
        if compat is not None and (parts[3] == "compat" or rest[0] == "v1"):
            return Route(compat, parts[1], None, True)  # OpenAI-compatible routes through the gateway
        if parts[3] == "compat":
            raise APIError(400, 7000, "No route for that URI")
        if rest[0] == "run" and len(rest) > 1:
            rest = rest[1:]
        return Route("run", parts[1], "/".join(rest), True)
    raise APIError(400, 7000, "No route for that URI")
