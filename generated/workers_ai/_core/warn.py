"""Warnings that point at the user's line: the first frame outside this package (and ``importlib``, which loads
its modules), however many handle, flow and driver frames lie between, on either client. Python 3.12+ skips
them itself (``skip_file_prefixes``); before, the ``stacklevel`` is counted here as :mod:`warnings` counts it.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings

__all__ = ["warn_user"]

# This package's folder (``.../workers_ai/``, or a vendored copy's) and importlib's (``import_module``).
_SKIPPED = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    os.path.dirname(importlib.__file__) + os.sep,
)
_SKIP_PREFIXES = sys.version_info >= (3, 12)


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the first caller outside this package."""
    if _SKIP_PREFIXES:
        warnings.warn(message, category, skip_file_prefixes=_SKIPPED)  # type: ignore[call-overload,unused-ignore]
        return
    frame, level = sys._getframe(), 1  # pyright: ignore[reportPrivateUsage]  # level 1: this function
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(_SKIPPED) or _internal(frame.f_code.co_filename)
    ):
        frame = frame.f_back
        level += not _internal(frame.f_code.co_filename)  # as warnings counts: import machinery frames are not
    warnings.warn(message, category, stacklevel=level)


def _internal(name: str) -> bool:
    return "importlib" in name and "_bootstrap" in name  # CPython's is_internal_frame
