"""Text embeddings: ``.vectors`` and ``.dimensions`` on every embedding model's result."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["EmbeddingResult", "EmbeddingView"]


class EmbeddingResult(Protocol):
    """What every embedding model's result offers."""

    @property
    def vectors(self) -> list[list[float]]: ...
    @property
    def dimensions(self) -> int: ...


class EmbeddingView:
    """Mixin of embedding output structs (``{shape, data}`` or bge-m3's ``{shape, response}`` vectors)."""

    __slots__ = ()

    @property
    def vectors(self) -> list[list[float]]:
        """One vector per input text, in input order."""
        data: Any = getattr(self, "data", None)
        if data is None:
            data = getattr(self, "response", None)
        vectors: list[list[float]] = data or []
        return vectors

    @property
    def dimensions(self) -> int:
        """The length of each vector (the API's ``shape[1]``)."""
        shape: Any = getattr(self, "shape", None)
        if isinstance(shape, list) and len(shape) > 1:  # pyright: ignore[reportUnknownArgumentType]
            return int(shape[1])  # pyright: ignore[reportUnknownArgumentType]
        vectors = self.vectors
        return len(vectors[0]) if vectors else 0
