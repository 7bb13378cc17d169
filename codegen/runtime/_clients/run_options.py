"""The keyword options of ``run()``, typed once for both clients' overloads (``**options: Unpack[...]``).

``stream=True`` and ``queue_request=True`` are spelled out in their own overloads (they pick the return
type); the per-model overloads take :class:`DecodedRun`, where both can only be ``False``, and the last
overload :class:`AnyRun`, where they are any ``bool``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypedDict

__all__ = ["AnyRun", "DecodedRun", "RunOptions"]


class RunOptions(TypedDict, total=False):
    """What every ``run()`` call takes: extra request headers and ``x-session-affinity`` (prompt caching)."""

    headers: Mapping[str, str] | None
    session_affinity: str | None


class DecodedRun(RunOptions, total=False):
    """A call that returns the model's decoded output: neither streamed nor queued."""

    stream: Literal[False]
    queue_request: Literal[False]


class AnyRun(RunOptions, total=False):
    """Any call: ``stream`` and ``queue_request`` known only at run time."""

    stream: bool
    queue_request: bool
