"""The async client core: :class:`AsyncBaseClient`, the shared client rules run by the asyncio session.

The generated ``_aio_client.AsyncWorkersAI`` subclasses it only to add typed overloads; handles come from
the same generated model modules as the sync ones (each holds ``<Handle>`` and ``Async<Handle>``).
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

__all__ = ["AsyncBaseClient"]


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
