"""A generated method's recipe: which request struct its keyword arguments fill, how some arguments are
widened (bytes for base64 fields, Python functions for ``tools``, a type for ``response_format``), and
what its reply decodes into.

A generated method is one line: ``return self._invoke(_CHAT, params)``. Its typed signature lives in the
model module (a ``TypedDict`` under ``Unpack``), its rules here, once, for every model, sync and async.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import msgspec

from .._error_base import ArgumentError

__all__ = ["NOTHING", "Op"]

T = TypeVar("T")

_BINARY_FORMS = ("bytes", "base64", "uint8")  # read by ``_core.binary.as_<form>``, loaded by the first such call


def _check_text(form: str, name: str, value: Any, model_id: str) -> None:
    """A str for a binary field: base64 text passes (JSON's spelling of bytes); anything else (a path
    written as text, most often) is refused, naming the argument, before it is sent as if it were data."""
    if not isinstance(value, str):
        return
    from .._core import binary

    if binary.is_base64_text(value):
        return
    hint = binary.STR_IS_NOT_BYTES.format(value=binary.shown(value))
    what = "base64 text" if form == "base64" else "bytes, a path or a binary file"
    raise ArgumentError(model_id, f"$.{name}", f"expected {what}; {hint}")


def _read_binary(form: str, value: Any) -> Any:
    from .._core import binary

    if isinstance(value, str):  # base64 text: a bytes field's bytes; any other field's text, as given
        import base64

        return base64.b64decode(value) if form == "bytes" else value
    return getattr(binary, f"as_{form}")(value)


class _Nothing:
    """No positional argument was given (``None`` may be a value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Any = _Nothing()


class Op(Generic[T]):
    """One typed method of a model: its request struct, expected reply type and argument rules.

    - ``names``: keyword argument -> struct attribute, where they differ (melotts' ``text=`` fills
      ``prompt``; a wire name that is a Python keyword).
    - ``binary``: argument -> ``"bytes"``, ``"base64"`` or ``"uint8"``: bytes, a path or a binary file
      is read and sent in that form.
    - ``tools``: the form ``tools`` go out in (``"flat"`` or ``"openai"``), when the model takes tools.
    - ``first``: the argument also taken positionally (``transcribe(audio)``).
    - ``streams``: the method has a ``*_stream`` twin, so ``stream`` is not an argument.
    - ``stream_false``: the schema requires ``stream``; a call sends ``false``.
    - ``media_bytes``: base64 media JSON is handed back as bytes, as the model's raw replies are.
    """

    __slots__ = (
        "_keys",
        "_plain",
        "binary",
        "expect",
        "first",
        "media_bytes",
        "names",
        "request",
        "stream_false",
        "streams",
        "tools",
    )

    def __init__(
        self,
        request: type[msgspec.Struct],
        expect: Any = None,
        *,
        names: Mapping[str, str] | None = None,
        binary: Mapping[str, str] | None = None,
        tools: str | None = None,
        first: str | None = None,
        stream_false: bool = False,
        streams: bool = False,
        media_bytes: bool = False,
    ) -> None:
        self.request = request
        self.expect = expect
        self.names = dict(names or {})
        self.binary = dict(binary or {})
        unknown = sorted(set(self.binary.values()) - set(_BINARY_FORMS))
        if unknown:
            raise ValueError(f"{request.__name__}: unknown binary forms {unknown}")
        self.tools: Any = tools  # a ToolForm: "flat" or "openai"
        self.first = first
        self.stream_false = stream_false
        self.streams = streams or stream_false  # ``stream`` is the method's to set (``*_stream``), not an argument
        self._keys: frozenset[str] | None = None
        self._plain = not (self.names or self.binary or tools)
        self.media_bytes = media_bytes

    def __repr__(self) -> str:
        return f"Op({self.request.__name__})"

    def build(self, params: Mapping[str, Any], model_id: str, first: Any = NOTHING, *, stream: bool = False) -> Any:
        """The request struct for one call (not yet validated: :meth:`HandleBase.validate` checks it)."""
        if first is not NOTHING:
            if self.first is None or self.first in params:
                raise ArgumentError(model_id, f"$.{self.first or '?'}", "given both positionally and by name")
            params = {self.first: first, **params}
        keys = self._keys or self.keys()
        unknown = () if keys.issuperset(params) else params.keys() - keys  # (no set made when all are known)
        if unknown:
            name = min(unknown)
            renamed = next((arg for arg, field in self.names.items() if field == name), None)
            if renamed:
                hint = f" (this method takes it as {renamed!r})"
            else:
                from .._core.suggest import unknown_key_hint  # here: only a wrong argument needs it

                hint = unknown_key_hint(name, keys)
            raise ArgumentError(model_id, f"$.{name}", f"unexpected keyword argument {name!r}{hint}")
        if self._plain and "response_format" not in params:
            fields = dict(params)  # the common case: every argument is its field, as given
        else:
            fields = self._fields(params, model_id)
        if stream:
            fields["stream"] = True
        elif self.stream_false:
            fields["stream"] = False
        try:
            return self.request(**fields)
        except TypeError as exc:  # a required argument left out
            raise ArgumentError(model_id, _path_of(exc), str(exc)) from None

    def _fields(self, params: Mapping[str, Any], model_id: str) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name, value in params.items():
            form = self.binary.get(name)
            if form is not None:
                _check_text(form, name, value, model_id)
                value = _read_binary(form, value)
            elif name == "tools" and self.tools is not None:
                from .._tools.tooldefs import tools_payload  # here: only calls with tools need it

                value = tools_payload(value, self.tools)
            elif name == "response_format":
                from .._tools.structured import response_format_payload

                value = response_format_payload(value, model_id)
            fields[self.names.get(name, name)] = value
        return fields

    def keys(self) -> frozenset[str]:
        """The arguments the method takes by name: the request's fields under their argument names."""
        if self._keys is None:
            by_field = {field: name for name, field in self.names.items()}
            fields = {by_field.get(f, f) for f in self.request.__struct_fields__}
            self._keys = frozenset(fields - {"stream"} if self.streams else fields)
        return self._keys


def _path_of(exc: TypeError) -> str:
    """The argument a struct constructor refused (``Unexpected keyword argument 'x'``, ``Missing required
    argument 'x'``), as a JSON path."""
    text = str(exc)
    if "'" in text:
        return f"$.{text.split(chr(39))[1]}"
    return "$"
