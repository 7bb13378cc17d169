"""urllib3 connections that keep a call's deadline and write small requests in one go.

:class:`Urllib3Transport <.transport.Urllib3Transport>` sets :data:`CURRENT_DEADLINE` around each request;
the connections and responses here read it: every socket read (headers and body) and write waits at most
until that deadline, the request head goes out with a small body in one write (on a plain socket, one
system call: no poll before it), and interim (1xx) replies are skipped with a bound. The pools in
:data:`POOLS` make these connections; nothing else of urllib3's changes.

Socket timeouts are the connection's, not urllib3's: urllib3 sets the connect timeout before each request
and the read timeout before each reply, two ``settimeout`` system calls per request that each drop the GIL.
Once connected, a plain or TLS socket ignores those calls while a call's deadline is set (see
:class:`_Quiet`); the deadline sets the timeout instead, only when it is more than 10% off the time left,
so a connection's calls with the same ``timeout`` set it about once.
"""

from __future__ import annotations

import http.client
import io
import os
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["CURRENT_DEADLINE", "POOLS", "Deadline", "socks_pools"]


class Deadline:
    """The monotonic time the next socket read must finish by; the reader moves it between reads."""

    __slots__ = ("at",)

    def __init__(self, at: float) -> None:
        self.at = at


class _Current(threading.local):
    """The deadline of the request this thread is sending: set by the transport around ``urlopen``, read
    by the connection as it opens the reply. A blocking send runs on one thread from start to end, so a
    thread-local is all it needs (no ``contextvars`` module to load)."""

    deadline: Deadline | None = None


CURRENT_DEADLINE = _Current()

_SETTIMEOUT = socket.socket.settimeout  # the system call itself (ssl.SSLSocket inherits it)


class _Quiet:
    """A connected socket whose timeout the call's deadline sets, not urllib3's per-request calls.

    ``settimeout`` is ignored while a deadline is set (:data:`CURRENT_DEADLINE`): the connection fits
    the timeout to the time left before each write (:func:`_fit`) and :class:`DeadlineSocket` before each
    read. Without a deadline (a pool used outside the transport) it sets the timeout as usual.
    """

    __slots__ = ()

    def settimeout(self, value: float | None) -> None:
        if CURRENT_DEADLINE.deadline is None:
            me: Any = self  # a socket (this class is only mixed into those)
            _SETTIMEOUT(me, value)


class _QuietSocket(_Quiet, socket.socket):
    __slots__ = ()


class _QuietSSLSocket(_Quiet, ssl.SSLSocket):
    __slots__ = ()


# The socket types a connection makes quiet once connected (same layout, so ``__class__`` can change);
# others (a SOCKS socket, TLS inside a TLS proxy tunnel) keep urllib3's calls.
_QUIET: dict[type[Any], type[Any]] = {socket.socket: _QuietSocket, ssl.SSLSocket: _QuietSSLSocket}
_QUIETED = frozenset(_QUIET.values())
# A socket is a file descriptor ``os.write`` takes on POSIX only (on Windows it is a handle): elsewhere the
# joined request goes out through ``sendall``, as before.
_FD_WRITE_TYPE: type[Any] | None = _QuietSocket if os.name == "posix" else None


def _set_timeout(sock: Any, seconds: float) -> None:
    """Set the socket's timeout (a quiet socket's for real)."""
    if type(sock) in _QUIETED:
        _SETTIMEOUT(sock, seconds)
    else:
        sock.settimeout(seconds)


def _fit(sock: Any, at: float) -> None:
    """Before a write: the socket's timeout is the time left before ``at``, give or take a tenth (as for
    reads: set again only when it is further off), so a blocked write never waits long past the deadline."""
    left = max(0.001, at - time.monotonic())
    current = sock.gettimeout()
    if current is None or not left * 0.9 <= current <= left * 1.1:
        _set_timeout(sock, left)


