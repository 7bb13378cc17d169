"""The Workers AI REST API as a function: :meth:`Api.handle` takes one request and returns a :class:`Reply`.

Order of checks, like the real API: route (400/7000), token (401/10000), account (404/7003), method
(405/7001), fault header, model (400/5007); then injected request faults; then the route's handler.
Run requests then meet, in order: ``lora`` on a model without adapters (405/5005), ``response_format``
with streaming (400/5023) and the ``json_mode_unmet`` fault.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable, Mapping

from .._core.jsonview import as_object
from . import _finetunes, _markdown
from ._batch import Batches, is_poll, is_submission
from ._catalog import Catalog, ModelSpec
from ._discovery import listing, schema, search
from ._faults import Fault, FaultKind, parse_fault_header, replace_reply, shape_reply
from ._gateway import ResponseCache, log_id, universal
from ._records import RecordedRequest
from ._reply import APIError, Reply, error_reply, failure_reply
from ._routes import Route, route
from ._run import Input, answer, decode_json, read_input
from ._settings import Settings
from ._state import State
from ._thirdparty import resolve
from ._unified import Unified, json_mode_checks

__all__ = ["Api"]


class Api:
    """One emulator's API over its catalog, state and settings."""

    def __init__(self, catalog: Catalog, state: State, settings: Settings) -> None:
        self.catalog = catalog
        self.state = state
        self.settings = settings
        self._batches = Batches(catalog, state.jobs, settings)
        self._unified = Unified(catalog, state, settings)
        self._cache = ResponseCache()

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
        except Exception as exc:  # an emulator bug: say so instead of hanging the client, and keep serving
            self.state.errors.add("request", f"{rec.method} {target[:300]}", exc)
            reply = failure_reply(exc)
        if not any(name == "cf-ray" for name, _ in reply.headers):  # a gateway step's reply has its own
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
        if where.kind == "gateway_universal":  # each step carries its provider's credentials
            self._check_account(rec, where)
            reply = universal(self.handle, where.account, self.settings.api_token, rec.body)
            reply.headers += [("cf-aig-cache-status", "MISS"), ("cf-aig-log-id", log_id())]
            return reply
        if not where.gateway:
            return self._answer(rec, where, ray)
        ttl = ResponseCache.ttl(rec.headers)
        key = (rec.target, rec.body)
        cached = self._cache.get(key) if ttl is not None else None
        if cached is not None:
            self._authorize(rec, where)
            cached.headers = [(k, v) for k, v in cached.headers if k not in ("cf-aig-cache-status", "cf-aig-log-id")]
            cached.headers += [("cf-aig-cache-status", "HIT"), ("cf-aig-log-id", log_id())]
            return cached
        reply = self._answer(rec, where, ray)
        if ttl is not None:
            self._cache.put(key, reply, ttl)
        return reply

    def _answer(self, rec: RecordedRequest, where: Route, ray: str) -> Reply:
        self._authorize(rec, where)
        header_fault = _header_fault(rec)
        spec: ModelSpec | None = None
        body: dict[str, object] | None = None
        if where.kind in ("universal", "chat", "embeddings", "responses", "messages"):
            body = decode_json(rec.body)
            ref = resolve(body.get("model"))
            rec.model = ref.model_id
            if where.kind == "universal" and ref.provider is None:
                where = Route("run", where.account, ref.model_id, where.gateway)
        if where.kind == "run":
            assert where.model_id is not None
            spec = self.catalog.get(where.model_id)
            if spec is None:
                raise APIError(400, 5007, f"No such model {where.model_id} or task")
        fault = self.state.faults.take(rec, "request", header_fault)
        if fault is not None:
            early = replace_reply(fault, ray, rec.model)
            if early is not None:
                return early
        reply = self._route(rec, where, spec, body, header_fault, ray)
        if where.gateway or (where.kind != "run" and rec.model is not None and not rec.model.startswith("@")):
            reply.headers += [("cf-aig-cache-status", "MISS"), ("cf-aig-log-id", log_id())]
        if fault is not None:
            shape_reply(fault, reply)
        return reply

    def _route(
        self,
        rec: RecordedRequest,
        where: Route,
        spec: ModelSpec | None,
        body: dict[str, object] | None,
        header_fault: Fault | None,
        ray: str,
    ) -> Reply:
        def take(kind: FaultKind) -> Fault | None:
            return self.state.faults.take(rec, kind, header_fault)

        def fault_reply(kind: FaultKind) -> Reply | None:
            found = take(kind)
            return replace_reply(found, ray, rec.model) if found is not None else None

        kind = where.kind
        if kind == "search":
            return search(self.catalog, rec.params)
        if kind == "schema":
            return schema(self.catalog, rec.params)
        if kind in ("tasks", "authors"):
            return listing(self.catalog, kind)
        if kind == "tomarkdown":
            return _markdown.to_markdown(rec.headers.get("content-type", ""), rec.body)
        if kind == "tomarkdown_supported":
            return _markdown.supported()
        if kind == "finetunes":
            if rec.method == "GET":
                return _finetunes.listing(self.state.finetunes)
            return _finetunes.create(self.catalog, self.state.finetunes, rec.body)
        if kind == "finetunes_public":
            return _finetunes.public(rec.params)
        if kind == "finetune_assets":
            assert where.item is not None
            return _finetunes.upload(self.state.finetunes, where.item, rec)
        if body is not None:
            if kind == "chat":
                return self._unified.chat(body, fault_reply, take)
            if kind == "embeddings":
                return self._unified.embeddings(body)
            if kind == "responses":
                return self._unified.responses(body, fault_reply)
            if kind == "messages":
                return self._unified.messages(body, fault_reply, take)
            if kind == "universal":  # a third-party model: Workers AI ids became "run" routes above
                early = fault_reply("third_party")
                if early is not None:
                    return early
                return self._unified.third_party_run(resolve(body.get("model")), body, take)
        assert spec is not None
        if body is not None:  # the universal route for a Workers AI model: the rest of the body is its input
            inputs = {k: v for k, v in body.items() if k != "model"}
            return self._run(rec, spec, Input(inputs, None), take, fault_reply)
        return self._run(rec, spec, read_input(rec, spec), take, fault_reply)

    def _authorize(self, rec: RecordedRequest, where: Route) -> None:
        scheme, _, token = rec.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), self.settings.api_token.encode()
        ):
            raise APIError(401, 10000, "Authentication error")
        self._check_account(rec, where)

    def _check_account(self, rec: RecordedRequest, where: Route) -> None:
        if where.account != self.settings.account_id:
            raise APIError(404, 7003, f"Could not route to {rec.path}, perhaps your object identifier is invalid?")
        if rec.method not in where.methods:
            raise APIError(405, 7001, f"{rec.method} not supported for requested URI.")

    def _run(
        self,
        rec: RecordedRequest,
        spec: ModelSpec,
        body: Input,
        take: Callable[[FaultKind], Fault | None],
        fault_reply: Callable[[FaultKind], Reply | None],
    ) -> Reply:
        queue = rec.params.get("queueRequest", "").lower() in ("true", "1", "yes")
        data = as_object(body.payload) if body.raw is None else None
        if data is not None and is_poll(data, queue):
            return self._batches.poll(data)
        if data is not None and is_submission(data, queue):
            return self._batches.submit(spec, data, lambda: take("batch"))
        if data is not None:
            _finetunes.check_lora(spec, data, self.state.finetunes)
            early = json_mode_checks(data, fault_reply)
            if early is not None:
                return early
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
