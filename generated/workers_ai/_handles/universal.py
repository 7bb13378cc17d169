"""The universal route of the unified REST API: ``POST /ai/run`` with the model in the body.

Ids that are not Workers AI's own (``@cf/…``, ``@hf/…``), e.g. ``openai/gpt-4.1-mini``, go there; AI
Gateway (the account's default one, or the one ``cf-aig-gateway-id`` names) routes them to their provider
and the reply, in the provider's shape, comes back inside the envelope as a plain ``dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .. import _registry
from .._core.body import encode_body
from .._core.config import api_url
from .._error_base import ConfigurationError, InputValidationError
from .aio import AsyncGenericHandle
from .sync import GenericHandle

__all__ = ["AsyncUniversalHandle", "UniversalHandle", "UniversalRoute", "check_namespace", "is_workers_ai_id"]


def is_workers_ai_id(model_id: str) -> bool:
    """Whether ``model_id`` names a Workers AI model (run at ``/ai/run/{model}``)."""
    return model_id.startswith(_NAMESPACES)


def check_namespace(model_id: str) -> None:
    """Refuse an id that lost its namespace: ``meta/llama-3-8b-instruct`` (a catalog id without its
    ``@cf/``) or a bare name. Sent, either would come back as API error 2008 with no hint; a third-party
    ``provider/model`` id that is not a Workers AI id passes."""
    if is_workers_ai_id(model_id):
        return
    known = [ns + model_id for ns in _NAMESPACES if ns + model_id in _registry.MODELS]
    if known or "/" not in model_id:
        hint = f"; did you mean {known[0]!r}?" if known else ""
        raise ConfigurationError(
            f"model id {model_id!r} has no namespace: Workers AI ids start with {' or '.join(_NAMESPACES)}"
            f" (third-party models are 'provider/model'){hint}"
        )


_NAMESPACES = ("@cf/", "@hf/")


class UniversalRoute:
    """What a third-party model (``provider/model``) changes: the URL, ``model`` added to the JSON body,
    no raw bytes and no batch queue. Mixed into a generic handle of either client."""

    model_id: str
    client: Any
    _url: str | None

    def _run_url(self) -> str:
        url = self._url
        if url is None:
            url = self._url = api_url(self.client, "ai/run")
        return url

    def encode_input(self, payload: Any, *, check_keys: bool = True) -> bytes:
        if isinstance(payload, msgspec.Struct):
            payload = msgspec.to_builtins(payload)
        if not isinstance(payload, Mapping):
            raise InputValidationError(self.model_id, "$", f"expected a mapping, got {type(payload).__name__}")
        data: dict[str, Any] = {"model": self.model_id}
        data.update(payload)  # pyright: ignore[reportUnknownArgumentType]
        if data["model"] != self.model_id:
            raise InputValidationError(self.model_id, "$.model", "the payload names another model")
        return encode_body(data, self.model_id)

    def _call_binary(self, data: Any, expect: Any, *, headers: Mapping[str, str] | None = None) -> Any:
        raise InputValidationError(self.model_id, "$", "third-party models take a JSON object, not raw bytes")

    def _batch_requests(self, payload: Any) -> tuple[list[Any], dict[str, Any]]:
        raise ConfigurationError(f"{self.model_id}: third-party models have no async batch queue")


class UniversalHandle(UniversalRoute, GenericHandle):
    """A third-party model on the sync client."""


class AsyncUniversalHandle(UniversalRoute, AsyncGenericHandle):
    """A third-party model on the async client."""
