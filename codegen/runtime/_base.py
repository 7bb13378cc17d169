"""The base class of every generated struct: one place for the shared msgspec configuration."""

from __future__ import annotations

import msgspec

__all__ = ["Struct"]


class Struct(msgspec.Struct, omit_defaults=True):
    """msgspec struct that leaves unset and default-valued fields off the wire.

    Unknown fields in replies are ignored (never forbidden), so fields the API adds later do not
    break decoding. ``kw_only`` is set on each generated class because msgspec does not inherit it.
    """
