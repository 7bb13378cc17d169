"""The async client: :class:`AsyncBaseClient`, the shared client rules run by the asyncio session, and
:class:`AsyncWorkersAI`, the public client with its one ``model()`` and ``run()``.

``from workers_ai import AsyncWorkersAI`` loads this class; the generated ``_aio_client.py`` re-exports it
and declares its typed overloads for type checkers only, as ``_client.py`` does for ``WorkersAI``. Handles
come from the same generated model modules as the sync ones (each holds ``<Handle>`` and ``Async<Handle>``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._aio.session import AsyncSession
from .._handles.aio import AsyncGenericHandle, AsyncModelHandle
from .base import ClientBase

if TYPE_CHECKING:
    from .._account.finetunes import AsyncFinetunes
    from .._account.tomarkdown import MarkdownFormat, MarkdownResult
    from .._batch.jobs import AsyncBatchJob
    from .._core.form import FileInput

    # annotations only: a TypeVar with a string bound compiles it (a ForwardRef) at every import
    _Client = TypeVar("_Client", bound="AsyncBaseClient")

# The account endpoints, batches and the universal route load their modules on first use.

__all__ = ["AsyncBaseClient", "AsyncWorkersAI"]


class AsyncBaseClient(AsyncSession, ClientBase):
    """Configuration and transport shared by every call, and the async model handles built on them.

    Takes the options of ``WorkersAI`` (see ``BaseClient``) and reads the same environment variables.
    Use it in ``async with`` or call :meth:`aclose` when done.
    """

    _handle_prefix = "Async"

    @staticmethod
    def _fallback_handle(universal: bool) -> type[Any]:
        if not universal:
            return AsyncGenericHandle
        from .._handles.universal import AsyncUniversalHandle

        return AsyncUniversalHandle

    async def __aenter__(self: _Client) -> _Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def to_markdown(self, files: Sequence[FileInput] | FileInput) -> list[MarkdownResult]:
        """Convert documents to Markdown (``/ai/tomarkdown``); see ``WorkersAI.to_markdown``."""
        from .._account.tomarkdown import to_markdown_flow

        return await self.drive(to_markdown_flow(self, files))

    async def to_markdown_supported(self) -> list[MarkdownFormat]:
        """The formats ``to_markdown`` converts (extension and MIME type)."""
        from .._account.tomarkdown import supported_flow

        return await self.drive(supported_flow(self))

    @functools.cached_property
    def finetunes(self) -> AsyncFinetunes:
        """The account's fine-tunes (LoRA adapters): ``await ai.finetunes.list()``, ``create()``, ..."""
        from .._account.finetunes import AsyncFinetunes

        return AsyncFinetunes(self)

    def batch_job(self, model_id: str, request_id: str) -> AsyncBatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        handle: AsyncModelHandle[Any, Any] = self._model(model_id)
        return handle.batch_job(request_id)


class AsyncWorkersAI(AsyncBaseClient):
    """Async client for the Workers AI REST API (``pip install 'workers-ai[async]'``).

    Same constructor, options and environment variables as ``WorkersAI``; use it in ``async with`` or
    ``await ai.aclose()``. ``ai.model(id)`` returns a typed handle whose methods are awaited
    (``await h.embed(...)``); streams are ``async with h.chat_stream(...) as events: async for e in events``.
    """

    def model(self, model_id: str) -> AsyncModelHandle[Any, Any]:
        """The typed handle for ``model_id`` (its module is imported on first use)."""
        handle: AsyncModelHandle[Any, Any] = self._model(model_id)
        return handle

    def run(
        self,
        model_id: str,
        payload: Any,
        *,
        stream: bool = False,
        queue_request: bool = False,
        headers: Mapping[str, str] | None = None,
        session_affinity: str | None = None,
    ) -> Any:
        """Run any model: ``await ai.run(...)``; with ``stream=True`` use ``async with ai.run(...) as events``.

        Ids that are not ``@cf/``/``@hf/`` go to the universal ``/ai/run`` route with the model in the
        body. ``session_affinity`` sends ``x-session-affinity`` (prompt caching).
        """
        return self._dispatch(
            model_id,
            payload,
            stream=stream,
            queue_request=queue_request,
            headers=headers,
            session_affinity=session_affinity,
        )
