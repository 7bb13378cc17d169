"""Where published input schemas are stricter than the platform, the emulator takes what the API takes.

The emulator must never refuse a request the live API accepts (a test passing against the emulator
and failing in production is bad; the reverse is worse: a working client looks broken). Known spots:

- ``description`` listed as required (of a tool, of each tool parameter): the published schemas say so,
  but the Workers binding's own types mark it optional, and clients that send tools without
  per-parameter descriptions (langchain-cloudflare's ``bind_tools``) work against the live API.
- ``stop: null``: OpenAI-style clients send ``null`` for "no stop sequences"; the API takes it.
- a message's ``content: null``: an OpenAI-form assistant message that carries ``tool_calls`` has no
  content, and clients send it back that way in the next turn of a tool loop (``/ai/run`` takes it; the
  OpenAI-compatible ``/ai/v1`` route does not, see ``_unified``).
- ``max_tokens: null``: OpenAI-style clients send it for "no limit"; the model's default (256) applies,
  as when it is left out.
"""

from __future__ import annotations

from typing import Any

from .._core.jsonview import as_list, as_object

__all__ = ["loosen"]

_NULLABLE = frozenset({"stop", "content", "max_tokens"})


def loosen(schema: Any) -> Any:
    """A copy of an input ``schema`` with the spots above loosened (nothing else changes)."""
    obj = as_object(schema)
    if obj is None:
        items = as_list(schema)
        return schema if items is None else [loosen(v) for v in items]
    out: dict[str, Any] = {}
    for key, value in obj.items():
        props = as_object(value)
        if key == "properties" and props is not None:
            out[key] = {
                name: _nullable(loosen(sub)) if name in _NULLABLE else loosen(sub) for name, sub in props.items()
            }
        elif key == "required" and as_list(value) is not None:
            out[key] = [r for r in as_list(value) or [] if r != "description"]
        elif key in ("enum", "const", "default", "examples"):
            out[key] = value
        else:
            out[key] = loosen(value)
    return out


def _nullable(schema: Any) -> Any:
    if as_object(schema) is None:
        return schema
    return {"anyOf": [schema, {"type": "null"}]}
