"""The client: a :class:`~._session.Session` that hands out model handles.

The generated ``_client.WorkersAI`` subclasses :class:`BaseClient` only to add typed overloads. Sending,
retries, deadlines and ``last_response`` live in the session below; this layer only picks handles.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from typing import Any, TypeVar

from . import _registry
from ._batch import BatchJob
from ._handle import GenericHandle, ModelHandle
from ._session import DEFAULT_BASE_URL, ResponseInfo, Session
from .errors import ConfigurationError

__all__ = ["DEFAULT_BASE_URL", "BaseClient", "ResponseInfo"]

_Client = TypeVar("_Client", bound="BaseClient")


class BaseClient(Session):
    """Configuration and transport shared by every call, and the model handles built on them.

    Options beyond the account and token (see the README's "Retries, timeouts and limits"): ``timeout``
    (seconds per attempt, the whole reply included), ``max_retries``, ``max_connections`` (kept-alive
    connections per host, default 64), ``max_response_bytes`` (default 256 MiB), ``max_event_bytes``
    (one server-sent event, default 16 MiB), ``stream_idle_timeout`` (default 60 s between events),
    ``stream_timeout`` (a whole stream; default none) and ``compress`` (ask for gzip; off by default).
    """

    @functools.cached_property
    def _handles(self) -> dict[str, ModelHandle[Any, Any]]:
        return {}

    def __repr__(self) -> str:
        via = f", gateway={self.gateway.id!r}" if self.gateway else ""
        return f"{type(self).__name__}(account_id={self.account_id!r}, base_url={self.base_url!r}{via})"

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ models

    def models(self) -> list[str]:
        """Ids of the models this package was generated for."""
        return sorted(_registry.MODELS)

    def _task_of(self, model_id: str) -> str | None:
        if model_id not in _registry.MODELS:
            return None
        return self._model(model_id).info.task or None

    def _model(self, model_id: str) -> ModelHandle[Any, Any]:
        handle = self._handles.get(model_id)
        if handle is None:
            entry = _registry.MODELS.get(model_id)
            if entry is None:
                self.run_url(model_id)  # a bad id is refused here, before a handle is kept for it
                handle = GenericHandle(self, model_id)
            else:
                module = importlib.import_module(f"{__package__}.{entry[0]}")
                handle = getattr(module, entry[1])(self)
            self._handles[model_id] = handle
        return handle

    def _run(
        self,
        model_id: str,
        payload: Any,
        *,
        stream: bool = False,
        queue_request: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        handle = self._model(model_id)
        if stream and queue_request:
            raise ConfigurationError("stream and queue_request cannot be combined")
        if stream:
            return handle.stream(payload, headers=headers)
        if queue_request:
            return handle.submit_batch(payload, headers=headers)
        return handle.run(payload, headers=headers)

    def batch_job(self, model_id: str, request_id: str) -> BatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        return self._model(model_id).batch_job(request_id)
