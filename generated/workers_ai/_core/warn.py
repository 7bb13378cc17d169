"""Warnings that point at the user's line: the first frame outside this package, however deep the handle,
flow and driver layers between them are (and whichever client, sync or async, runs the flow).

On Python 3.12+ :func:`warnings.warn` skips the package's frames itself (``skip_file_prefixes``); before that
the ``stacklevel`` is counted here, the way :mod:`warnings` counts it (import machinery frames skipped). A
warning raised where no user frame is on the stack (a task the event loop started) points at the outermost
frame there is.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import FrameType

__all__ = ["PACKAGE_DIR", "warn_user"]

# This package's folder (``.../workers_ai/``, or a vendored copy's): frames whose file is below it are ours.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# ``importlib.import_module``, through which the package loads its modules on first use (PEP 562).
_IMPORTLIB_DIR = os.path.dirname(importlib.__file__) + os.sep
_SKIPPED = (PACKAGE_DIR, _IMPORTLIB_DIR)
_SKIP_PREFIXES = sys.version_info >= (3, 12)


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the first caller outside this package."""
    if _SKIP_PREFIXES:
        warnings.warn(message, category, skip_file_prefixes=_SKIPPED)  # type: ignore[call-overload,unused-ignore]
    else:
        warnings.warn(message, category, stacklevel=user_stacklevel())


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in :func:`warn_user` name the first frame outside this
    package, counted as :mod:`warnings` counts (frames of the import machinery are not counted)."""
    frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]  # the caller: warn_user, level 1
    level = 1
    while frame.f_back is not None and (_ours(frame) or _internal(frame)):
        frame = frame.f_back
        if not _internal(frame):
            level += 1
    return level


def _ours(frame: FrameType) -> bool:
    return frame.f_code.co_filename.startswith(_SKIPPED)


def _internal(frame: FrameType) -> bool:
    # What warnings itself skips when it counts a stacklevel (CPython's is_internal_frame).
    name = frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name
