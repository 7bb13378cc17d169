"""The async client core: an :class:`~._aio_session.AsyncSession` that hands out async model handles.

The mirror of :mod:`._core`: the generated ``_aio_client.AsyncWorkersAI`` subclasses
:class:`AsyncBaseClient` only to add typed overloads; handles come from the same generated model
modules as the sync ones (each holds ``<Handle>`` and ``Async<Handle>``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from typing import Any, TypeVar

from .. import _registry
from .._account.universal import check_namespace
from .._core.affinity import affinity_header
from ..errors import ConfigurationError
from .batch import AsyncBatchJob
from .handle import AsyncGenericHandle, AsyncModelHandle
from .session import AsyncSession

__all__ = ["AsyncBaseClient"]

_Client = TypeVar("_Client", bound="AsyncBaseClient")


class AsyncBaseClient(AsyncSession):
    """Configuration and transport shared by every call, and the async model handles built on them.

    Takes the options of ``WorkersAI`` (see ``_core.BaseClient``) and reads the same environment
    variables. Use it in ``async with`` or call :meth:`aclose` when done.
    """

    @functools.cached_property
    def _handles(self) -> dict[str, AsyncModelHandle[Any, Any]]:
        return {}

    def __repr__(self) -> str:
        via = f", gateway={self.gateway.id!r}" if self.gateway else ""
        return f"{type(self).__name__}(account_id={self.account_id!r}, base_url={self.base_url!r}{via})"

    async def __aenter__(self: _Client) -> _Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def models(self) -> list[str]:
        """Ids of the models this package was generated for."""
        return sorted(_registry.MODELS)

    def _task_of(self, model_id: str) -> str | None:
        if model_id not in _registry.MODELS:
            return None
        return self._model(model_id).info.task or None

    def _model(self, model_id: str) -> AsyncModelHandle[Any, Any]:
        handle = self._handles.get(model_id)
        if handle is None:
            entry = _registry.MODELS.get(model_id)
            if entry is None:
                self.run_url(model_id)  # a bad id is refused here, before a handle is kept for it
                check_namespace(model_id)
                handle = AsyncGenericHandle(self, model_id)
            else:
                module = importlib.import_module(f"{_registry.__package__}.{entry[0]}")
                handle = getattr(module, f"Async{entry[1]}")(self)
            self._handles[model_id] = handle
        return handle

    async def _run(
        self,
        model_id: str,
        payload: Any,
        *,
        queue_request: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        handle = self._model(model_id)
        if queue_request:
            return await handle.submit_batch(payload, headers=headers)
        return await handle.run(payload, headers=headers)

    def _dispatch(
        self,
        model_id: str,
        payload: Any,
        *,
        stream: bool,
        queue_request: bool,
        headers: Mapping[str, str] | None,
        session_affinity: str | None = None,
    ) -> Any:
        """What ``run`` returns: an ``AsyncStreamRequest`` for a stream, else a coroutine to await."""
        if session_affinity is not None:
            headers = {**(headers or {}), **affinity_header(session_affinity)}
        if stream and queue_request:
            raise ConfigurationError("stream and queue_request cannot be combined")
        if stream:
            return self._model(model_id).stream(payload, headers=headers)
        return self._run(model_id, payload, queue_request=queue_request, headers=headers)

    def batch_job(self, model_id: str, request_id: str) -> AsyncBatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        return self._model(model_id).batch_job(request_id)
