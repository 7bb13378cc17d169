"""The floor: what a call costs with no SDK at all (a urllib3 pool plus msgspec typed structs)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

T = TypeVar("T")


class Envelope(msgspec.Struct, Generic[T]):
    result: T
    success: bool
    errors: list[Any]
    messages: list[Any]


class Score(msgspec.Struct):
    id: int
    score: float


class Rank(msgspec.Struct):
    response: list[Score]


class Embedding(msgspec.Struct):
    shape: list[int]
    data: list[list[float]]
    pooling: str
