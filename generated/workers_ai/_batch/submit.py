"""Queueing a batch: the one submission flow (size check, ``?queueRequest=true``, the request id) that
``handle.submit_batch`` (sync and async) and ``batch_many`` drive.

Submitting is never blindly repeated: the rule lives in ``request_flow(queued=True)`` (see
:mod:`.jobs`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .._core.config import run_url
from .._core.flow import Flow
from .._core.requests import request_flow
from .._core.telemetry import batch_log, telemetry_of
from .jobs import BatchJobBase
from .wire import BatchModel, check_batch_size, submitted_id

__all__ = ["submit_flow"]

JobT = TypeVar("JobT", bound=BatchJobBase[Any])


def submit_flow(
    handle: BatchModel,
    job_type: Callable[..., JobT],
    body: bytes,
    size: int,
    headers: Mapping[str, str] | None,
    max_bytes: int,
) -> Flow[JobT]:
    """Queue an encoded batch body and return the job (a ``job_type``: the sync or the async job)."""
    check_batch_size(handle.model_id, body, max_bytes)
    client = handle.client
    submitted = time.time()
    url = run_url(client, handle.model_id) + "?queueRequest=true"
    flow = _submitted_id_flow(handle, url, body, headers)
    tel = telemetry_of(client)
    if tel is None:
        request_id = yield from flow
    else:
        call = tel.start("batch_submit", handle.model_id, url, extra={"workers_ai.batch.size": size})
        request_id = yield from tel.traced(call, flow, lambda rid: {"workers_ai.batch.request_id": rid})
    batch_log.info("batch %s for %s: queued (%d requests)", request_id, handle.model_id, size)
    return job_type(handle, request_id, submitted_at=submitted, size=size)


def _submitted_id_flow(handle: BatchModel, url: str, body: bytes, headers: Mapping[str, str] | None) -> Flow[str]:
    client = handle.client
    reply = yield from request_flow(client, "POST", url, body, headers=headers, queued=True, model_id=handle.model_id)
    return submitted_id(handle.model_id, client, reply)
