"""The emulator: a local HTTP server speaking the Workers AI REST API, driven by the model schemas.

Routing, auth, the Cloudflare envelope, input validation, async batches, streaming and fault
injection live here; what a model answers comes from :mod:`._outputs`. :meth:`Emulator.handle` is the
whole API as a function (request in, :class:`Reply` out); the HTTP layer only moves bytes.
"""

from __future__ import annotations

import base64
import hmac
import io
import random
import secrets
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast
from urllib.parse import parse_qs, unquote

import msgspec

from .._json import as_list, as_object
from ._catalog import Catalog, ModelSpec, model_object, stable_id
from ._faults import Fault, FaultKind, parse_fault_header
from ._outputs import Result, run_model, seed_for
from ._synth import input_variants

if TYPE_CHECKING:
    from .._client import WorkersAI

__all__ = ["DEFAULT_ACCOUNT_ID", "DEFAULT_API_TOKEN", "Emulator", "RecordedRequest", "Reply"]

DEFAULT_ACCOUNT_ID = "0123456789abcdef0123456789abcdef"
DEFAULT_API_TOKEN = "emulator-token"
_JSON = "application/json"
_SSE = "text/event-stream"
_HTML_502 = (
    "<!DOCTYPE html>\n<html><head><title>api.cloudflare.com | 502: Bad gateway</title></head>\n"
    "<body><h1>Bad gateway</h1><p>Error code 502</p><p>The web server reported a bad gateway error.</p>"
    "<p>Ray ID: {ray} &bull; emulated</p></body></html>\n"
)
_SECRET_HEADERS = frozenset({"authorization", "cf-aig-authorization"})


def _mask(value: str) -> str:
    """``Bearer ***``: the scheme stays visible, the credential does not."""
    scheme, sep, _ = value.partition(" ")
    return f"{scheme} ***" if sep else "***"


@dataclass
class RecordedRequest:
    """One request the emulator received (kept in :attr:`Emulator.requests`).

    ``headers`` are kept whole (lower-case names), but the repr masks the ``authorization`` value, so
    a failing test's output never shows the token.
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    model: str | None = None
    fault: str | None = None
    status: int | None = None
    at: float = field(default_factory=time.time)

    def __repr__(self) -> str:
        headers = {k: (_mask(v) if k.lower() in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        return (
            f"RecordedRequest(method={self.method!r}, path={self.path!r}, query={self.query!r}, "
            f"headers={headers!r}, body={self.body!r}, model={self.model!r}, fault={self.fault!r}, "
            f"status={self.status!r}, at={self.at!r})"
        )

    @property
    def target(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")

    @property
    def params(self) -> dict[str, str]:
        """Query parameters (the first value of each)."""
        return {k: v[0] for k, v in parse_qs(self.query, keep_blank_values=True).items()}

    def json(self) -> Any:
        """The body decoded as JSON."""
        return msgspec.json.decode(self.body)


@dataclass
class Reply:
    """What to send back, and how (whole, chunked, slowly, cut short)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=lambda: [])
    body: bytes = b""
    chunks: list[bytes] | None = None  # sent with Transfer-Encoding: chunked, one write each
    chunk_interval: float = 0.0
    delay: float = 0.0
    cut: int | None = None  # body bytes (or chunks) to send before breaking the connection
    cut_mode: Literal["close", "reset"] | None = None
    close: bool = False


@dataclass
class _Job:
    request_id: str
    model_id: str
    items: list[Any]
    refs: list[Any]
    created: float
    polls: int = 0
    fail_items: dict[int, tuple[int, str]] = field(default_factory=lambda: {})
    failed: str | None = None
    done: dict[str, Any] | None = None
    finished: bool = False  # a poll has answered with the results or the failure


class _APIError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _envelope(result: Any, *, success: bool = True, errors: Iterable[Mapping[str, Any]] = ()) -> bytes:
    return msgspec.json.encode({"result": result, "success": success, "errors": list(errors), "messages": []})