class DeadlineSocket:
    """The socket as ``http.client`` reads it: no read waits long past the deadline.

    Each read's socket timeout is the time left before the deadline, give or take a tenth: the timeout
    is set again only when it is more than 10% off (``settimeout`` is a system call that drops the GIL,
    which costs dearly with many threads). A read that times out early is simply made again, so a
    read ends at most 10% of the time left after the deadline, and none starts after it.
    """

    __slots__ = ("_deadline", "_set", "_sock")

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self._sock = sock
        self._deadline = deadline
        self._set = sock.gettimeout() or 0.0  # what the connection's last read or write set

    def recv_into(self, buffer: Any, *args: int) -> int:
        # The caller's arguments exactly (an SSLSocket reads 0 bytes when told nbytes=0).
        while True:
            left = self._deadline.at - time.monotonic()
            if left <= 0:
                raise TimeoutError("the deadline passed")
            if not left * 0.9 <= self._set <= left * 1.1:
                _set_timeout(self._sock, left)
                self._set = left
            try:
                return self._sock.recv_into(buffer, *args)
            except TimeoutError:
                if self._deadline.at - time.monotonic() <= 0:
                    raise
                self._set = 0.0  # timed out early (the timeout was short of the deadline): set it again

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        # What socket.makefile("rb") builds, over this object so reads come through recv_into above.
        # Released by SocketIO.close(). Through an https:// proxy the socket is urllib3's SSLTransport
        # (TLS in TLS), which counts these references on the socket it wraps.
        owner: Any = self._sock if hasattr(self._sock, "_io_refs") else getattr(self._sock, "socket", self._sock)
        owner._io_refs += 1
        me: Any = self  # (no cast() calls: this runs once per request)
        raw: Any = socket.SocketIO(me, "rb")
        return io.BufferedReader(raw)

    def _decref_socketios(self) -> None:
        self._sock._decref_socketios()  # type: ignore[attr-defined]

    def fileno(self) -> int:
        return self._sock.fileno()


_MAX_INTERIM = 16  # interim (1xx) replies skipped before the final one; more is a broken server


# http.client's own status-line reader (the parent's method, called directly: no super() per request).
_READ_STATUS: Callable[[http.client.HTTPResponse], tuple[str, int, str]] = http.client.HTTPResponse._read_status  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


class _BoundedHTTPResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None):
        deadline = CURRENT_DEADLINE.deadline
        if deadline is not None:
            wrapped: Any = DeadlineSocket(sock, deadline)  # (no cast() call: this runs once per request)
            sock = wrapped
        super().__init__(sock, debuglevel, method, url)

    def _read_status(self) -> tuple[str, int, str]:
        # http.client skips only "100 Continue": any other interim reply (103 Early Hints) would be
        # taken as the final reply, with the real one left in the socket for the next request to read.
        line = _READ_STATUS(self)
        if not 101 < line[1] < 200:  # the usual case: the final reply at once
            return line
        for _ in range(_MAX_INTERIM - 1):  # the status lines read are at most _MAX_INTERIM
            for _ in range(http.client._MAXHEADERS + 1):  # type: ignore[attr-defined]  # pyright: ignore[reportPrivateUsage]
                if self.fp.readline(http.client._MAXLINE + 1) in (b"\r\n", b"\n", b""):  # type: ignore[attr-defined]  # pyright: ignore[reportPrivateUsage]
                    break
            else:
                raise http.client.HTTPException("an interim reply has too many header lines")
            line = _READ_STATUS(self)
            if not 101 < line[1] < 200:
                return line
        raise http.client.HTTPException(f"more than {_MAX_INTERIM} interim (1xx) replies")


_ONE_WRITE_MAX = 64 * 1024


