"""The ``workers-ai run`` payload: ``--json`` (text, ``-`` for stdin, ``@file.json``), ``key=value`` pairs
typed by the model's schema (``_listing.INPUTS``), ``key=@path`` and ``--file PATH`` for binary data."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .. import _listing
from .output import UsageError

__all__ = ["CLIInputError", "Payload", "build_payload"]

_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off"})
_BINARY_KINDS = frozenset({"bytes", "base64", "uint8"})


class CLIInputError(UsageError):
    """A command-line input that cannot become a payload; the message says which and why."""


class Payload(msgspec.Struct):
    """What to send: a JSON object, or the raw bytes of a file (models with a binary body variant)."""

    data: dict[str, Any] | None = None
    body: bytes | None = None


def _read(path: str, what: str) -> bytes:
    try:
        with open(os.path.expanduser(path), "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise CLIInputError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None


def _json_source(value: str) -> Any:
    if value == "-":
        text, where = sys.stdin.buffer.read(), "stdin"
    elif value.startswith("@"):
        text, where = _read(value[1:], "--json"), value[1:]
    else:
        text, where = os.fsencode(value), "--json"  # bytes that were not UTF-8 on the command line stay bytes
    return _decode_json(text, where)


def _decode_json(data: bytes | str, where: str) -> Any:
    """JSON from the command line or a file; ``CLIInputError`` for anything unreadable (bad UTF-8
    included) and for nesting too deep for msgspec."""
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeError) as exc:
        raise CLIInputError(f"{where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise CLIInputError(f"{where} is nested too deeply to read") from None


def _encode_binary(kind: str, data: bytes) -> Any:
    if kind == "uint8":
        return list(data)
    return base64.b64encode(data).decode("ascii")  # "bytes" fields travel as base64 in JSON too


def _typed(model_id: str, key: str, raw: str, kind: str | None) -> Any:
    where = f"{key}={raw!r}"
    if kind in _BINARY_KINDS:
        if not raw.startswith("@"):
            if kind == "base64":
                return raw
            raise CLIInputError(f"{model_id}: {key} takes binary data; pass a file as {key}=@PATH")
        return _encode_binary(kind, _read(raw[1:], key))
    if raw.startswith("@") and kind in ("str", "json", None):
        data = _read(raw[1:], key)
        if kind == "json":
            return _decode_json(data, f"{key}: {raw[1:]}")
        return data.decode("utf-8", "replace")
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        raise CLIInputError(
            f"{model_id}: {where}: {key} takes {'an integer' if kind == 'int' else 'a number'}"
        ) from None
    if kind == "bool":
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise CLIInputError(f"{model_id}: {where}: {key} takes true or false")
    if kind == "json":
        try:
            return msgspec.json.decode(raw)
        except (msgspec.DecodeError, UnicodeError, RecursionError):
            return raw  # e.g. a plain string where the schema allows several shapes
    return raw


def _pairs(model_id: str, pairs: Sequence[str], kinds: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in pairs:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise CLIInputError(f"{item!r}: expected key=value (key=@path for a file, key:=JSON for raw JSON)")
        if key.endswith(":"):
            out[key[:-1]] = _decode_json(os.fsencode(raw), key[:-1])
            continue
        out[key] = _typed(model_id, key, raw, kinds.get(key))
    return out


def build_payload(model_id: str, json_arg: str | None, pairs: Sequence[str], file: str | None) -> Payload:
    """The payload of ``workers-ai run``; ``CLIInputError`` says what is wrong, before anything is sent."""
    binary_body, kinds = _listing.INPUTS.get(model_id, (False, {}))
    data: dict[str, Any] | None = None
    if json_arg is not None:
        decoded = _json_source(json_arg)
        if not isinstance(decoded, dict):
            raise CLIInputError(f"--json must be a JSON object, got {type(decoded).__name__}")
        data = dict(decoded)  # pyright: ignore[reportUnknownArgumentType]
    if pairs:
        data = {**(data or {}), **_pairs(model_id, pairs, kinds)}
    if file is None:
        return Payload(data=data)
    raw = _read(file, "--file")
    binary_fields = sorted(k for k, kind in kinds.items() if kind in _BINARY_KINDS)
    if binary_body and not data:
        return Payload(body=raw)
    if len(binary_fields) == 1:
        field = binary_fields[0]
        return Payload(data={**(data or {}), field: _encode_binary(kinds[field], raw)})
    if not kinds:  # a model this package was not generated for: send the bytes as they are
        if data:
            raise CLIInputError(f"{model_id}: unknown model: --file sends the raw body, so it takes no other input")
        return Payload(body=raw)
    if binary_fields:
        options = ", ".join(f"{f}=@PATH" for f in binary_fields)
        raise CLIInputError(f"{model_id} has several binary inputs; name the one you mean: {options}")
    raise CLIInputError(f"{model_id} takes no binary input (its fields: {', '.join(sorted(kinds)) or 'none'})")
