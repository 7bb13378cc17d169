"""Object detection: the detected objects, each with a label, a score and a box of float coordinates.

Like a classifier's, a detector's answer is a JSON list; the handle hands it back as a :class:`Detections`
(still that list, wire order) with the best object and the labels read off it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["BoundingBox", "DetectedObject", "DetectionResult", "Detections"]


class BoundingBox(Protocol):
    """A box in the image's pixel coordinates."""

    @property
    def xmin(self) -> float: ...
    @property
    def ymin(self) -> float: ...
    @property
    def xmax(self) -> float: ...
    @property
    def ymax(self) -> float: ...


class DetectedObject(Protocol):
    """One object a detector found."""

    @property
    def label(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def box(self) -> BoundingBox: ...


_ObjT = TypeVar("_ObjT", bound=DetectedObject)


class DetectionResult(Protocol):
    """What every object detection model's result offers."""

    @property
    def objects(self) -> Sequence[DetectedObject]: ...
    @property
    def labels(self) -> list[str]: ...


class Detections(list[_ObjT]):
    """A detector's answer: the wire list of objects, plus ``.objects``, ``.labels`` and ``.best``."""

    __slots__ = ()

    @property
    def objects(self) -> list[_ObjT]:
        """Every object, in the order the API sent them."""
        return list(self)

    @property
    def labels(self) -> list[str]:
        """Each object's label, in the order the API sent them."""
        return [item.label for item in self]

    @property
    def best(self) -> _ObjT | None:
        """The object with the highest score (None when nothing was found)."""
        return max(self, key=lambda item: item.score) if self else None

    @property
    def raw(self) -> list[_ObjT]:
        """The wire list as a plain ``list``."""
        return list(self)
