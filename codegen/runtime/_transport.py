"""The seam between the client and the network: one method, ``send``.

The default transport is a urllib3 pool with its own retries off (the client retries, so it can honour
``Retry-After`` and the Workers AI error codes). Tests and users can pass any object with ``send``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import urllib3

__all__ = ["Transport", "Urllib3Transport"]


class Transport(Protocol):
    def send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        timeout: float,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """Send one request; with ``stream`` the body is left unread for the caller to iterate."""
        ...

    def close(self) -> None: ...


class Urllib3Transport:
    """Keep-alive connection pools over urllib3; redirects and urllib3's own retries are off."""

    def __init__(self, *, maxsize: int = 10, connect_timeout: float = 10.0) -> None:
        self._pool = urllib3.PoolManager(maxsize=maxsize, block=False, retries=False)
        self._connect_timeout = connect_timeout
        self._timeouts: dict[float, urllib3.Timeout] = {}

    def send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        timeout: float,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        limits = self._timeouts.get(timeout)
        if limits is None:
            limits = self._timeouts[timeout] = urllib3.Timeout(
                connect=min(self._connect_timeout, timeout), read=timeout
            )
        # urlopen rather than request(): the body is already bytes and the headers a fresh dict, so
        # request()'s body encoding and header copy would only cost time on every call.
        return self._pool.urlopen(
            method,
            url,
            body=body,
            headers=headers,
            timeout=limits,
            preload_content=not stream,
            redirect=False,
            retries=False,
        )

    def close(self) -> None:
        self._pool.clear()
