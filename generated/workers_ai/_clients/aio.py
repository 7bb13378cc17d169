"""The async client: :class:`AsyncBaseClient`, the shared client rules run by the asyncio session, and
:class:`AsyncWorkersAI`, the public client with its one ``model()`` and ``run()``.

``from workers_ai import AsyncWorkersAI`` loads this class; the generated ``_aio_client.py`` re-exports it
and declares its typed overloads for type checkers only, as ``_client.py`` does for ``WorkersAI``. Handles
come from the same generated model modules as the sync ones (each holds ``<Handle>`` and ``Async<Handle>``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
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
    """Configuration and transport shared by every call, and the async model handles built on them."""

    _handle_prefix = "Async"

    # generated from _clients/sync.py:BaseClient by codegen.twins, to the end of the class
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
        """Convert documents to Markdown (``/ai/tomarkdown``): paths, binary files or ``(name, bytes)``
        pairs; one :class:`MarkdownResult` per file, in order (a failed file has ``error`` set)."""
        from .._account.tomarkdown import to_markdown_flow

        return await self._drive(to_markdown_flow(self, files))

    async def to_markdown_supported(self) -> list[MarkdownFormat]:
        """The formats ``to_markdown`` converts (extension and MIME type)."""
        from .._account.tomarkdown import supported_flow

        return await self._drive(supported_flow(self))

    @functools.cached_property
    def finetunes(self) -> AsyncFinetunes:
        """The account's fine-tunes (LoRA adapters): ``list()``, ``create()``, ``upload()``, ``public()``."""
        from .._account.finetunes import AsyncFinetunes

        return AsyncFinetunes(self)

    def batch_job(self, model_id: str, request_id: str) -> AsyncBatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        handle: AsyncModelHandle[Any, Any] = self._model(model_id)
        return handle.batch_job(request_id)


class AsyncWorkersAI(AsyncBaseClient):
    """Async client for the Workers AI REST API (``pip install 'workers-ai[async]'``).

    Same constructor, options and environment variables as ``WorkersAI`` (each argument is described under
    ``__init__``); use it in ``async with`` or ``await ai.aclose()``. ``ai.model(id)`` returns a typed handle
    whose methods are awaited (``await h.embed(...)``); streams are ``async with h.chat_stream(...) as events:
    async for e in events``.

    Attributes: ``usage`` (``UsageMeter``: calls, items, tokens, neurons and cost, in all and per model),
    ``options`` (the frozen ``ClientOptions`` it was made with, resolved), ``last_response`` (status,
    ``messages`` and ``cf-ray`` of this task's last reply), ``account_id``, ``base_url``, ``timeout``.
    """
