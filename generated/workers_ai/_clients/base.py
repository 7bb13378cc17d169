"""What both clients do the same way: pick model handles (generated, generic or universal route),
``model()`` and ``run()`` (typed per model for type checkers by the generated ``_client.py`` and
``_aio_client.py``). The sync and async clients add only their driver (through their session) and the typed
faces of the account endpoints.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from .. import _registry
from .._core.config import SessionConfig, api_url, run_url
from .._core.jsonview import as_object
from .._error_base import ConfigurationError

__all__ = ["ClientBase"]


class ClientBase(SessionConfig):
    """Handles and dispatch shared by ``WorkersAI`` and ``AsyncWorkersAI`` (see their docstrings)."""

    # Set by each client: the prefix of its generated handle class names ("" for ``BgeM3``, "Async" for
    # ``AsyncBgeM3``), and (``_fallback_handle``) its generic and universal-route handle classes.
    _handle_prefix: ClassVar[str] = ""

    @staticmethod
    def _fallback_handle(universal: bool) -> type[Any]:
        """The handle class for a model id this package has no module for: the generic one, or, for a
        third-party id, the universal route's."""
        raise NotImplementedError

    @functools.cached_property
    def _handles(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        from .._core.redact import mask_url  # here: only a repr needs it

        via = f", gateway={self.gateway.id!r}" if self.gateway else ""
        return f"{type(self).__name__}(account_id={self.account_id!r}, base_url={mask_url(self.base_url)!r}{via})"

    def models(self) -> list[str]:
        """Ids of the models this package was generated for."""
        return sorted(_registry.MODELS)

    def _task_of(self, model_id: str) -> str | None:
        if model_id not in _registry.MODELS:
            return None
        task: str = self._model(model_id).info.task
        return task or None

    def _model(self, model_id: str) -> Any:
        handle = self._handles.get(model_id)
        if handle is None:
            entry = _registry.MODELS.get(model_id)
            if entry is None:
                from .._handles.universal import check_namespace, is_workers_ai_id

                run_url(self, model_id)  # a bad id is refused here, before a handle is kept for it
                check_namespace(model_id)
                workers_ai_id = is_workers_ai_id(model_id)
                handle = self._fallback_handle(not workers_ai_id)(self, model_id)
                if workers_ai_id:
                    _warn_if_slip(model_id)
            else:
                module = importlib.import_module(f"{_registry.__package__}.{entry[0]}")
                handle = getattr(module, self._handle_prefix + entry[1])(self)
                _log_if_deprecated(model_id, handle.info.properties)
            self._handles[model_id] = handle  # so each warning comes once per model and client
        return handle

    def model(self, model_id: str) -> Any:
        """The typed handle for ``model_id`` (its module is imported on first use; typed per model)."""
        return self._model(model_id)

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
        """Run any model (awaited on the async client): decoded structs, or ``dict``/bytes for unknown models;
        ``stream=True`` gives an event stream, ``queue_request=True`` a batch job. Ids that are not
        ``@cf/``/``@hf/`` go to the universal ``/ai/run`` route; ``session_affinity`` sends x-session-affinity."""
        handle = self._model(model_id)
        if session_affinity is not None:
            from .._core.affinity import affinity_header

            headers = {**(headers or {}), **affinity_header(session_affinity)}
        if stream and queue_request:
            raise ConfigurationError("stream and queue_request cannot be combined")
        if stream:
            return handle.stream(payload, headers=headers)
        if queue_request:
            return handle.submit_batch(payload, headers=headers)
        return handle.run(payload, headers=headers)

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/accounts/{id}/ai/v1``) for the ``openai`` SDK:
        ``OpenAI(base_url=ai.openai_base_url, api_key=token)``. Through AI Gateway's URL form it is the
        gateway's ``…/workers-ai/v1``."""
        gw = self.gateway
        if gw is not None and gw.url_form:
            return gw.url(self.account_id, "v1")
        return api_url(self, "ai/v1")


def _warn_if_slip(model_id: str) -> None:
    """``UnknownModelWarning`` for an id this package does not know that looks like a slip of one it does (a
    new model's id is used as given, without a word)."""
    from .._core.suggest import slip_of

    known = slip_of(model_id, _registry.MODELS)
    if known is not None:
        from .._core.warn import warn_user
        from ..errors import UnknownModelWarning

        warn_user(
            f"{model_id} is not a model this package knows: did you mean {known!r}? (used as given; a model newer"
            " than this package is not in its registry)",
            UnknownModelWarning,
        )


def _log_if_deprecated(model_id: str, properties: Any) -> None:
    """A WARNING log line when the catalog's planned end of service for the model has passed."""
    if "planned_deprecation_date" not in (as_object(properties) or ()):
        return  # most models: no date to compare
    when = planned_end_passed(properties, time.strftime("%Y-%m-%d", time.gmtime()))
    if when is not None:
        from .._core.telemetry import log

        log.warning("%s is deprecated: its planned end of service was %s; switch to a newer model", model_id, when)


def planned_end_passed(properties: Any, today: str) -> str | None:
    """The catalog's ``planned_deprecation_date`` of a model (its ``properties``) when it is ``today`` or
    earlier (``YYYY-MM-DD``, UTC), else None."""
    when = (as_object(properties) or {}).get("planned_deprecation_date")
    if not isinstance(when, str) or len(when) != 10 or when[4::3] != "--":
        return None
    return when if when <= today else None
