"""Model ids of the unified AI REST API: Workers AI's own (``@cf/…``, ``@hf/…``, also as
``workers-ai/@cf/…``) and third-party ``provider/model`` ids, and the reply shape each provider uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ._reply import APIError

__all__ = ["PROVIDERS", "ModelRef", "resolve"]

Shape = Literal["openai", "anthropic"]
PROVIDERS: Mapping[str, Shape] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google-ai-studio": "openai",
    "mistral": "openai",
    "groq": "openai",
    "xai": "openai",
    "deepseek": "openai",
    "cerebras": "openai",
    "perplexity-ai": "openai",
}
"""Providers the emulator answers for, and the shape of their native replies (AI Gateway answers the
OpenAI-compatible routes in OpenAI's shape whatever the provider)."""


@dataclass(frozen=True)
class ModelRef:
    model_id: str  # a Workers AI id (``@cf/…``) or the ``provider/model`` id as sent
    provider: str | None  # None for Workers AI's own models

    @property
    def shape(self) -> Shape:
        return PROVIDERS.get(self.provider or "", "openai")


def resolve(model: object) -> ModelRef:
    """Where ``model`` (a body's ``model`` field) goes; 400/5006 without one, 400/2008 for an unknown provider."""
    if not isinstance(model, str) or not model.strip():
        raise APIError(400, 5006, "AiError: Bad input: /model: a model id (string) is required")
    if model.startswith("workers-ai/"):
        model = model[len("workers-ai/") :]
    if model.startswith(("@cf/", "@hf/")):
        return ModelRef(model, None)
    provider, sep, rest = model.partition("/")
    if not sep or not rest or provider not in PROVIDERS:
        raise APIError(400, 2008, "Invalid provider")
    return ModelRef(model, provider)