class Emulator:
    """A local, schema-faithful Workers AI server on ``127.0.0.1`` (a free port unless ``port`` is given).

    Use it as a context manager, or call :meth:`close`. Point the client at it with
    ``WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url)`` or
    :meth:`client`. Every request is recorded in :attr:`requests`; :meth:`inject` arranges faults.

    ``batch_polls=(q, r)``: a queued batch answers ``queued`` to its first ``q`` polls, ``running`` to
    the next ``r``, then its results. ``batch_delay=(q_seconds, r_seconds)`` uses time instead.
    ``check_outputs`` validates every JSON reply against the output schema (a 500 if it does not fit).
    ``keep_requests`` bounds :attr:`requests` (the oldest are dropped) and ``keep_jobs`` the batch jobs
    kept (the oldest finished ones go first; polling a dropped job answers "unknown or expired"), for
    long-running servers.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        account_id: str = DEFAULT_ACCOUNT_ID,
        api_token: str = DEFAULT_API_TOKEN,
        models: Iterable[str] | None = None,
        schemas: str | Path | None = None,
        batch_polls: tuple[int, int] = (1, 1),
        batch_delay: tuple[float, float] | None = None,
        shuffle_batches: bool = True,
        stream_interval: float = 0.0,
        check_outputs: bool = False,
        log: IO[str] | None = None,
        keep_requests: int = 10_000,
        keep_jobs: int = 10_000,
        start: bool = True,
    ) -> None:
        if min(batch_polls) < 0:
            raise ValueError("batch_polls counts must be >= 0")
        self.account_id = account_id
        self.api_token = api_token
        self.catalog = Catalog.from_package(models)
        if schemas is not None:
            self.catalog.add_dir(schemas)
        self.batch_polls = (int(batch_polls[0]), int(batch_polls[1]))
        self.batch_delay = batch_delay
        self.shuffle_batches = shuffle_batches
        self.stream_interval = stream_interval
        self.check_outputs = check_outputs
        self.log = log
        self.keep_requests = keep_requests
        self.keep_jobs = max(1, keep_jobs)
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._jobs: dict[str, _Job] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        if start:
            self.start()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Emulator:
        """Bind and serve in a background thread (done by the constructor unless ``start=False``)."""
        if self._server is not None:
            return self
        server = _Server((self._host, self._port), _Handler)
        server.emulator = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="workers-ai-emulator", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and drop open connections."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def banner(self, out: IO[str] | None = None) -> None:
        """Print where the emulator listens and the credentials to use (for the command line)."""
        lines = [
            f"Workers AI emulator listening on {self.url}",
            f"  base URL:   {self.base_url}",
            f"  account id: {self.account_id}",
            f"  API token:  {self.api_token}",
            f"  models:     {len(self.models())}",
            "Point WorkersAI() at it from a shell with:",
            *(f"  export {key}={value}" for key, value in self.env().items()),
            "Press Ctrl-C to stop.",
        ]
        dest: IO[str] = sys.stdout if out is None else out
        dest.write("\n".join(lines) + "\n")
        dest.flush()

    def serve_forever(self) -> None:
        """Block until Ctrl-C (for the command line)."""
        try:
            while self._server is not None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host = self._host if ":" not in self._host else f"[{self._host}]"
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What ``WorkersAI(base_url=...)`` takes: ``url + "/client/v4"``."""
        return self.url + "/client/v4"

    @property
    def gateway_url(self) -> str:
        """What ``Gateway(base_url=...)`` takes: AI Gateway routes (``/v1/{account}/{gateway}/workers-ai/{model}``)."""
        return self.url + "/v1"

    def env(self) -> dict[str, str]:
        """Environment variables that point ``WorkersAI()`` at this emulator."""
        return {
            "CLOUDFLARE_ACCOUNT_ID": self.account_id,
            "CLOUDFLARE_API_TOKEN": self.api_token,
            "CLOUDFLARE_BASE_URL": self.base_url,
        }

    def client(self, **options: Any) -> WorkersAI:
        """A ``WorkersAI`` client configured for this emulator (options go to its constructor)."""
        from .._client import WorkersAI

        options.setdefault("base_url", self.base_url)
        return WorkersAI(account_id=self.account_id, api_token=self.api_token, **options)

    # ------------------------------------------------------------------ test helpers

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, model_id: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.model == model_id]

    def inject(
        self,
        fault: str,
        *,
        times: int | None = 1,
        model: str | None = None,
        match: Callable[[RecordedRequest], bool] | None = None,
        status: int | None = None,
        code: int | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        delay: float | None = None,
        item: int = 0,
    ) -> Fault:
        """Make the next ``times`` matching requests fail with ``fault`` (see ``FAULTS`` for names).

        ``model`` limits it to run requests for that model, ``match`` to requests a predicate accepts.
        Stream faults wait for a streamed reply, batch faults for a batch submission.
        """
        f = Fault(
            fault,
            times=times,
            model=model,
            match=match,
            status=status,
            code=code,
            message=message,
            retry_after=retry_after,
            delay=delay,
            item=item,
        )
        with self._lock:
            self._faults.append(f)
        return f

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def reset(self) -> None:
        """Forget requests, faults and batch jobs."""
        with self._lock:
            self._requests.clear()
            self._faults.clear()
            self._jobs.clear()

    def add_model(self, model_id: str, schema: Mapping[str, Any]) -> None:
        """Serve another model from a catalog-form document (or a bare ``{input, output}``)."""
        self.catalog.add(model_id, schema)

    def models(self) -> list[str]:
        return self.catalog.ids()

    def example_input(self, model_id: str, variant: str | None = None, *, seed: str = "example") -> Any:
        """A valid (synthesized) input for ``model_id``; ``variant`` picks a branch by title or label."""
        spec = self._spec(model_id)
        variants = [(label, s) for label, s in input_variants(spec.inputs) if label != "binary"]
        if variant is not None:
            variants = [(label, s) for label, s in variants if label.lower() == variant.lower()]
            if not variants:
                labels = ", ".join(label for label, _ in input_variants(spec.inputs))
                raise ValueError(f"{model_id} has no input variant {variant!r} (variants: {labels})")
        if not variants:
            raise ValueError(f"{model_id} takes only a binary body")
        return spec.inputs.generate(variants[0][1], seed=seed, skip={"stream"})

    def _track(self, conn: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _spec(self, model_id: str) -> ModelSpec:
        spec = self.catalog.get(model_id)
        if spec is None:
            raise KeyError(f"the emulator does not serve {model_id!r}")
        return spec

    # ------------------------------------------------------------------ the API

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request (``headers`` with lower-case names)."""
        path, _, query = target.partition("?")
        rec = RecordedRequest(method.upper(), path, query, dict(headers), body)
        with self._lock:
            self._requests.append(rec)
            if len(self._requests) > self.keep_requests:
                del self._requests[: len(self._requests) - self.keep_requests]
        ray = secrets.token_hex(8) + "-EMU"
        try:
            reply = self._handle(rec, ray)
        except _APIError as exc:
            reply = self._error(exc.status, exc.code, exc.message)
        except Exception as exc:  # an emulator bug: say so instead of hanging the client
            reply = self._error(500, 3043, f"emulator error: {type(exc).__name__}: {exc}")
        reply.headers.append(("cf-ray", ray))
        reply.headers.append(("server", "workers-ai-emulator"))
        rec.status = reply.status
        if self.log is not None:
            print(
                f"{rec.method} {rec.target} -> {reply.status}" + (f" [{rec.fault}]" if rec.fault else ""), file=self.log
            )
        return reply

    def _error(self, status: int, code: int, message: str, extra: Iterable[tuple[str, str]] = ()) -> Reply:
        body = _envelope(None, success=False, errors=[{"code": code, "message": message}])
        return Reply(status, [("content-type", _JSON), *extra], body)

    def _json(self, result: Any, status: int = 200, extra: Iterable[tuple[str, str]] = ()) -> Reply:
        return Reply(status, [("content-type", _JSON), *extra], _envelope(result))

    def _route(self, path: str) -> tuple[str, str, str | None, bool]:
        """(kind, account id, model id, via gateway); raises 7000 for anything else."""
        segments = [unquote(s) for s in path.split("/")]
        if any("/" in s for s in segments):  # %2F inside a segment: the model id was percent-encoded
            raise _APIError(400, 7000, "No route for that URI")
        parts = segments[1:]
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) >= 5 and parts[:3] == ["client", "v4", "accounts"]:
            account, rest = parts[3], parts[4:]
            if len(rest) >= 3 and rest[:2] == ["ai", "run"]:
                return "run", account, "/".join(rest[2:]), False
            simple: dict[tuple[str, ...], str] = {
                ("ai", "models", "search"): "search",
                ("ai", "models", "schema"): "schema",
                ("ai", "tasks", "search"): "tasks",
                ("ai", "authors", "search"): "authors",
            }
            kind = simple.get(tuple(rest))
            if kind is not None:
                return kind, account, None, False
        if len(parts) >= 5 and parts[0] == "v1" and parts[3] == "workers-ai":
            rest = parts[4:]
            if rest[0] == "run" and len(rest) > 1:
                rest = rest[1:]
            return "run", parts[1], "/".join(rest), True
        raise _APIError(400, 7000, "No route for that URI")

    def _take_fault(self, rec: RecordedRequest, kind: FaultKind, header: Fault | None) -> Fault | None:
        if header is not None and header.kind == kind and header.active:
            header.hits += 1
            rec.fault = header.name
            return header
        with self._lock:
            candidates = list(self._faults)
        # A fault's `match` predicate is the caller's code and may well call back into the emulator (for
        # example `emu.requests_for(...)`), so it runs without the lock; the claim is checked again under it.
        for f in candidates:
            if not f.applies(rec, kind):
                continue
            with self._lock:
                if f.active and any(g is f for g in self._faults):
                    f.hits += 1
                    rec.fault = f.name
                    return f
        return None

    def _handle(self, rec: RecordedRequest, ray: str) -> Reply:
        kind, account, model_id, gateway = self._route(rec.path)
        rec.model = model_id
        auth = rec.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.api_token.encode()):
            raise _APIError(401, 10000, "Authentication error")
        if account != self.account_id:
            raise _APIError(404, 7003, f"Could not route to {rec.path}, perhaps your object identifier is invalid?")
        allowed = "POST" if kind == "run" else "GET"
        if rec.method != allowed:
            raise _APIError(405, 7001, f"{rec.method} not supported for requested URI.")
        header_fault: Fault | None = None
        raw_fault = rec.headers.get("x-emulator-fault")
        if raw_fault:
            try:
                header_fault = parse_fault_header(raw_fault)
            except ValueError as exc:
                raise _APIError(400, 1000, f"emulator: {exc}") from None
        spec: ModelSpec | None = None
        if kind == "run":
            assert model_id is not None
            spec = self.catalog.get(model_id)
            if spec is None:
                raise _APIError(400, 5007, f"No such model {model_id} or task")
        fault = self._take_fault(rec, "request", header_fault)
        if fault is not None:
            early = self._early_fault(fault, ray)
            if early is not None:
                return early
        if kind == "search":
            reply = self._search(rec)
        elif kind == "schema":
            reply = self._schema(rec)
        elif kind in ("tasks", "authors"):
            reply = self._listing(kind)
        else:
            assert spec is not None
            reply = self._run(rec, spec, header_fault)
        if gateway:
            reply.headers += [("cf-aig-cache-status", "MISS"), ("cf-aig-log-id", stable_id(ray))]
        if fault is not None:
            self._late_fault(fault, reply)
        return reply

    def _early_fault(self, fault: Fault, ray: str) -> Reply | None:
        """Faults that replace the reply; None for those that change how the real reply is sent."""
        extra: list[tuple[str, str]] = []
        if fault.retry_after is not None:
            extra.append(("retry-after", f"{fault.retry_after:g}"))
        if fault.name == "html_502":
            body = _HTML_502.format(ray=ray).encode()
            return Reply(fault.status or 502, [("content-type", "text/html; charset=UTF-8"), *extra], body)
        if fault.name == "success_false":
            errors = [{"code": fault.code, "message": fault.message or ""}]
            return Reply(
                fault.status or 200, [("content-type", _JSON), *extra], _envelope(None, success=False, errors=errors)
            )
        if fault.status is not None and fault.code is not None:
            return self._error(fault.status, fault.code, fault.message or "", extra)
        return None

    @staticmethod
    def _late_fault(fault: Fault, reply: Reply) -> None:
        if fault.name == "slow":
            reply.delay = fault.delay or 0.0
        elif fault.name in ("reset", "truncated"):
            reply.cut_mode = "reset" if fault.name == "reset" else "close"
            reply.cut = max(1, len(reply.chunks) // 2) if reply.chunks is not None else len(reply.body) // 2
        elif fault.name == "truncated_json" and reply.chunks is None:
            reply.body = reply.body[: len(reply.body) // 2]

    # ------------------------------------------------------------------ discovery

    def _search(self, rec: RecordedRequest) -> Reply:
        params = rec.params

        def number(name: str, default: int) -> int:
            raw = params.get(name, "")
            if raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                raise _APIError(400, 5006, f"AiError: Bad input: query parameter {name} must be an integer") from None
            if value < 1:
                raise _APIError(400, 5006, f"AiError: Bad input: query parameter {name} must be >= 1")
            return value

        page, per_page = number("page", 1), number("per_page", 50)
        search = params.get("search", "").lower()
        task = params.get("task", "").lower()
        author = params.get("author", "").lower()
        found: list[dict[str, Any]] = []
        for model_id in self.catalog.ids():
            spec = self.catalog.get(model_id)
            if spec is None:
                continue
            obj = model_object(spec)
            task_obj = cast("dict[str, Any]", obj["task"])
            if search and search not in model_id.lower() and search not in str(obj["description"]).lower():
                continue
            if task and task not in (str(task_obj["name"]).lower(), str(task_obj["id"]).lower()):
                continue
            parts = model_id.split("/")
            if author and (len(parts) < 2 or parts[1].lower() != author):
                continue
            found.append(obj)
        chunk = found[(page - 1) * per_page : page * per_page]
        info = {"count": len(chunk), "page": page, "per_page": per_page, "total_count": len(found)}
        body = msgspec.json.encode(
            {"result": chunk, "result_info": info, "success": True, "errors": [], "messages": []}
        )
        return Reply(200, [("content-type", _JSON)], body)

    def _schema(self, rec: RecordedRequest) -> Reply:
        model_id = rec.params.get("model", "")
        if not model_id:
            raise _APIError(400, 5006, "AiError: Bad input: the model query parameter is required")
        spec = self.catalog.get(model_id)
        if spec is None:
            raise _APIError(400, 5007, f"No such model {model_id} or task")
        return self._json({"input": spec.input_schema, "output": spec.output_schema})

    def _listing(self, kind: str) -> Reply:
        seen: dict[str, dict[str, Any]] = {}
        for model_id in self.catalog.ids():
            spec = self.catalog.get(model_id)
            if spec is None:
                continue
            if kind == "tasks":
                t = cast("dict[str, Any]", model_object(spec)["task"])
                seen.setdefault(str(t["name"]), t)
            else:
                parts = model_id.split("/")
                name = parts[1] if len(parts) > 1 else model_id
                seen.setdefault(name, {"id": stable_id("author:" + name), "name": name, "description": ""})
        return self._json([seen[k] for k in sorted(seen)])

    # ------------------------------------------------------------------ running models

    def _run(self, rec: RecordedRequest, spec: ModelSpec, header_fault: Fault | None) -> Reply:
        queue = rec.params.get("queueRequest", "").lower() in ("true", "1", "yes")
        content_type = rec.headers.get("content-type", "").split(";")[0].strip().lower()
        binary_type = content_type == "application/octet-stream" or content_type.startswith(
            ("image/", "audio/", "video/")
        )
        payload: Any = {}
        raw: bytes | None = None
        if rec.body.strip() and not binary_type:
            try:
                payload = msgspec.json.decode(rec.body)
            except msgspec.DecodeError:
                binary_type = True
        if binary_type:
            if not spec.accepts_binary:
                raise _APIError(
                    400, 5006, f"AiError: Bad input: /: the body is not JSON, and {spec.model_id} takes no binary input"
                )
            raw = rec.body
        data = as_object(payload)
        if raw is None and data is not None:
            if "request_id" in data and "requests" not in data and (queue or set(data) == {"request_id"}):
                return self._poll(spec, data)
            if queue and "requests" in data:
                return self._submit(rec, spec, data, header_fault)
        if raw is None:
            problem = spec.inputs.validator.first_error(payload)
            if problem is not None:
                raise _APIError(400, 5006, f"AiError: Bad input: {problem}")
        result = run_model(spec, payload, raw=raw, check=self.check_outputs)
        if result.kind == "stream":
            fault = self._take_fault(rec, "stream", header_fault)
            return self._stream(result, fault)
        if result.kind == "binary":
            return Reply(200, [("content-type", result.content_type)], result.data)
        return self._json(result.value)

    def _stream(self, result: Result, fault: Fault | None) -> Reply:
        events = [msgspec.json.encode(e) for e in result.events]
        if fault is not None and fault.name == "stream_error":
            keep = max(1, len(events) // 2)
            error = {"errors": [{"code": fault.code, "message": fault.message or ""}]}
            events = [*events[:keep], msgspec.json.encode(error)]
        chunks = [b"data: " + e + b"\n\n" for e in events]
        if fault is None or fault.name not in ("stream_error", "stream_no_done"):
            chunks[-1] += b"data: [DONE]\n\n"
        reply = Reply(
            200,
            [("content-type", _SSE), ("cache-control", "no-cache")],
            chunks=chunks,
            chunk_interval=self.stream_interval,
        )
        if fault is not None and fault.name == "stream_error":
            reply.close = True
        return reply

    # ------------------------------------------------------------------ async batches

    def _submit(self, rec: RecordedRequest, spec: ModelSpec, data: dict[str, Any], header_fault: Fault | None) -> Reply:
        requests = as_list(data.get("requests"))
        if not requests:
            raise _APIError(400, 5006, "AiError: Bad input: /requests: a batch needs a non-empty list of requests")
        if not any(label != "binary" and _requires_requests(s) for label, s in input_variants(spec.inputs)):
            raise _APIError(400, 5006, f"AiError: Bad input: /requests: {spec.model_id} does not take async batches")
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
        job = _Job(str(uuid.uuid4()), spec.model_id, items, refs, time.monotonic())
        fault = self._take_fault(rec, "batch", header_fault)
        if fault is not None:
            if fault.name == "batch_failed":
                job.failed = fault.message or "the batch failed"
            else:
                job.fail_items[fault.item] = (fault.code or 3040, fault.message or "")
        with self._lock:
            self._jobs[job.request_id] = job
            self._expire_jobs()
        return self._json({"status": "queued", "request_id": job.request_id, "model": spec.model_id})

    def _expire_jobs(self) -> None:
        """Keep at most ``keep_jobs`` jobs: drop the oldest finished ones, then the oldest of all (lock held)."""
        excess = len(self._jobs) - self.keep_jobs
        if excess <= 0:
            return
        finished = [rid for rid, job in self._jobs.items() if job.finished][:excess]
        for rid in finished:
            del self._jobs[rid]
        for rid in list(self._jobs)[: excess - len(finished)]:
            del self._jobs[rid]

    def _poll(self, spec: ModelSpec, data: dict[str, Any]) -> Reply:
        request_id = data.get("request_id")
        with self._lock:
            job = self._jobs.get(request_id) if isinstance(request_id, str) else None
            if job is not None:
                job.polls += 1
        if job is None:
            raise _APIError(
                400, 5006, f"AiError: Bad input: no async batch with request_id {request_id!r} (unknown or expired)"
            )
        state = self._state(job)
        if state != "done":
            return self._json({"status": state, "request_id": job.request_id, "model": job.model_id})
        job.finished = True
        if job.failed is not None:
            return self._json(
                {"status": "failed", "request_id": job.request_id, "model": job.model_id, "error": job.failed}
            )
        if job.done is None:
            job.done = self._results(job)
        return self._json(job.done)

    def _state(self, job: _Job) -> str:
        if self.batch_delay is not None:
            elapsed = time.monotonic() - job.created
            queued, running = self.batch_delay
            if elapsed < queued:
                return "queued"
            return "running" if elapsed < queued + running else "done"
        queued_polls, running_polls = self.batch_polls
        if job.polls <= queued_polls:
            return "queued"
        return "running" if job.polls <= queued_polls + running_polls else "done"

    def _results(self, job: _Job) -> dict[str, Any]:
        spec = self.catalog.get(job.model_id)
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
                result = run_model(spec, item, allow_stream=False, check=self.check_outputs)
                value: Any = result.value
                if result.kind == "binary":
                    value = base64.b64encode(result.data).decode("ascii")
                entry.update(result=value, success=True)
                for key in totals:
                    totals[key] += int((result.usage or {}).get(key, 0))
            responses.append(entry)
        if self.shuffle_batches:
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


# ---------------------------------------------------------------------- HTTP plumbing


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 64
    emulator: Emulator


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "workers-ai-emulator"
    timeout = 300  # an idle keep-alive connection is dropped after this many seconds

    @property
    def emulator(self) -> Emulator:
        return cast(_Server, self.server).emulator

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.emulator._track(self.connection, True)  # pyright: ignore[reportPrivateUsage]

    def finish(self) -> None:
        self.emulator._track(self.connection, False)  # pyright: ignore[reportPrivateUsage]
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests are logged by Emulator.handle when asked to

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.emulator.handle(self.command, self.path, headers, body)
        self._send(reply)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def _send(self, reply: Reply) -> None:
        if reply.delay > 0:
            time.sleep(reply.delay)
        reason = self.responses.get(reply.status, ("",))[0]
        lines = [f"HTTP/1.1 {reply.status} {reason}"]
        lines += [f"{k}: {v}" for k, v in reply.headers]
        if reply.chunks is not None:
            lines.append("transfer-encoding: chunked")
        else:
            lines.append(f"content-length: {len(reply.body)}")
        close = reply.close or reply.cut_mode is not None or self.close_connection
        if close:
            lines.append("connection: close")
            self.close_connection = True
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            if reply.chunks is None:
                body = reply.body if reply.cut is None else reply.body[: reply.cut]
                self.wfile.write(head + body)  # one write: no Nagle / delayed-ACK stall
            else:
                self._send_chunks(head, reply)
            if reply.cut_mode == "reset":
                self._reset()
        except OSError:
            self.close_connection = True

    def _send_chunks(self, head: bytes, reply: Reply) -> None:
        assert reply.chunks is not None
        chunks = reply.chunks if reply.cut is None else reply.chunks[: reply.cut]
        pending = head
        for i, chunk in enumerate(chunks):
            frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
            last = i == len(chunks) - 1
            if last and reply.cut is None:
                frame += b"0\r\n\r\n"
            self.wfile.write(pending + frame)
            pending = b""
            if not last and reply.chunk_interval > 0:
                time.sleep(reply.chunk_interval)
        if pending:
            self.wfile.write(pending + (b"0\r\n\r\n" if reply.cut is None else b""))

    def _reset(self) -> None:
        """Close with an RST instead of a FIN (SO_LINGER 0)."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            return
        # The socket only really closes once its file objects are gone too; the handler still flushes
        # and closes "its" files afterwards, so hand it harmless ones.
        self.rfile.close()
        self.wfile.close()
        self.connection.close()
        self.rfile = io.BytesIO()
        self.wfile = io.BytesIO()
