"""Small schema-file builders shared by the generator tests."""

from __future__ import annotations

from typing import Any


def _model(name: str, inp: dict[str, Any], out: dict[str, Any], task: str = "Translation") -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Model {name}.",
        "task": {"name": task},
        "schema": {"input": inp, "output": out},
    }


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **({"required": required} if required else {}), **extra}


TEXT_IN = _obj({"text": {"type": "string"}}, ["text"])
TEXT_OUT = _obj({"translated_text": {"type": "string"}})
