"""Decoding replies into the generated types: the typed envelope fast path, output unions, validators.

Below the handle and above the envelope: it holds no client and sends nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import msgspec

from .._error_base import ResponseDecodeError
from .jsonview import DECODE_ERRORS, as_list, whole_numbers

__all__ = [
    "AsyncResponse",
    "OutputDecoder",
    "Variant",
    "convert",
    "decode_typed",
    "json_shape",
    "split_error",
    "validator_for",
]

T = TypeVar("T")


class AsyncResponse(msgspec.Struct, omit_defaults=True, kw_only=True):
    """The reply to a queued request (``queue_request``): its id, to poll. Every model that can queue answers
    with it, so the generated modules import it from here rather than each loading a shared module for it."""

    request_id: str


class _Envelope(msgspec.Struct, Generic[T]):
    success: bool
    result: T | None = None
    errors: Any = None
    messages: Any = None


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}
_VALIDATORS: dict[type[Any], msgspec.json.Decoder[Any] | None] = {}


def _envelope_decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    dec = _DECODERS.get(tp)
    if dec is None:
        # ``tp`` is a runtime value: subscripting through an ``Any`` keeps type checkers from reading the
        # expression as a type annotation (pyright >= 1.1.414 refuses a variable there).
        generic: Any = _Envelope
        dec = _DECODERS[tp] = msgspec.json.Decoder(generic[tp])
    return dec


def decode_typed(data: bytes, expect: type[T]) -> tuple[T, list[Any]] | None:
    """One pass from reply bytes straight into ``expect``: ``(result, messages)``, or None when the bytes
    are not a successful envelope holding such a result (the caller then takes the careful path)."""
    decoder = _DECODERS.get(expect)  # (_envelope_decoder, inlined: this runs once per typed call)
    if decoder is None:
        decoder = _envelope_decoder(expect)
    try:
        env = decoder.decode(data)
    except DECODE_ERRORS:
        return None
    if env.success is not True or env.result is None:
        return None
    result: T = env.result
    return result, as_list(env.messages) or []


def convert(value: Any, tp: type[T]) -> T:
    """``msgspec.convert(value, tp)`` with a whole-number float read as an int where the type wants one (JSON
    Schema counts ``3.0`` as an integer, msgspec's ``int`` does not); tried again only when the first try
    fails, so a reply that fits as sent costs nothing more."""
    try:
        return msgspec.convert(value, tp)
    except msgspec.ValidationError:
        return msgspec.convert(whole_numbers(value), tp)


def validator_for(tp: type[Any]) -> msgspec.json.Decoder[Any] | None:
    if tp not in _VALIDATORS:
        try:
            _VALIDATORS[tp] = msgspec.json.Decoder(tp)
        except TypeError:  # a union msgspec cannot decode; such variants are validated per item
            _VALIDATORS[tp] = None
    return _VALIDATORS[tp]


def split_error(exc: Exception) -> tuple[str, str]:
    text = str(exc)
    if " - at `" in text:
        message, _, path = text.rpartition(" - at `")
        return path.rstrip("`"), message
    return "$", text


def json_shape(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        if not value:
            return "array"
        return f"array<{json_shape(value[0]).split('<')[0]}>"  # pyright: ignore[reportUnknownArgumentType]
    return "any"


class Variant(msgspec.Struct, frozen=True):
    """How a decoded JSON value is told to be one output variant: one rule of an :class:`OutputDecoder`.

    ``Variant(EmbeddingOutput, own_keys=("data",))`` reads: a JSON object that carries ``data`` is most
    likely an ``EmbeddingOutput``. The generator writes one per JSON output of a model, from its schema.
    """

    target: Any
    """What the value decodes into: the variant's struct (or its list or union type)."""
    json: str = "object"
    """The JSON type the value must have (``"integer"`` takes any number too, ``"any"`` takes everything)."""
    own_keys: tuple[str, ...] = ()
    """Keys only this variant declares: a value carrying one of them counts for it."""
    key_shapes: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    """Where the value carries one of these keys, the JSON shape that key's value must have (``"string"``,
    ``"array<object>"``: the shape of a list's first item)."""
    own_values: dict[str, tuple[Any, ...]] = msgspec.field(default_factory=dict[str, tuple[Any, ...]])
    """Values only this variant declares for a key (``{"object": ("chat.completion",)}``): strong evidence."""


class OutputDecoder:
    """Decodes a result into the output variant its JSON shape says it is.

    msgspec cannot decode a union of untagged structs, so the generator writes one :class:`Variant` rule per
    output variant, most specific first. A candidate must have the right JSON type and fit its key shapes;
    among those, a value of a key only it declares counts most, then a key only it declares, then the share
    of the value's keys it declares. Keys nobody declares are ignored, so fields the API adds later never
    break decoding.
    """

    def __init__(
        self,
        *rules: Variant,
        binary_types: Sequence[str] = (),
        streams: bool = False,
        name: str = "Output",
    ) -> None:
        self.variants = tuple(r.target for r in rules)
        self.binary_types = tuple(binary_types)
        self.streams = streams
        self.name = name
        self._rules = rules
        self._keys: dict[type[Any], frozenset[str]] = {}
        self._needs: dict[type[Any], frozenset[str]] = {}

    def named(self, name: str) -> OutputDecoder:
        """This decoder (rules and caches shared) under another name: a shape's, named for each model of it."""
        twin = object.__new__(OutputDecoder)
        twin.__dict__.update(self.__dict__, name=name)
        return twin

    def told_apart_by(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The keys whose JSON shapes (``key_shapes``) and whose values (``own_values``) :meth:`pick` reads,
        besides which keys a value has: two values alike in all three pick the same variant."""
        checks = sorted({key for rule in self._rules for key in rule.key_shapes})
        tags = sorted({key for rule in self._rules for key in rule.own_values})
        return tuple(checks), tuple(tags)

    def _declared(self, cls: type[Any]) -> frozenset[str]:
        keys = self._keys.get(cls)
        if keys is None:
            try:
                keys = frozenset(f.encode_name for f in msgspec.structs.fields(cls))
            except TypeError:
                keys = frozenset[str]()
            self._keys[cls] = keys
        return keys

    def required_keys(self, cls: type[Any]) -> frozenset[str]:
        keys = self._needs.get(cls)
        if keys is None:
            try:
                keys = frozenset(f.encode_name for f in msgspec.structs.fields(cls) if f.required)
            except TypeError:
                keys = frozenset[str]()
            self._needs[cls] = keys
        return keys

    def pick(self, value: Any) -> type[Any] | None:
        """The variant class ``value`` belongs to, or None when no variant fits its JSON type."""
        shape = json_shape(value)
        kind = shape.split("<")[0]
        best: tuple[float, int] | None = None
        chosen: type[Any] | None = None
        for order, rule in enumerate(self._rules):
            cls, json_type = rule.target, rule.json
            if json_type not in (kind, "any") and not (json_type == "integer" and kind == "number"):
                continue
            if kind == "object":
                ok = True
                for key, want in rule.key_shapes.items():
                    if key in value:
                        got = json_shape(value[key])
                        if (
                            got != want
                            and got not in ("null", "array")
                            and not (got == "array" and want.startswith("array"))
                        ):
                            ok = False
                            break
                if not ok:
                    continue
                declared = self._declared(cls)
                has_unique = any(k in value for k in rule.own_keys)
                share = (sum(1 for k in value if k in declared) / len(value)) if value else 0.0
                tagged = any(k in value and value[k] in allowed for k, allowed in rule.own_values.items())
                score = (4.0 if tagged else 0.0) + (2.0 if has_unique else 0.0) + share
                if any(k not in value for k in self.required_keys(cls)):
                    score -= 8.0  # it would not decode; only a last resort
            else:
                score = 1.0
            if best is None or score > best[0]:
                best, chosen = (score, -order), cls
        return chosen

    def decode(self, value: Any, model_id: str) -> Any:
        if not self.variants:
            return value
        cls = self.pick(value)
        if cls is None:
            raise ResponseDecodeError(
                f"{model_id}: the result matches no variant of {self.name} (got JSON {json_shape(value)})",
                model_id=model_id,
            )
        try:
            return convert(value, cls)
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            raise ResponseDecodeError(
                f"{model_id}: result does not fit {cls.__name__} at {path}: {message}", model_id=model_id
            ) from None