class _Bounded:
    """What every connection of ours adds to urllib3's: deadline-bound replies and joined writes."""

    response_class: type[http.client.HTTPResponse] = _BoundedHTTPResponse
    _held_head: bytes | None = None

    def putrequest(self, method: str, url: str, skip_host: bool = False, skip_accept_encoding: bool = False) -> None:
        self._held_head = None  # a head held by a request that never sent its body is dropped
        super().putrequest(method, url, skip_host, skip_accept_encoding)  # type: ignore[misc]

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        conn: Any = self  # an HTTPConnection (this class is only mixed into those)
        sock: object = conn.sock
        quiet = _QUIET.get(type(sock))
        if quiet is not None:
            sock.__class__ = quiet  # from now on the deadline sets its timeout (see _Quiet)

    def send(self, data: Any) -> None:
        """Send the request head together with a small body: one write instead of two.

        ``http.client`` sends the head, then urllib3 the body, each a system call (two more with a socket
        timeout, which polls first) and each a point where the GIL is dropped; with many threads every such
        drop costs a wait. The head is held back when a body of at most 64 KiB follows and goes out with it.
        Before a write on a connected socket, its timeout is fitted to the call's deadline (a large upload
        may take until then; urllib3 would leave its connect timeout on the socket).
        (One method, no helper calls on the usual path: it runs twice per request.)
        """
        send: Callable[[Any], None] = super().send  # type: ignore[misc]
        held = self._held_head
        if held is not None:
            self._held_head = None
            if type(data) is bytes:  # the body (at most 64 KiB, as the head said): both in one write
                data = held + data
            else:
                send(held)
        elif type(data) is bytes and data.endswith(b"\r\n\r\n"):  # a request head
            at = data.find(b"\r\nContent-Length: ")
            if at > 0:
                value = data[at + 18 : data.find(b"\r\n", at + 18)]
                if value.isdigit() and 0 < int(value) <= _ONE_WRITE_MAX:
                    self._held_head = data
                    return
        conn: Any = self  # an HTTPConnection (this class is only mixed into those)
        sock = conn.sock  # None before the first write, which connects (under urllib3's connect timeout)
        if sock is not None:
            deadline = CURRENT_DEADLINE.deadline
            if deadline is not None and (
                type(sock) in _QUIETED or (isinstance(data, (bytes, bytearray)) and len(data) > _ONE_WRITE_MAX)
            ):
                _fit(sock, deadline.at)
            if type(sock) is _FD_WRITE_TYPE and type(data) is bytes and not conn.debuglevel:
                # A plain socket with a timeout polls before each send; written to its descriptor, a
                # request that fits the socket's buffer (all but huge ones) is one system call.
                sys.audit("http.client.send", conn, data)
                try:
                    sent = os.write(sock.fileno(), data)
                except BlockingIOError:
                    sent = 0
                if sent < len(data):
                    sock.sendall(memoryview(data)[sent:])
                return
        send(data)


class _HTTPConnection(_Bounded, HTTPConnection):
    pass


class _HTTPSConnection(_Bounded, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection  # pyright: ignore[reportAssignmentType]


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection  # pyright: ignore[reportAssignmentType]


POOLS: dict[str, type[HTTPConnectionPool] | type[HTTPSConnectionPool]] = {"http": _HTTPPool, "https": _HTTPSPool}


_SOCKS_POOLS: dict[str, type[HTTPConnectionPool] | type[HTTPSConnectionPool]] = {}


def socks_pools() -> dict[str, type[HTTPConnectionPool] | type[HTTPSConnectionPool]]:
    """Pools for a SOCKS proxy (urllib3's, with our connections' deadlines); imported on first use.

    urllib3 speaks SOCKS through PySocks: without it, a ``ConfigurationError`` says what to install.
    """
    if not _SOCKS_POOLS:
        import warnings

        from ..errors import ConfigurationError

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # urllib3 warns that SOCKS support is "contrib"
                from urllib3.contrib import socks
        except ImportError:
            raise ConfigurationError(
                "a socks:// proxy needs PySocks for WorkersAI: pip install 'urllib3[socks]' (or use an http:// proxy)"
            ) from None

        class _SOCKSConnection(_Bounded, socks.SOCKSConnection):
            pass

        class _SOCKSHTTPSConnection(_Bounded, socks.SOCKSHTTPSConnection):
            pass

        class _SOCKSPool(socks.SOCKSHTTPConnectionPool):
            ConnectionCls = _SOCKSConnection  # pyright: ignore[reportAssignmentType]

        class _SOCKSHTTPSPool(socks.SOCKSHTTPSConnectionPool):
            ConnectionCls = _SOCKSHTTPSConnection  # pyright: ignore[reportAssignmentType]

        _SOCKS_POOLS.update(http=_SOCKSPool, https=_SOCKSHTTPSPool)
    return _SOCKS_POOLS.copy()
