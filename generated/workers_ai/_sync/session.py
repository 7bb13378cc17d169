"""The connection to the API: configuration, URLs, the request loop with retries, ``last_response``.

Handles, batches and streams send through a :class:`Session`; the public client (``_core.BaseClient``)
is a session that also hands out model handles. The loop's decisions (retry or not, how long to wait)
are the pure functions of :mod:`._retry`; the bytes come from a :class:`~._transport.Transport`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import msgspec

from .._core.accounting import UsageMeter
from .._core.affinity import affinity_header
from .._core.envelope import checked
from .._core.gateway import Gateway
from .._core.pickling import Rebuildable
from .._core.ratelimit import Pace, RateBudget, RateLimit, throttled
from .._core.retry import (
    MAX_RETRY_AFTER,
    call_bound,
    check_seconds,
    delay_after_failure,
    delay_after_status,
    retry_after,
)
from .._core.urls import check_account_id, check_base_url, model_path, segment
from ..errors import (
    APIConnectionError,
    APITimeoutError,
    ConfigurationError,
    RateLimitError,
    error_from,
    is_quota,
)
from .transport import DEFAULT_MAX_CONNECTIONS, Response, Transport, Urllib3Transport

__all__ = [
    "DEFAULT_BASE_URL",
    "SessionConfig",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "Reply",
    "ResponseInfo",
    "Session",
]

DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4"
# The largest real replies are embedding batches: 10,000 x 1024 floats as JSON come to about 215 MB.
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
_USER_AGENT = "workers-ai-python/0.1"
_log = logging.getLogger("workers_ai")


class ResponseInfo(msgspec.Struct, frozen=True):
    """What the last reply said besides its result: status, ``messages`` and the ``cf-ray`` id."""

    status: int
    messages: list[Any]
    cf_ray: str | None
    headers: dict[str, str]


class Reply:
    """A whole reply: status, headers and the body bytes (read within the size limit)."""

    __slots__ = ("data", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data


class SessionConfig(Rebuildable):
    """Configuration shared by every call, whichever transport sends it (sync :class:`Session` or
    ``AsyncSession``): options, URLs, headers, ``last_response``, the rate budget and the retry helpers.

    Picklable (:mod:`._pickle`): a copy is made with the same arguments, the token included, and opens
    its own connections and rate budget. ``rate_limit`` paces each model's requests (:mod:`._ratelimit`).

    Deadlines: ``timeout`` bounds each attempt as a whole (connecting, sending, the headers and the
    entire body). Retries add at most ``max_retries`` attempts and waits of at most 60 s each, so one
    call lasts no longer than :attr:`call_bound` seconds. Streams use ``timeout`` until the headers,
    then ``stream_idle_timeout`` between events and ``stream_timeout`` (if set) for the whole stream.
    """

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
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        stream_idle_timeout: float = 60.0,
        stream_timeout: float | None = None,
        compress: bool = False,
        session_affinity: str | None = None,
        rate_limit: RateLimit | RateBudget | str = "published",
        strict_inputs: bool = False,
    ) -> None:
        account_id = account_id or os.environ.get("CLOUDFLARE_ACCOUNT_ID")
        api_token = api_token or os.environ.get("CLOUDFLARE_API_TOKEN")
        if not account_id:
            raise ConfigurationError("no account id: pass account_id= or set CLOUDFLARE_ACCOUNT_ID")
        if not api_token:
            raise ConfigurationError("no API token: pass api_token= or set CLOUDFLARE_API_TOKEN")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("max_retries must be an int >= 0")
        for name, value in (
            ("max_connections", max_connections),
            ("max_response_bytes", max_response_bytes),
            ("max_event_bytes", max_event_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigurationError(f"{name} must be an int >= 1")
        if api_token != api_token.strip() or any(c in api_token for c in "\r\n\0"):
            # Never echo it: a token pasted from a file often carries a newline.
            raise ConfigurationError("the API token has surrounding whitespace or a line break; strip it first")
        if not isinstance(strict_inputs, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("strict_inputs must be True or False")
        self.strict_inputs = strict_inputs
        self.account_id = check_account_id(account_id)
        self.__token = api_token
        if base_url is None and os.environ.get("CLOUDFLARE_BASE_URL"):
            self.base_url = check_base_url(os.environ["CLOUDFLARE_BASE_URL"], "CLOUDFLARE_BASE_URL")
        else:
            self.base_url = check_base_url(base_url or DEFAULT_BASE_URL)
        self.gateway = Gateway.parse(gateway) if gateway is not None else None
        if self.gateway is not None and not self.gateway.url_form:
            if self.gateway.account_id not in (None, account_id):
                raise ConfigurationError("a gateway of another account needs Gateway(..., url_form=True)")
            if any(c in self.gateway.id for c in "\r\n\0"):
                raise ConfigurationError(f"gateway id {self.gateway.id!r} has a line break")
        self.timeout = check_seconds(timeout, "timeout")
        self.max_retries = max_retries
        self.max_response_bytes = max_response_bytes
        self.max_event_bytes = max_event_bytes
        self.stream_idle_timeout = check_seconds(stream_idle_timeout, "stream_idle_timeout")
        self.stream_timeout = None if stream_timeout is None else check_seconds(stream_timeout, "stream_timeout")
        # Built once: the per-call path only copies it.
        self._base_headers = {
            "Authorization": f"Bearer {self.__token}",
            "User-Agent": _USER_AGENT,
            "Accept": "*/*",
            "Accept-Encoding": "gzip" if compress else "identity",
        }
        if self.gateway is not None:
            self._base_headers.update(self.gateway.headers())
        self._base_headers.update(headers or {})
        if session_affinity is not None:
            self._base_headers.update(affinity_header(session_affinity))
        self.usage = UsageMeter()
        self._account = segment(account_id)
        self._local: Any = threading.local()  # the async session keeps `last` per task instead (its transport hook)
        self._transport = self._new_transport(transport, max_connections, compress)
        self._sleep: Callable[[float], None] = time.sleep
        if isinstance(rate_limit, RateBudget):
            self.rate_budget = RateBudget(rate_limit.limit, scale=rate_limit.scale, task_of=self._task_of)
        else:
            self.rate_budget = RateBudget(rate_limit, task_of=self._task_of)

    def _task_of(self, model_id: str) -> str | None:
        """The task of ``model_id`` (for the rate budget's defaults); None when unknown."""
        return None

    def _pickle_overrides(self) -> dict[str, Any]:
        # What the constructor resolved from the environment travels too (the worker may not have it).
        return {"account_id": self.account_id, "api_token": self.__token, "base_url": self.base_url}

    @property
    def call_bound(self) -> float:
        """The most seconds one call can take, retries and their waits included."""
        return call_bound(self.timeout, self.max_retries)

    # ------------------------------------------------------------------ last reply

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

    def remember(self, status: int, headers: Mapping[str, str], messages: list[Any]) -> None:
        # Kept raw: ``last_response`` builds the ResponseInfo only when someone asks (it is on every call's path).
        self._local.last = (status, messages, headers)

    # ------------------------------------------------------------------ URLs

    def run_url(self, model_id: str) -> str:
        """The run URL, with the model id checked and its segments encoded (slashes kept literal)."""
        if self.gateway is not None and self.gateway.url_form:
            return self.gateway.url(self.account_id, model_id)
        return f"{self.base_url}/accounts/{self._account}/ai/run/{model_path(model_id)}"

    def api_url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        parts = [segment(p) for p in path.strip("/").split("/")]
        url = f"{self.base_url}/accounts/{self._account}/{'/'.join(parts)}"
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

    def _new_transport(self, transport: Any, max_connections: int, compress: bool) -> Any:
        raise NotImplementedError

    def _budget_wait(self, pace: Pace, deadline: float | None) -> float:
        """Book this attempt's slot in the rate budget; the seconds to wait for it, never past ``deadline``
        (the attempt then times out as any other would). The budget may ask no longer than a server's
        ``Retry-After`` may (``MAX_RETRY_AFTER``): it raises ``RateLimitError`` with the wait it asks for
        instead (see :meth:`Pace.reserve`), so it never holds a call for an hour."""
        wait = pace.reserve(MAX_RETRY_AFTER)
        return wait if deadline is None else max(0.0, min(wait, deadline - time.monotonic()))

    def _retry_slot(self, pace: Pace, deadline: float | None, wait: float) -> tuple[float | None, bool]:
        """The pause before a retry when it must also cover the retry's slot in the rate budget, and
        whether the slot is booked; ``(None, False)`` (give up: the caller raises the error it has) when
        the budget asks for longer than the call may wait."""
        try:
            return max(wait, self._budget_wait(pace, deadline)), True
        except RateLimitError:
            return None, False

    def _time_left(self, deadline: float | None, wait: float) -> bool:
        return deadline is None or time.monotonic() + wait < deadline

    def _failure(self, exc: APIConnectionError, method: str, url: str, queued: bool) -> APIConnectionError:
        note = "; the batch may have been queued, so it was not re-sent" if queued and exc.request_sent else ""
        host = url.split("/")[2] if "://" in url else url
        if isinstance(exc, APITimeoutError) and exc.request_sent:
            return APITimeoutError(f"{method} {host}: no complete reply within {self.timeout:g}s ({exc}){note}")
        return type(exc)(f"{method} {host}: {exc}{note}", request_sent=exc.request_sent, retryable=exc.retryable)

    def _log_retry(self, attempt: int, delay: float, method: str, url: str, why: str) -> None:
        # Logs name the URL and the reason only: never headers, so never the token.
        _log.info("%s %s failed (%s); retry %d of %d in %.2fs", method, url, why, attempt + 1, self.max_retries, delay)


class Session(SessionConfig):
    """Configuration and the blocking transport shared by every call.

    Deadlines: see :class:`SessionConfig`; the transport is urllib3 (:class:`~._transport.Urllib3Transport`).
    """

    _transport: Transport

    def _new_transport(self, transport: Any, max_connections: int, compress: bool) -> Transport:
        return transport or Urllib3Transport(max_connections=max_connections, decompress=compress)

    def close(self) -> None:
        """Close pooled connections."""
        self._transport.close()

    # ------------------------------------------------------------------ the request loop

    def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        *,
        content_type: str | None = "application/json",
        headers: Mapping[str, str] | None = None,
        queued: bool = False,
        model_id: str | None = None,
        deadline: float | None = None,
    ) -> Reply:
        """Send a request, retrying what is safe to retry; return a 2xx reply, its body read, or raise.

        Retried: connection failures, 408/409/429/5xx, after ``Retry-After`` (at most 60 s; a longer
        wait is not retried) or exponential backoff with jitter. A batch submission (``queued``) is only
        re-sent when the server surely did not take it: the connection failed before sending, or the
        reply was 429 or 503. ``deadline`` (``time.monotonic()``) cuts every attempt and wait short.
        """
        resp, data = self._exchange(method, url, body, content_type, headers, queued, model_id, deadline, False)
        return Reply(resp.status, resp.headers, data)

    def open_stream(
        self, url: str, body: bytes, *, headers: Mapping[str, str] | None = None, model_id: str | None = None
    ) -> Response:
        """POST and return the 2xx reply with its body unread (retried like :meth:`request` until then)."""
        return self._exchange("POST", url, body, "application/json", headers, False, model_id, None, True)[0]

    def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        content_type: str | None,
        headers: Mapping[str, str] | None,
        queued: bool,
        model_id: str | None,
        deadline: float | None,
        stream: bool,
    ) -> tuple[Response, bytes]:
        if body is None:
            content_type = None
        pace = self.rate_budget.pace(model_id) if model_id is not None else None
        attempt = 0
        booked = False  # a retry's pause already covered its slot in the rate budget
        while True:
            if pace is not None and not booked:
                ahead = self._budget_wait(pace, deadline)
                if ahead > 0:
                    self._sleep(ahead)
            booked = False
            until = time.monotonic() + self.timeout
            if deadline is not None:
                until = min(until, deadline)
            try:
                # The headers (the token among them) are built per attempt and never bound to a local name
                # here: error reporters that record frame locals would store them.
                resp = self._transport.send(method, url, self._headers(content_type, headers), body, deadline=until)
                if stream and resp.status < 300:
                    return resp, b""
                data = resp.read_all(self.max_response_bytes)
            except APIConnectionError as exc:
                wait = delay_after_failure(
                    attempt, self.max_retries, request_sent=exc.request_sent, retryable=exc.retryable, queued=queued
                )
                if wait is not None and pace is not None:
                    wait, booked = self._retry_slot(pace, deadline, wait)
                if wait is not None and self._time_left(deadline, wait):
                    attempt = self._pause(attempt, wait, method, url, str(exc))
                    continue
                raise self._failure(exc, method, url, queued) from None
            if resp.status < 300:
                if pace is not None:
                    pace.succeeded()
                return resp, data
            server_wait = retry_after(resp.headers)
            quota = resp.status == 429 and is_quota(data)
            if pace is not None and not quota and throttled(resp.status, resp.headers, data):
                pace.slow_down(server_wait)
            wait = delay_after_status(attempt, self.max_retries, resp.status, server_wait, queued=queued, quota=quota)
            if wait is not None and pace is not None:
                # One pause covers both the server's wait and this request's slot (slow_down above
                # already holds the budget until Retry-After has passed).
                wait, booked = self._retry_slot(pace, deadline, wait)
            if wait is not None and self._time_left(deadline, wait):
                attempt = self._pause(attempt, wait, method, url, f"HTTP {resp.status}")
                continue
            raise error_from(resp.status, resp.headers, data, model_id=model_id, retry_after=server_wait)

    def _pause(self, attempt: int, delay: float, method: str, url: str, why: str) -> int:
        """Log and wait before the next attempt; returns the next attempt number. (Logs name the URL
        and the reason only: never headers, so never the token.)"""
        self._log_retry(attempt, delay, method, url, why)
        self._sleep(delay)
        return attempt + 1

    def get_json(self, path: str, query: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET an account API path; the checked envelope (``result``, ``result_info``, ...)."""
        reply = self.request("GET", self.api_url(path, query), content_type=None)
        env, messages = checked(reply.status, reply.headers, reply.data, model_id=None)
        self.remember(reply.status, reply.headers, messages)
        return env
