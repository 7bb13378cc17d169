"""The universal route of the unified REST API: ``POST /ai/run`` with the model in the body.

Ids that are not Workers AI's own (``@cf/…``, ``@hf/…``), e.g. ``openai/gpt-4.1-mini``, go there; AI
Gateway (the account's default one, or the one ``cf-aig-gateway-id`` names) routes them to their provider
and the reply, in the provider's shape, comes back inside the envelope as a plain ``dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import ConfigurationError, InputValidationError
from .aio import AsyncGenericHandle
from .sync import GenericHandle

__all__ = ["AsyncUniversalHandle", "UniversalHandle", "UniversalRoute", "is_workers_ai_id"]

_ENCODER = msgspec.json.Encoder()


def is_workers_ai_id(model_id: str) -> bool:
    """Whether ``model_id`` names a Workers AI model (run at ``/ai/run/{model}``)."""
    return model_id.startswith(("@cf/", "@hf/"))


class UniversalRoute:
    """What a third-party model (``provider/model``) changes: the URL, ``model`` added to the JSON body,
    no raw bytes and no batch queue. Mixed into a generic handle of either client."""

    model_id: str
    client: Any
    _url: str | None

    def _run_url(self) -> str:
        url = self._url
        if url is None:
            url = self._url = str(self.client.api_url("ai/run"))
        return url

    def encode_input(self, payload: Any) -> bytes:
        if isinstance(payload, msgspec.Struct):
            payload = msgspec.to_builtins(payload)
        if not isinstance(payload, Mapping):
            raise InputValidationError(self.model_id, "$", f"expected a mapping, got {type(payload).__name__}")
        data: dict[str, Any] = {"model": self.model_id}
        data.update(payload)  # pyright: ignore[reportUnknownArgumentType]
        if data["model"] != self.model_id:
            raise InputValidationError(self.model_id, "$.model", "the payload names another model")
        try:
            return _ENCODER.encode(data)
        except TypeError as exc:
            raise InputValidationError(self.model_id, "$", f"not JSON-serialisable: {exc}") from None

    def _call_binary(self, data: Any, expect: Any, *, headers: Mapping[str, str] | None = None) -> Any:
        raise InputValidationError(self.model_id, "$", "third-party models take a JSON object, not raw bytes")

    def _batch_requests(self, payload: Any) -> list[Any]:
        raise ConfigurationError(f"{self.model_id}: third-party models have no async batch queue")


class UniversalHandle(UniversalRoute, GenericHandle):
    """A third-party model on the sync client."""


class AsyncUniversalHandle(UniversalRoute, AsyncGenericHandle):
    """A third-party model on the async client."""
