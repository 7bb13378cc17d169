"""The hand-written half of the client: configuration, the request loop with retries, and errors.

The generated ``_client.WorkersAI`` subclasses :class:`BaseClient` only to add typed overloads.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlencode

import msgspec
import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from . import _registry
from ._envelope import checked
from ._gateway import Gateway
from ._json import as_list, as_object
from ._retry import MAX_RETRY_AFTER, RETRYABLE_STATUS, SAFE_FOR_QUEUE, backoff, retry_after
from ._transport import Transport, Urllib3Transport
from .errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ConfigurationError,
    ErrorDetail,
    ResponseDecodeError,
    details_from,
    error_for,
    format_details,
)

if TYPE_CHECKING:
    from ._batch import BatchJob
    from ._handle import ModelHandle

__all__ = ["DEFAULT_BASE_URL", "BaseClient", "ResponseInfo"]

DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4"
_USER_AGENT = "workers-ai-python/0.1"
_MODEL_ID = re.compile(r"^[A-Za-z0-9@][A-Za-z0-9@._+-]*(/[A-Za-z0-9@._+-]+)*$")
_Client = TypeVar("_Client", bound="BaseClient")
QUOTA_CODES = frozenset({3036, 4006})
_log = logging.getLogger("workers_ai")


class ResponseInfo(msgspec.Struct, frozen=True):
    """What the last reply said besides its result: status, ``messages`` and the ``cf-ray`` id."""

    status: int
    messages: list[Any]
    cf_ray: str | None
    headers: dict[str, str]


class BaseClient:
    """Configuration and transport shared by every call."""

    def __init__(
        self,
        account_id: str | None = None,
        api_token: str | None = None,
        *,
        base_url: str | None = None,
        gateway: str | Gateway | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Mapping[str, str] | None = None,
        transport: Transport | None = None,
    ) -> None:
        account_id = account_id or os.environ.get("CLOUDFLARE_ACCOUNT_ID")
        api_token = api_token or os.environ.get("CLOUDFLARE_API_TOKEN")
        if not account_id:
            raise ConfigurationError("no account id: pass account_id= or set CLOUDFLARE_ACCOUNT_ID")
        if not api_token:
            raise ConfigurationError("no API token: pass api_token= or set CLOUDFLARE_API_TOKEN")
        if timeout is None or timeout <= 0:  # pyright: ignore[reportUnnecessaryComparison]
            raise ConfigurationError("timeout must be a positive number of seconds; there is no 'no timeout'")
        if max_retries < 0:
            raise ConfigurationError("max_retries must be >= 0")
        if api_token != api_token.strip() or any(c in api_token for c in "\r\n\0"):
            # Never echo it: a token pasted from a file often carries a newline.
            raise ConfigurationError("the API token has surrounding whitespace or a line break; strip it first")
        self.account_id = account_id
        self.__token = api_token
        self.base_url = (base_url or os.environ.get("CLOUDFLARE_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.gateway = Gateway.parse(gateway) if gateway is not None else None
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        # Built once: the per-call path only copies it.
        self._base_headers = {"Authorization": f"Bearer {self.__token}", "User-Agent": _USER_AGENT, "Accept": "*/*"}
        if self.gateway is not None:
            self._base_headers.update(self.gateway.headers())
        self._base_headers.update(headers or {})
        self._transport: Transport = transport or Urllib3Transport()
        self._handles: dict[str, ModelHandle[Any, Any]] = {}
        self._local = threading.local()
        self._sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:
        via = f", gateway={self.gateway.id!r}" if self.gateway else ""
        return f"{type(self).__name__}(account_id={self.account_id!r}, base_url={self.base_url!r}{via})"

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close pooled connections."""
        self._transport.close()

    @property
    def last_response(self) -> ResponseInfo | None:
        """Status, ``messages`` and ``cf-ray`` of the last reply this thread received."""
        last: ResponseInfo | tuple[int, list[Any], Mapping[str, str]] | None = getattr(self._local, "last", None)
        if last is None or isinstance(last, ResponseInfo):
            return last
        status, messages, headers = last
        info = ResponseInfo(
            status=status,
            messages=messages,
            cf_ray=headers.get("cf-ray"),
            headers={k.lower(): v for k, v in headers.items()},
        )
        self._local.last = info
        return info

    # ------------------------------------------------------------------ models

    def models(self) -> list[str]:
        """Ids of the models this package was generated for."""
        return sorted(_registry.MODELS)

    def _model(self, model_id: str) -> ModelHandle[Any, Any]:
        handle = self._handles.get(model_id)
        if handle is None:
            from ._handle import GenericHandle

            entry = _registry.MODELS.get(model_id)
            if entry is None:
                handle = GenericHandle(self, model_id)
            else:
                module = importlib.import_module(f"{__package__}.{entry[0]}")
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
    ) -> Any:
        handle = self._model(model_id)
        if stream and queue_request:
            raise ConfigurationError("stream and queue_request cannot be combined")
        if stream:
            return handle.stream(payload, headers=headers)
        if queue_request:
            return handle.submit_batch(payload, headers=headers)
        return handle.run(payload, headers=headers)

    def batch_job(self, model_id: str, request_id: str) -> BatchJob[Any]:
        """Rebuild a batch job from its ``request_id`` (for example one stored by another process)."""
        return self._model(model_id).batch_job(request_id)

    # ------------------------------------------------------------------ HTTP

    def run_url(self, model_id: str) -> str:
        """The run URL, with the model id's slashes kept literal (``%2F`` is answered with 400/7000)."""
        if not _MODEL_ID.match(model_id):
            raise ConfigurationError(f"model id {model_id!r} is not a valid Workers AI model name")
        if self.gateway is not None:
            return self.gateway.url(quote(self.account_id, safe=""), model_id)
        return f"{self.base_url}/accounts/{quote(self.account_id, safe='')}/ai/run/{quote(model_id, safe='/@')}"

    def api_url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        url = f"{self.base_url}/accounts/{quote(self.account_id, safe='')}/{path.lstrip('/')}"
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        return url

    def _headers(self, content_type: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = self._base_headers.copy()
        if content_type:
            headers["Content-Type"] = content_type
        if extra:
            headers.update(extra)
        return headers

    def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        *,
        content_type: str | None = "application/json",
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
        queued: bool = False,
        model_id: str | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send a request, retrying what is safe to retry; return a 2xx response or raise.

        Retried: connection failures, 408/409/429/5xx, after ``Retry-After`` (capped at 60 s; a longer
        wait is not retried) or exponential backoff with jitter. A batch submission (``queued``) is only
        re-sent when the server surely did not take it: the connection failed before sending, or the
        reply was 429 or 503. After a read timeout or another 5xx it may have been queued, so the error
        is raised instead of risking a duplicate batch.
        """
        all_headers = self._headers(content_type if body is not None else None, headers)
        attempt = 0
        while True:
            try:
                resp = self._transport.send(method, url, all_headers, body, timeout=self.timeout, stream=stream)
            except (ConnectTimeoutError, NewConnectionError) as exc:
                # Nothing reached the server: always safe to try again, even for a batch submission.
                if attempt < self.max_retries:
                    attempt = self._pause(attempt, backoff(attempt), method, url, _reason(exc))
                    continue
                timed_out = type(exc) is ConnectTimeoutError
                kind: type[APIConnectionError] = APITimeoutError if timed_out else APIConnectionError
                raise kind(f"could not connect to {_host(url)}: {_reason(exc)}") from None
            except SSLError as exc:
                raise APIConnectionError(f"{method} {_host(url)}: TLS failed: {_reason(exc)}") from None
            except (ReadTimeoutError, ProtocolError, HTTPError, OSError) as exc:
                timed_out = isinstance(exc, ReadTimeoutError) or "timed out" in str(exc).lower()
                if attempt < self.max_retries and not queued:
                    attempt = self._pause(attempt, backoff(attempt), method, url, _reason(exc))
                    continue
                what = f"no reply within {self.timeout:g}s" if timed_out else f"connection failed: {_reason(exc)}"
                note = "; the batch may have been queued, so it was not re-sent" if queued else ""
                kind = APITimeoutError if timed_out else APIConnectionError
                raise kind(f"{method} {_host(url)}: {what}{note}") from None
            except ValueError:
                # http.client rejects header values with control characters and quotes the value: keep it out.
                raise ConfigurationError("a request header value is not valid HTTP (check extra headers)") from None
            if resp.status < 300:
                return resp
            retryable = resp.status in RETRYABLE_STATUS and (not queued or resp.status in SAFE_FOR_QUEUE)
            data = _drain(resp)
            if resp.status == 429 and retryable and _is_quota(data):
                retryable = False  # the daily allocation resets at midnight UTC: retrying cannot help
            wait = retry_after(resp.headers)
            if retryable and attempt < self.max_retries and (wait is None or wait <= MAX_RETRY_AFTER):
                delay = backoff(attempt) if wait is None else wait
                attempt = self._pause(attempt, delay, method, url, f"HTTP {resp.status}")
                continue
            raise self.error_from(resp.status, resp.headers, data, model_id=model_id, retry_after=wait)

    def _pause(self, attempt: int, delay: float, method: str, url: str, why: str) -> int:
        """Log and wait before the next attempt; returns the next attempt number. (Logs name the URL
        and the reason only: never headers, so never the token.)"""
        _log.info("%s %s failed (%s); retry %d of %d in %.2fs", method, url, why, attempt + 1, self.max_retries, delay)
        self._sleep(delay)
        return attempt + 1

    def error_from(
        self,
        status: int,
        headers: Mapping[str, str],
        data: bytes,
        *,
        model_id: str | None,
        retry_after: float | None = None,
    ) -> APIError:
        """The error for a failed reply, built from whatever the body holds (envelope, HTML, nothing)."""
        cf_ray = headers.get("cf-ray")
        errors: list[ErrorDetail] = []
        messages: list[Any] = []
        content_type = headers.get("content-type", "")
        parsed: dict[str, Any] | None = None
        if data:
            try:
                parsed = as_object(msgspec.json.decode(data))
            except msgspec.DecodeError:
                parsed = None
        if parsed is not None:
            errors = details_from(parsed.get("errors"))
            messages = as_list(parsed.get("messages")) or []
            message = format_details(errors)
            if not message and parsed.get("error") is not None:
                errors = details_from(parsed.get("error"))
                message = format_details(errors)
            if not message:
                message = f"HTTP {status} reply with no error details"
        elif data:
            snippet = _text_snippet(data, content_type)
            message = f"non-JSON {content_type or 'reply'}: {snippet}" if snippet else f"non-JSON {content_type}"
        else:
            message = f"HTTP {status} with an empty body"
        where = f"{model_id}: " if model_id else ""
        cls = error_for(status, [e.code for e in errors if e.code is not None])
        if parsed is None and 200 <= status < 300:
            cls = ResponseDecodeError
        return cls(
            where + message,
            status=status,
            errors=errors,
            messages=messages,
            cf_ray=cf_ray,
            model_id=model_id,
            body=data,
            retry_after=retry_after,
        )

    def remember(self, resp: urllib3.BaseHTTPResponse, messages: list[Any]) -> None:
        # Kept raw: ``last_response`` builds the ResponseInfo only when someone asks (it is on every call's path).
        self._local.last = (resp.status, messages, resp.headers)

    def get_json(self, path: str, query: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET an account API path; the checked envelope (``result``, ``result_info``, ...)."""
        resp = self.request("GET", self.api_url(path, query), content_type=None)
        return checked(self, resp, resp.data, model_id=None)


def _drain(resp: urllib3.BaseHTTPResponse) -> bytes:
    try:
        data = resp.data
    except (ProtocolError, HTTPError, OSError):
        data = b""
    resp.release_conn()
    return data


def _is_quota(data: bytes) -> bool:
    try:
        env = as_object(msgspec.json.decode(data))
    except msgspec.DecodeError:
        return False
    return env is not None and any(d.code in QUOTA_CODES for d in details_from(env.get("errors")))


def _reason(exc: BaseException) -> str:
    """urllib3's reason for a failure (it names host and cause, never request headers)."""
    reason = getattr(exc, "reason", None) or exc
    text = " ".join(str(reason).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _text_snippet(data: bytes, content_type: str) -> str:
    text = data[:2048].decode("utf-8", "replace")
    if "html" in content_type or text.lstrip().startswith("<"):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        text = title.group(1) if title else re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:200]


def _host(url: str) -> str:
    return url.split("/")[2] if "://" in url else url
