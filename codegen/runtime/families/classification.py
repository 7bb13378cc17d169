"""Classification (text and image): ``.label`` and ``.score`` of the top class on every classifier's result.

The API answers a classifier with a JSON list of ``{label, score}``, which no struct mixin can extend, so
the handle hands the decoded list back as a :class:`Classifications`: still that list (the wire items in
wire order, nothing lost), with the top class read off it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["ClassificationResult", "Classifications", "ScoredLabel"]


class ScoredLabel(Protocol):
    """One class of a classifier's answer."""

    @property
    def label(self) -> str: ...
    @property
    def score(self) -> float: ...


_ItemT = TypeVar("_ItemT", bound=ScoredLabel)


class ClassificationResult(Protocol):
    """What every classification model's result offers."""

    @property
    def label(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def classes(self) -> Sequence[ScoredLabel]: ...


class Classifications(list[_ItemT]):
    """A classifier's answer: the wire list of classes, plus the top one's ``.label`` and ``.score``."""

    __slots__ = ()

    @property
    def top(self) -> _ItemT:
        """The class with the highest score (the first of equals); IndexError when the list is empty."""
        if not self:
            raise IndexError("the classifier returned no classes")
        return max(self, key=lambda item: item.score)

    @property
    def label(self) -> str:
        """The top class's label."""
        return self.top.label

    @property
    def score(self) -> float:
        """The top class's score."""
        return self.top.score

    @property
    def classes(self) -> list[_ItemT]:
        """Every class, in the order the API sent them."""
        return list(self)

    @property
    def raw(self) -> list[_ItemT]:
        """The wire list as a plain ``list``."""
        return list(self)
