"""What a generated ``*_live`` module declares about one realtime model (:class:`RealtimeSpec`), and
:class:`RawEvent`, the event a message becomes when it has an unknown type or does not fit its struct.

Everything here is data and pure functions: options to query parameters, frames to events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union

import msgspec

from .._core.decode import split_error
from ..errors import InputValidationError

__all__ = ["RawEvent", "RealtimeSpec", "tag_of"]


class RawEvent(msgspec.Struct, frozen=True):
    """A server message kept as it came: ``type`` ("" when it had none), ``data`` (the decoded JSON, or
    the text or bytes that were not JSON) and ``error``, why it is not a typed event."""

    type: str
    data: Any
    error: str


class RealtimeSpec:
    """One realtime model: its kind, options struct, event structs and the control messages it takes."""

    __slots__ = (
        "_decoder",
        "events",
        "final",
        "keepalive_seconds",
        "keepalive_silence_ms",
        "kind",
        "model_id",
        "options",
        "send",
        "tags",
    )

    def __init__(
        self,
        *,
        model_id: str,
        kind: Literal["listen", "speak"],
        options: type[msgspec.Struct],
        events: tuple[type[msgspec.Struct], ...],
        send: Mapping[str, Any],
        keepalive_seconds: float | None = None,
        keepalive_silence_ms: int | None = None,
        final: Mapping[str, Any] | None = None,
    ) -> None:
        self.model_id = model_id
        self.kind = kind
        self.options = options
        self.events = events
        self.send = send
        self.keepalive_seconds = keepalive_seconds
        self.keepalive_silence_ms = keepalive_silence_ms
        self.final = final
        self.tags = frozenset(str(e.__struct_config__.tag) for e in events)
        self._decoder: msgspec.json.Decoder[Any] | None = None

    def __repr__(self) -> str:
        return f"<RealtimeSpec {self.model_id} {self.kind}>"

    # ------------------------------------------------------------------ options

    def check_options(self, options: Mapping[str, Any] | msgspec.Struct, model_id: str) -> msgspec.Struct:
        """The options as their struct; ``InputValidationError`` naming the option when one does not fit."""
        raw: Any = msgspec.structs.asdict(options) if isinstance(options, msgspec.Struct) else dict(options)
        unknown = sorted(set(raw) - set(self.options.__struct_fields__))
        if unknown:
            known = ", ".join(self.options.__struct_fields__)
            raise InputValidationError(model_id, unknown[0], f"not an option of this model (options: {known})")
        try:
            return msgspec.convert(raw, self.options, str_keys=True)
        except msgspec.ValidationError as exc:
            path, message = split_error(exc)
            raise InputValidationError(model_id, path, message) from None
        except TypeError as exc:
            raise InputValidationError(model_id, "$", str(exc)) from None

    @staticmethod
    def query(options: msgspec.Struct) -> list[tuple[str, str]]:
        """Query parameters: booleans as ``true``/``false``, numbers as decimal text, a list as one
        parameter per item (``keyterm=a&keyterm=b``); options left out are not sent."""
        pairs: list[tuple[str, str]] = []
        raw: dict[str, Any] = msgspec.to_builtins(options)
        for name, value in raw.items():
            items: list[Any] = value if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownVariableType]
            pairs += [(name, _text(item)) for item in items]
        return pairs

    # ------------------------------------------------------------------ server messages

    def decode(self, data: bytes | str) -> Any:
        """A text frame as its typed event, or a :class:`RawEvent` (unknown type, bad JSON, bad shape)."""
        if self._decoder is None:
            events: tuple[Any, ...] = self.events
            union: Any = Union[events] if len(events) > 1 else next(iter(events))  # noqa: UP007
            self._decoder = msgspec.json.Decoder(union)
        try:
            return self._decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return _raw(data, exc, self.tags)

    def final_text(self, event: object) -> str | None:
        """The final transcript an event carries (``final`` rule of the schema), else None."""
        rule = self.final
        if rule is None or tag_of(event) != rule["event"]:
            return None
        for field, wanted in rule["when"].items():
            if getattr(event, field, None) != wanted:
                return None
        return _pick(event, rule["text"])

    def transcript_of(self, event: object) -> str | None:
        """Any transcript text an event carries (interim or final), else None."""
        rule = self.final
        if rule is None or tag_of(event) != rule["event"]:
            return None
        return _pick(event, rule["text"])


def tag_of(event: object) -> str:
    """The wire ``type`` of an event (a RawEvent's as received; "" for audio)."""
    if isinstance(event, RawEvent):
        return event.type
    config = getattr(type(event), "__struct_config__", None)
    tag = getattr(config, "tag", None)
    return tag if isinstance(tag, str) else ""


def _pick(value: Any, path: Sequence[str | int]) -> str | None:
    for part in path:
        try:
            value = value[part] if isinstance(part, int) else getattr(value, part)
        except (IndexError, AttributeError):
            return None
    return value if isinstance(value, str) else None


def _text(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def _raw(data: bytes | str, exc: Exception, tags: frozenset[str]) -> RawEvent:
    try:
        decoded: Any = msgspec.json.decode(data)
    except msgspec.DecodeError:
        shown = data if isinstance(data, str) else data.decode("utf-8", "replace")
        return RawEvent("", shown, f"not JSON: {exc}")
    obj: dict[str, Any] = decoded if isinstance(decoded, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    found = obj.get("type")
    kind = found if isinstance(found, str) else ""
    why = f"{kind!r} message does not fit its struct: {exc}" if kind in tags else f"unknown message type {kind!r}"
    return RawEvent(kind, decoded, why)
