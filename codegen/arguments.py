"""A task family's shared arguments: the same call on every model of the family, whatever its wire names.

A family method takes its family's core argument under one name (``transcribe(audio)``, ``speak(text=)``)
and, where the family says so, positionally first. Only the Python parameter changes: the request struct
and the wire keep the model's own field name (melotts' ``text=`` fills its ``prompt``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FAMILY_ARGUMENTS", "FamilyArgument", "family_argument"]


@dataclass(frozen=True)
class FamilyArgument:
    method: str  # the family method
    name: str  # the argument's name on every model of the family
    wires: frozenset[str]  # the wire fields (or the raw body, ``data``) that are that argument
    positional: bool  # also taken positionally, as the first argument


FAMILY_ARGUMENTS: dict[str, FamilyArgument] = {
    "automatic speech recognition": FamilyArgument("transcribe", "audio", frozenset({"audio", "data"}), True),
    "text-to-speech": FamilyArgument("speak", "text", frozenset({"text", "prompt"}), False),
    "text-to-image": FamilyArgument("generate_image", "prompt", frozenset({"prompt"}), False),
    "text embeddings": FamilyArgument("embed", "text", frozenset({"text"}), False),
    "text generation": FamilyArgument("chat", "messages", frozenset({"messages"}), False),
}


def family_argument(task: str, method: str) -> FamilyArgument | None:
    """The shared argument of ``method`` on a model of ``task`` (None: the method is not its family's)."""
    rule = FAMILY_ARGUMENTS.get(task.lower())
    return rule if rule is not None and rule.method == method else None
