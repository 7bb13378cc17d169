"""Which API a request path names: ``run`` (direct or through AI Gateway) or one of the discovery routes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from ._reply import APIError

__all__ = ["Route", "RouteKind", "route"]

RouteKind = Literal["run", "search", "schema", "tasks", "authors"]
_DISCOVERY: dict[tuple[str, ...], RouteKind] = {
    ("ai", "models", "search"): "search",
    ("ai", "models", "schema"): "schema",
    ("ai", "tasks", "search"): "tasks",
    ("ai", "authors", "search"): "authors",
}


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    account: str
    model_id: str | None
    gateway: bool

    @property
    def method(self) -> str:
        """The one HTTP method the route answers."""
        return "POST" if self.kind == "run" else "GET"


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
        kind = _DISCOVERY.get(tuple(rest))
        if kind is not None:
            return Route(kind, account, None, False)
    if len(parts) >= 5 and parts[0] == "v1" and parts[3] == "workers-ai":
        rest = parts[4:]
        if rest[0] == "run" and len(rest) > 1:
            rest = rest[1:]
        return Route("run", parts[1], "/".join(rest), True)
    raise APIError(400, 7000, "No route for that URI")
