"""The sync client: :class:`BaseClient`, the shared client rules run by the blocking session, and
:class:`WorkersAI`, the public client with its one ``model()`` and ``run()``.

``from workers_ai import WorkersAI`` loads this class. The generated ``_client.py`` re-exports it; for
type checkers only it declares a subclass of it with a typed overload per model (so their bytecode is
never loaded at run time). Sending, retries, deadlines and ``last_response`` live in the session and the
flows of :mod:`.._core`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._handles.sync import GenericHandle, ModelHandle
from .._sync.session import DEFAULT_BASE_URL, ResponseInfo, Session
from .base import ClientBase

if TYPE_CHECKING:
    from .._account.finetunes import Finetunes
    from .._account.tomarkdown import MarkdownFormat, MarkdownResult
    from .._batch.jobs import BatchJob
    from .._core.form import FileInput

    # annotations only: a TypeVar with a string bound compiles it (a ForwardRef) at every import
    _Client = TypeVar("_Client", bound="BaseClient")

# The account endpoints, batches and the universal route load their modules on first use.

__all__ = ["DEFAULT_BASE_URL", "BaseClient", "ResponseInfo", "WorkersAI"]


class BaseClient(Session, ClientBase):
    """Configuration and transport shared by every call, and the model handles built on them."""

    @staticmethod
    def _fallback_handle(universal: bool) -> type[Any]:
        if not universal:
            return GenericHandle
        from .._handles.universal import UniversalHandle

        return UniversalHandle

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def to_markdown(self, files: Sequence[FileInput] | FileInput) -> list[MarkdownResult]:
        """Convert documents to Markdown (``/ai/tomarkdown``): paths, binary files or ``(name, bytes)``
        pairs; one :class:`MarkdownResult` per file, in order (a failed file has ``error`` set)."""
        from .._account.tomarkdown import to_markdown_flow

        return self._drive(to_markdown_flow(self, files))

    def to_markdown_supported(self) -> list[MarkdownFormat]:
        """The formats ``to_markdown`` converts (extension and MIME type)."""
        from .._account.tomarkdown import supported_flow

        return self._drive(supported_flow(self))

    @functools.cached_property
    def finetunes(self) -> Finetunes:
        """The account's fine-tunes (LoRA adapters): ``list()``, ``create()``, ``upload()``, ``public()``."""
        from .._account.finetunes import Finetunes

        return Finetunes(self)

    def batch_job(self, model_id: str, request_id: str) -> BatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        handle: ModelHandle[Any, Any] = self._model(model_id)
        return handle.batch_job(request_id)


class WorkersAI(BaseClient):
    """Client for the Workers AI REST API.

    ``WorkersAI()`` reads ``CLOUDFLARE_ACCOUNT_ID``, ``CLOUDFLARE_API_TOKEN`` and ``CLOUDFLARE_BASE_URL``;
    ``ai.model(id)`` returns a typed handle with one method per input variant of that model. Each
    constructor argument is described under ``__init__``; use the client in ``with`` or call ``close()``.

    Attributes: ``usage`` (``UsageMeter``: calls, items, tokens, neurons and cost, in all and per model),
    ``options`` (the frozen ``ClientOptions`` it was made with, resolved), ``last_response`` (status,
    ``messages`` and ``cf-ray`` of this thread's last reply), ``account_id``, ``base_url``, ``timeout``.
    """
