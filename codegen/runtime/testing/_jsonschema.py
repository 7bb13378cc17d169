"""The one place the ``jsonschema`` library is touched, behind typed protocols.

``jsonschema`` ships no type information, so it is imported with :mod:`importlib` and seen through
the small surface the emulator uses. That keeps a vendored copy of this package clean under plain
``mypy --strict`` and pyright strict, with no stubs and no ``type: ignore`` to maintain.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol, cast

__all__ = ["Draft7Validator", "SchemaError", "ValidationError", "best_match"]


class ValidationError(Protocol):
    """One problem ``iter_errors`` finds."""

    @property
    def message(self) -> str: ...

    @property
    def absolute_path(self) -> Iterable[Any]: ...


class Draft7(Protocol):
    """A ``jsonschema.Draft7Validator`` instance."""

    def is_valid(self, instance: Any) -> bool: ...

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]: ...

    def evolve(self, *, schema: Any) -> Draft7: ...


class _Draft7Class(Protocol):
    def __call__(self, schema: Any) -> Draft7: ...

    def check_schema(self, schema: Any) -> None: ...


class _Exceptions(Protocol):
    SchemaError: type[Exception]

    def best_match(self, errors: Iterable[ValidationError]) -> ValidationError | None: ...


class _Module(Protocol):
    Draft7Validator: _Draft7Class


try:
    _module = cast(_Module, importlib.import_module("jsonschema"))
    _exceptions = cast(_Exceptions, importlib.import_module("jsonschema.exceptions"))
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("workers_ai.testing needs the 'jsonschema' package: pip install 'workers-ai[testing]'") from exc

Draft7Validator: _Draft7Class = _module.Draft7Validator
SchemaError: type[Exception] = _exceptions.SchemaError


def best_match(errors: Iterable[ValidationError]) -> ValidationError | None:
    """The most relevant of ``errors`` (jsonschema's own choice), or None when there are none."""
    return _exceptions.best_match(errors)
