"""Queueing a batch: the one submission flow (size check, ``?queueRequest=true``, the request id) and
its sync and async entry points.

Submitting is never blindly repeated: the rule lives in ``Session.request(queued=True)`` (see
:mod:`.jobs`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._core.flow import Flow
from .._core.telemetry import batch_log, telemetry_of
from .jobs import AsyncBatchJob, AsyncBatchTarget, BatchJob, BatchJobBase, BatchTarget
from .wire import MAX_BATCH_BYTES, BatchModel, check_batch_size, encode_batch, encode_requests, submitted_id

__all__ = ["asubmit", "submit", "submit_encoded", "submit_flow"]

JobT = TypeVar("JobT", bound=BatchJobBase[Any])


async def asubmit(
    handle: AsyncBatchTarget,
    requests: Sequence[Any],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> AsyncBatchJob[Any]:
    """:func:`submit`, awaited."""
    body = encode_requests(handle, requests)
    flow: Flow[AsyncBatchJob[Any]] = submit_flow(handle, AsyncBatchJob[Any], body, len(requests), headers, max_bytes)
    return await handle.client.drive(flow)


def submit(
    handle: BatchTarget,
    requests: Sequence[Any],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> BatchJob[Any]:
    """Queue ``requests`` (POST with ``?queueRequest=true``) and return the job.

    A body of ``max_bytes`` or more is refused before sending (the API takes under 10 MB; split the
    requests, or use ``ModelHandle.embed_many`` for texts). The submission is re-sent only after a
    failure that proves the server did not take it (connection never opened, 429, 503); after a read
    timeout, a dropped connection or 500/502/504 the error is raised, because the batch may be queued.
    """
    body = encode_requests(handle, requests)
    flow: Flow[BatchJob[Any]] = submit_flow(handle, BatchJob[Any], body, len(requests), headers, max_bytes)
    return handle.client.drive(flow)


def submit_encoded(
    handle: BatchTarget,
    requests: Sequence[bytes],
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BATCH_BYTES,
) -> BatchJob[Any]:
    """:func:`submit` for requests already validated and encoded, one JSON object each; they are sent as they are."""
    body = encode_batch(handle.model_id, requests)
    flow: Flow[BatchJob[Any]] = submit_flow(handle, BatchJob[Any], body, len(requests), headers, max_bytes)
    return handle.client.drive(flow)


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
    url = client.run_url(handle.model_id) + "?queueRequest=true"
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
    reply = yield from client.request_flow("POST", url, body, headers=headers, queued=True, model_id=handle.model_id)
    return submitted_id(handle.model_id, client, reply)
