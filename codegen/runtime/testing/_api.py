"""The Workers AI REST API as a function: :meth:`Api.handle` takes one request and returns a :class:`Reply`.

Order of checks, like the real API: route (400/7000), token (401/10000), account (404/7003), method
(405/7001), fault header, model (400/5007); then injected request faults; then the route's handler.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping

from .._json import as_object
from ._batch import Batches, is_poll, is_submission
from ._catalog import Catalog, ModelSpec, stable_id
from ._discovery import listing, schema, search
from ._faults import Fault, FaultKind, parse_fault_header, replace_reply, shape_reply
from ._records import RecordedRequest
from ._reply import APIError, Reply, error_reply
from ._routes import Route, route
from ._run import answer, read_input
from ._settings import Settings
from ._state import State

__all__ = ["Api"]


class Api:
    """One emulator's API over its catalog, state and settings."""

    def __init__(self, catalog: Catalog, state: State, settings: Settings) -> None:
        self.catalog = catalog
        self.state = state
        self.settings = settings
        self._batches = Batches(catalog, state.jobs, settings)

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request (``headers`` with lower-case names); it is recorded first."""
        path, _, query = target.partition("?")
        rec = RecordedRequest(method.upper(), path, query, dict(headers), body)
        self.state.requests.add(rec)
        ray = secrets.token_hex(8) + "-EMU"
        try:
            reply = self._handle(rec, ray)
        except APIError as exc:
            reply = error_reply(exc.status, exc.code, exc.message)
        except Exception as exc:  # an emulator bug: say so instead of hanging the client
            reply = error_reply(500, 3043, f"emulator error: {type(exc).__name__}: {exc}")
        reply.headers.append(("cf-ray", ray))
        reply.headers.append(("server", "workers-ai-emulator"))
        rec.status = reply.status
        log = self.settings.log
        if log is not None:
            print(f"{rec.method} {rec.target} -> {reply.status}" + (f" [{rec.fault}]" if rec.fault else ""), file=log)
        return reply

    def _handle(self, rec: RecordedRequest, ray: str) -> Reply:
        where = route(rec.path)
        rec.model = where.model_id
        self._authorize(rec, where)
        header_fault = _header_fault(rec)
        spec: ModelSpec | None = None
        if where.kind == "run":
            assert where.model_id is not None
            spec = self.catalog.get(where.model_id)
            if spec is None:
                raise APIError(400, 5007, f"No such model {where.model_id} or task")
        fault = self.state.faults.take(rec, "request", header_fault)
        if fault is not None:
            early = replace_reply(fault, ray)
            if early is not None:
                return early
        if where.kind == "search":
            reply = search(self.catalog, rec.params)
        elif where.kind == "schema":
            reply = schema(self.catalog, rec.params)
        elif where.kind in ("tasks", "authors"):
            reply = listing(self.catalog, where.kind)
        else:
            assert spec is not None
            reply = self._run(rec, spec, header_fault)
        if where.gateway:
            reply.headers += [("cf-aig-cache-status", "MISS"), ("cf-aig-log-id", stable_id(ray))]
        if fault is not None:
            shape_reply(fault, reply)
        return reply

    def _authorize(self, rec: RecordedRequest, where: Route) -> None:
        scheme, _, token = rec.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), self.settings.api_token.encode()
        ):
            raise APIError(401, 10000, "Authentication error")
        if where.account != self.settings.account_id:
            raise APIError(404, 7003, f"Could not route to {rec.path}, perhaps your object identifier is invalid?")
        if rec.method != where.method:
            raise APIError(405, 7001, f"{rec.method} not supported for requested URI.")

    def _run(self, rec: RecordedRequest, spec: ModelSpec, header_fault: Fault | None) -> Reply:
        def take(kind: FaultKind) -> Fault | None:
            return self.state.faults.take(rec, kind, header_fault)

        body = read_input(rec, spec)
        queue = rec.params.get("queueRequest", "").lower() in ("true", "1", "yes")
        data = as_object(body.payload) if body.raw is None else None
        if data is not None and is_poll(data, queue):
            return self._batches.poll(data)
        if data is not None and is_submission(data, queue):
            return self._batches.submit(spec, data, lambda: take("batch"))
        return answer(
            spec,
            body,
            check=self.settings.check_outputs,
            stream_interval=self.settings.stream_interval,
            stream_fault=lambda: take("stream"),
        )


def _header_fault(rec: RecordedRequest) -> Fault | None:
    """The one-shot fault an ``x-emulator-fault`` header asks for (400/1000 when it names none)."""
    raw = rec.headers.get("x-emulator-fault")
    if not raw:
        return None
    try:
        return parse_fault_header(raw)
    except ValueError as exc:
        raise APIError(400, 1000, f"emulator: {exc}") from None
