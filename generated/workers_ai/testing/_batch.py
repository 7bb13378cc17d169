"""Async batches (``?queueRequest=true``): submit a list of inputs, poll by ``request_id`` until the
results (queued -> running -> done on the schedule :class:`Settings` gives)."""

from __future__ import annotations

import base64
import random
import time
import uuid
from collections.abc import Callable
from typing import Any, cast

from .._core.jsonview import as_list, as_object
from ._catalog import Catalog, ModelSpec
from ._faults import Fault
from ._outputs import run_model, seed_for
from ._reply import APIError, Reply, json_reply
from ._settings import Settings
from ._state import Job, Jobs
from ._synth import input_variants
from ._textgen import JSON_MODE_UNMET, JsonModeUnmet

__all__ = ["Batches", "is_poll", "is_submission"]


def is_poll(data: dict[str, Any], queue: bool) -> bool:
    return "request_id" in data and "requests" not in data and (queue or set(data) == {"request_id"})


def is_submission(data: dict[str, Any], queue: bool) -> bool:
    return queue and "requests" in data


class Batches:
    """Submissions and polls of one emulator's batch jobs."""

    def __init__(self, catalog: Catalog, jobs: Jobs, settings: Settings) -> None:
        self._catalog = catalog
        self._jobs = jobs
        self._settings = settings

    def submit(self, spec: ModelSpec, data: dict[str, Any], batch_fault: Callable[[], Fault | None]) -> Reply:
        """Queue ``data["requests"]``; the batch fault it meets (``batch_fault()``) makes an item, or all, fail."""
        requests = as_list(data.get("requests"))
        if requests is None:  # an empty list is a batch: the schema sets no minItems
            raise APIError(400, 5006, "AiError: Bad input: /requests: a batch needs a list of requests")
        if not any(label != "binary" and _requires_requests(s) for label, s in input_variants(spec.inputs)):
            raise APIError(400, 5006, f"AiError: Bad input: /requests: {spec.model_id} does not take async batches")
        items: list[Any] = []
        refs: list[Any] = []
        for entry in requests:
            item = as_object(entry)
            if item is not None and "external_reference" in item:
                item = {k: v for k, v in item.items() if k != "external_reference"}
                refs.append(cast("dict[str, Any]", entry)["external_reference"])
            else:
                refs.append(None)
            items.append(item if item is not None else entry)
        job = Job(str(uuid.uuid4()), spec.model_id, items, refs, time.monotonic())
        fault = batch_fault()
        if fault is not None:
            if fault.name == "batch_failed":
                job.failed = fault.message or "the batch failed"
            else:
                for failing in fault.items or (fault.item,):
                    job.fail_items[failing] = (fault.code or 3040, fault.message or "")
        self._jobs.add(job)
        return json_reply({"status": "queued", "request_id": job.request_id, "model": spec.model_id})

    def poll(self, data: dict[str, Any]) -> Reply:
        request_id = data.get("request_id")
        job = self._jobs.poll(request_id)
        if job is None:
            raise APIError(
                400, 5006, f"AiError: Bad input: no async batch with request_id {request_id!r} (unknown or expired)"
            )
        state = self._state(job)
        if state != "done":
            return json_reply({"status": state, "request_id": job.request_id, "model": job.model_id})
        job.finished = True
        if job.failed is not None:
            return json_reply(
                {"status": "failed", "request_id": job.request_id, "model": job.model_id, "error": job.failed}
            )
        if job.done is None:
            job.done = self._results(job)
        return json_reply(job.done)

    def _state(self, job: Job) -> str:
        if self._settings.batch_delay is not None:
            elapsed = time.monotonic() - job.created
            queued, running = self._settings.batch_delay
            if elapsed < queued:
                return "queued"
            return "running" if elapsed < queued + running else "done"
        queued_polls, running_polls = self._settings.batch_polls
        if job.polls <= queued_polls:
            return "queued"
        return "running" if job.polls <= queued_polls + running_polls else "done"

    def _results(self, job: Job) -> dict[str, Any]:
        spec = self._catalog.get(job.model_id)
        assert spec is not None
        schema = _batch_item_schema(spec)
        responses: list[dict[str, Any]] = []
        totals = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for i, item in enumerate(job.items):
            entry: dict[str, Any] = {"id": i, "external_reference": job.refs[i]}
            problem = spec.inputs.validator.first_error(item) if schema is None else _item_error(spec, schema, item)
            if i in job.fail_items:
                code, message = job.fail_items[i]
                entry.update(result=None, success=False, errors=[{"code": code, "message": message}])
            elif problem is not None:
                entry.update(
                    result=None, success=False, errors=[{"code": 5006, "message": f"AiError: Bad input: {problem}"}]
                )
            else:
                try:
                    result = run_model(spec, item, allow_stream=False, check=self._settings.check_outputs)
                except JsonModeUnmet:
                    entry.update(result=None, success=False, errors=[{"code": 3030, "message": JSON_MODE_UNMET}])
                    responses.append(entry)
                    continue
                value: Any = result.value
                if result.kind == "binary":
                    value = base64.b64encode(result.data).decode("ascii")
                entry.update(result=value, success=True)
                for key in totals:
                    totals[key] += int((result.usage or {}).get(key, 0))
            responses.append(entry)
        if self._settings.shuffle_batches:
            random.Random(seed_for(job.model_id, job.items)).shuffle(responses)
        return {"responses": responses, "usage": totals}


def _requires_requests(schema: Any) -> bool:
    obj = as_object(schema) or {}
    req = obj.get("required")
    return "requests" in (as_list(req) or [])


def _batch_item_schema(spec: ModelSpec) -> Any:
    """The ``requests[]`` item schema of the batch input branch (part of the relaxed root)."""
    for label, schema in input_variants(spec.inputs):
        if label == "binary" or not _requires_requests(schema):
            continue
        props = as_object(as_object(schema) and cast("dict[str, Any]", schema).get("properties")) or {}
        requests = as_object(props.get("requests")) or {}
        items = requests.get("items")
        if items is not None:
            return items
    return None


def _item_error(spec: ModelSpec, schema: Any, item: Any) -> str | None:
    validator = spec.inputs.validator
    if validator.is_valid(item, schema):
        return None
    problem = validator.first_error(item)  # the path-naming message, from the whole input schema
    return problem or "/: the request does not fit the model's batch input"
