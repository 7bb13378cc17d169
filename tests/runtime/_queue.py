"""A small async-batch state machine for ScriptedServer: submit -> queued -> running -> done (or failed).

Used by the batch tests as the server's single reply callable. Each job walks through ``states`` one
poll at a time; when it reaches ``done`` the reply lists one response per request, in a shuffled order,
built by ``respond(index, request)``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from tests._server import Reply, Request, fail, ok

Respond = Callable[[int, dict[str, Any]], dict[str, Any]]


def embed_vectors(index: int, request: dict[str, Any]) -> dict[str, Any]:
    """An embedding result whose vectors say which text they belong to: ``"t 42"`` -> ``[42.0, len]``."""
    texts = request["text"] if isinstance(request["text"], list) else [request["text"]]
    data = [[float(t.split()[-1]) if t.split()[-1].isdigit() else -1.0, float(len(t))] for t in texts]
    return {
        "id": index,
        "success": True,
        "result": {"shape": [len(data), 2], "data": data, "pooling": "mean"},
        "external_reference": request.get("external_reference"),
    }


class QueueSim:
    def __init__(
        self,
        states: Sequence[str] = ("queued", "running", "done"),
        respond: Respond = embed_vectors,
        *,
        seed: int = 0,
        envelope: bool = True,
    ) -> None:
        self.states = list(states)
        self.respond = respond
        self.rng = random.Random(seed)
        self.envelope = envelope
        self.jobs: dict[str, dict[str, Any]] = {}
        self.submits = 0
        self.polls = 0
        self.batch_bodies: list[bytes] = []

    def __call__(self, req: Request) -> Reply:
        body = req.json()
        model = req.path.split("/ai/run/", 1)[1]
        if "requests" in body:
            assert "queueRequest=true" in req.query
            self.submits += 1
            self.batch_bodies.append(req.body)
            rid = f"job-{len(self.jobs):04d}-0000-4000-8000-000000000000"
            self.jobs[rid] = {"requests": body["requests"], "polls": 0, "model": model}
            return self._reply({"status": "queued", "request_id": rid, "model": model})
        rid = body.get("request_id")
        job = self.jobs.get(rid) if isinstance(rid, str) else None
        if job is None:
            return fail(404, 5007, f"No such request {rid}")
        self.polls += 1
        job["polls"] += 1
        state = self.states[min(job["polls"] - 1, len(self.states) - 1)]
        if state == "done":
            responses = [self.respond(i, r) for i, r in enumerate(job["requests"])]
            self.rng.shuffle(responses)
            return self._reply(
                {"responses": responses, "usage": {"prompt_tokens": 12, "completion_tokens": 0, "total_tokens": 12}}
            )
        if state == "failed":
            return self._reply({"status": "failed", "request_id": rid, "error": "3007: the batch timed out"})
        return self._reply({"status": state, "request_id": rid, "model": model})

    def _reply(self, result: Any) -> Reply:
        if self.envelope:
            return ok(result)
        return Reply(200, msgspec.json.encode(result))
