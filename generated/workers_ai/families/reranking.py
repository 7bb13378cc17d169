"""Reranking: the request's contexts ordered by relevance, on every reranker's result."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

__all__ = ["Ranked", "RerankResult", "RerankView"]


class Ranked(msgspec.Struct, frozen=True):
    """One context of a rerank request: its ``index`` in the request's ``contexts`` and its score."""

    index: int
    score: float


class RerankResult(Protocol):
    """What every reranking model's result offers."""

    @property
    def ranking(self) -> list[Ranked]: ...
    @property
    def best(self) -> int: ...


class RerankView:
    """Mixin of reranker outputs (``{response: [{id, score}]}``)."""

    __slots__ = ()

    @property
    def ranking(self) -> list[Ranked]:
        """The contexts from most to least relevant."""
        items: Any = getattr(self, "response", None) or ()
        ranked = [Ranked(int(item.id), float(item.score)) for item in items]
        return sorted(ranked, key=lambda r: -r.score)

    @property
    def best(self) -> int:
        """The index (in the request's ``contexts``) of the most relevant context; -1 when none came back."""
        ranking = self.ranking
        return ranking[0].index if ranking else -1
