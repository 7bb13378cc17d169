"""The client: a :class:`~._session.Session` that hands out model handles.

The generated ``_client.WorkersAI`` subclasses :class:`BaseClient` only to add typed overloads. Sending,
retries, deadlines and ``last_response`` live in the session below; this layer only picks handles.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from .. import _registry
from .._account.finetunes import Finetunes
from .._account.tomarkdown import MarkdownFormat, MarkdownResult, supported_formats, to_markdown
from .._account.universal import UniversalHandle, check_namespace, is_workers_ai_id
from .._batch.jobs import BatchJob
from .._core.affinity import affinity_header
from .._core.form import FileInput
from ..errors import ConfigurationError
from .handle import GenericHandle, ModelHandle
from .session import DEFAULT_BASE_URL, ResponseInfo, Session

__all__ = ["DEFAULT_BASE_URL", "BaseClient", "ResponseInfo"]

_Client = TypeVar("_Client", bound="BaseClient")


class BaseClient(Session):
    """Configuration and transport shared by every call, and the model handles built on them.

    Options beyond the account and token (see the README's "Retries, timeouts and limits"): ``timeout``
    (seconds per attempt, the whole reply included), ``max_retries``, ``max_connections`` (kept-alive
    connections per host, default 64), ``max_response_bytes`` (default 256 MiB), ``max_event_bytes``
    (one server-sent event, default 16 MiB), ``stream_idle_timeout`` (default 60 s between events),
    ``stream_timeout`` (a whole stream; default none), ``compress`` (ask for gzip; off by default) and
    ``rate_limit`` (requests per minute per model: the published limits by default, a number, a mapping
    ``model id -> rpm`` or None; see :mod:`._ratelimit`). A client pickles as its configuration, the
    token included (see :mod:`._pickle`).
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
                check_namespace(model_id)
                universal = not is_workers_ai_id(model_id)
                handle = UniversalHandle(self, model_id) if universal else GenericHandle(self, model_id)
            else:
                module = importlib.import_module(f"{_registry.__package__}.{entry[0]}")
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
        session_affinity: str | None = None,
    ) -> Any:
        handle = self._model(model_id)
        if session_affinity is not None:
            headers = {**(headers or {}), **affinity_header(session_affinity)}
        if stream and queue_request:
            raise ConfigurationError("stream and queue_request cannot be combined")
        if stream:
            return handle.stream(payload, headers=headers)
        if queue_request:
            return handle.submit_batch(payload, headers=headers)
        return handle.run(payload, headers=headers)

    # ------------------------------------------------------------------ the rest of the API (issue 14)

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/accounts/{id}/ai/v1``) for the ``openai`` SDK:
        ``OpenAI(base_url=ai.openai_base_url, api_key=token)``. Through AI Gateway's URL form it is the
        gateway's ``…/workers-ai/v1``."""
        gw = self.gateway
        if gw is not None and gw.url_form:
            return gw.url(self.account_id, "v1")
        return self.api_url("ai/v1")

    def to_markdown(self, files: Sequence[FileInput] | FileInput) -> list[MarkdownResult]:
        """Convert documents to Markdown (``/ai/tomarkdown``): paths, binary files or ``(name, bytes)``
        pairs; one :class:`MarkdownResult` per file, in order (a failed file has ``error`` set)."""
        return to_markdown(self, files)

    def to_markdown_supported(self) -> list[MarkdownFormat]:
        """The formats ``to_markdown`` converts (extension and MIME type)."""
        return supported_formats(self)

    @functools.cached_property
    def finetunes(self) -> Finetunes:
        """The account's fine-tunes (LoRA adapters): ``list()``, ``create()``, ``upload()``, ``public()``."""
        return Finetunes(self)

    def batch_job(self, model_id: str, request_id: str) -> BatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        return self._model(model_id).batch_job(request_id)
