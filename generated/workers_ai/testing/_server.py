"""The emulator's HTTP server core: one event-loop thread and a small pool of worker threads.

The loop thread accepts connections and moves bytes (``selectors``, non-blocking sockets, requests
parsed incrementally by :mod:`._http`); a complete request goes to a worker, which calls the handler
and hands the :class:`Reply` back to the loop to write. So an idle keep-alive connection costs a socket
and a few small objects, never a thread: the thread count stays at ``1 + workers`` however many
clients are connected. Pauses (a ``slow`` reply, the interval between stream events) are timers on the
loop, not sleeping threads. The server knows nothing of the API: it serves any handler.

One connection's trouble is that connection's alone. Whatever a handler, a socket event, the writing
of a queued reply or a timer raises (any ``Exception``: a library's error, a bug of ours) is reported
to ``on_error`` and closes that connection (a request whose handler raised is answered 500 first);
the loop goes on serving the others. ``KeyboardInterrupt``, ``SystemExit`` and a failure of the loop
itself stop the server instead: the cause is reported and kept in :attr:`HttpServer.died`, and every
later connection is answered 500 naming it, until :meth:`HttpServer.close`.
"""

from __future__ import annotations

import heapq
import itertools
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

from ._connection import Connection
from ._http import MAX_BODY, Request
from ._records import Stage, error_text
from ._reply import Reply, error_reply, failure_reply
from ._wire import frames

__all__ = ["EmulatorStopped", "Handler", "HttpServer", "OnError"]

Handler = Callable[[Request], Reply]
OnError = Callable[[Stage, str, BaseException], None]
"""Told of every exception the server contained: ``(stage, where, error)``."""
MAX_PENDING = 64 * 1024 * 1024
"""Bytes held for requests not yet complete, over every connection: past it the connection whose bytes
tipped it over is refused (413) and its buffer dropped, so unfinished uploads (200 clients each 9.9 MB
into a 10 MB body) cannot exhaust memory and stop the server."""
_WAKE = object()
_SWEEP = 1.0  # seconds between checks for idle connections
_WORKER_NAME = "workers-ai-emulator-worker"
_Timer = tuple[float, int, Callable[[], None], "Connection | None"]


class EmulatorStopped(RuntimeError):
    """The emulator's server thread ended without being closed; ``__cause__`` is why."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(
            f"the emulator's server stopped: {error_text(cause)} "
            "(the traceback is in Emulator.errors and was logged on workers_ai.testing)"
        )


class HttpServer:
    """Serves ``handler`` on ``host:port`` (0: a free port) once :meth:`start` is called."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        *,
        on_error: OnError,
        workers: int = 8,
        idle_timeout: float = 300.0,
        max_connections: int = 10_000,
        max_body: int = MAX_BODY,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._handler = handler
        self._on_error = on_error
        self._max_pending = max_pending
        self._pending = 0
        self._idle_timeout = idle_timeout
        self._max_connections = max_connections
        self._max_body = max_body
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=1024)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._conns: set[Connection] = set()
        self._done: deque[tuple[Connection, Reply | BaseException]] = deque()
        self._timers: list[_Timer] = []
        self._seq = itertools.count()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_WORKER_NAME)
        self._stopping = False
        self._closed = False
        self._released = False
        self.died: BaseException | None = None
        """Why the server thread ended without :meth:`close` (it then answers 500 naming it)."""
        self._thread = threading.Thread(target=self._run, name="workers-ai-emulator", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def start(self) -> None:
        self._thread.start()

    def check(self) -> None:
        """Raise :class:`EmulatorStopped` (its cause chained) if the server thread has ended unexpectedly."""
        if self.died is not None:
            raise EmulatorStopped(self.died) from self.died

    def close(self) -> None:
        """Stop, drop every connection and wait for the threads to end (a reply being computed finishes first)."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        if self._thread.is_alive():
            self._wake()
            if self._thread is not threading.current_thread():
                self._thread.join(10)
        else:
            self._release()
        # A handler may close the server it runs in (a fault's match predicate could): don't wait on itself.
        in_worker = threading.current_thread().name.startswith(_WORKER_NAME)
        self._pool.shutdown(wait=not in_worker, cancel_futures=True)

    # ---------------------------------------------------------------- what connections call (loop thread)

    def watch(self, conn: Connection, events: int) -> None:
        if events == 0:
            if conn.events:
                self._selector.unregister(conn.sock)
        elif conn.events:
            self._selector.modify(conn.sock, events, conn)
        else:
            self._selector.register(conn.sock, events, conn)

    def later(self, delay: float, action: Callable[[], None], owner: Connection | None = None) -> None:
        heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), action, owner))

    def submit(self, conn: Connection, request: Request) -> None:
        self._pool.submit(self._work, conn, request)

    def hold(self, delta: int) -> bool:
        """Count ``delta`` more (or fewer) bytes held for unfinished requests; False when over the limit."""
        self._pending += delta
        return self._pending <= self._max_pending

    def adopt(self, conn: Connection) -> None:
        self._conns.add(conn)

    def forget(self, conn: Connection) -> None:
        self.watch(conn, 0)
        conn.events = 0
        self._conns.discard(conn)

    # ---------------------------------------------------------------- workers

    def _work(self, conn: Connection, request: Request) -> None:
        reply: Reply | BaseException
        try:
            reply = self._handler(request)
        except Exception as exc:  # a handler bug: answer it rather than leave the client hanging
            self._report("request", f"{request.method} {request.target[:300]}", exc)
            reply = failure_reply(exc)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: not swallowed; the loop stops on it
            reply = exc
        self._done.append((conn, reply))
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # already awake (the buffer is full) or closed

    # ---------------------------------------------------------------- the loop

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # the loop's own failure, or a handler's KeyboardInterrupt/SystemExit
            if not self._stopping:
                self.died = exc
        self._release(keep_listener=self.died is not None)
        if self.died is not None:
            self._report("loop", "the emulator's server loop", self.died)
            self._answer_stopped(self.died)

    def _loop(self) -> None:
        swept = time.monotonic()
        while not self._stopping:
            for key, mask in self._selector.select(self._timeout()):
                if key.data is None:
                    self._accept()
                elif key.data is _WAKE:
                    self._drain_wake()
                elif isinstance(key.data, Connection):
                    try:
                        key.data.on_event(mask)
                    except Exception as exc:  # one connection's trouble never stops the loop
                        self._fail(key.data, "event", exc)
            while self._done:
                conn, reply = self._done.popleft()
                if isinstance(reply, BaseException):
                    raise reply
                try:
                    conn.respond(reply)
                except Exception as exc:
                    self._fail(conn, "reply", exc)
            self._run_timers()
            now = time.monotonic()
            if now - swept >= _SWEEP:
                swept = now
                self._sweep(now)

    def _fail(self, conn: Connection | None, stage: Stage, exc: Exception) -> None:
        """Report what ``conn`` raised, then close it (whatever state it was left in)."""
        where = "the server"
        if conn is not None:
            with suppress(Exception):
                where = conn.describe()
            self._drop(conn)
        self._report(stage, where, exc)

    def _report(self, stage: Stage, where: str, exc: BaseException) -> None:
        with suppress(Exception):  # a failing report (a logging handler's, say) must not undo the containment
            self._on_error(stage, where, exc)

    def _drop(self, conn: Connection) -> None:
        if conn.state == "closed":  # closed already, or its socket handed to another connection
            return
        try:
            conn.close()
            return
        except Exception:
            pass  # it failed part-way: finish by hand, so no closed socket stays registered
        self._conns.discard(conn)
        with suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.events = 0
        with suppress(OSError):
            conn.sock.close()

    def _timeout(self) -> float:
        if not self._timers:
            return _SWEEP
        return min(_SWEEP, max(0.0, self._timers[0][0] - time.monotonic()))

    def _run_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, action, owner = heapq.heappop(self._timers)
            if owner is not None and owner.state == "closed":
                continue
            try:
                action()
            except Exception as exc:
                self._fail(owner, "timer", exc)

    def _accept(self) -> None:
        for _ in range(128):
            try:
                sock, _addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of file descriptors: stop accepting for a moment
                self._selector.unregister(self._listener)
                self.later(0.1, self._listen_again)
                return
            if len(self._conns) >= self._max_connections:
                sock.close()
                continue
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # the client is gone already
                sock.close()
                continue
            try:
                conn = Connection(sock, self, self._max_body)
            except Exception as exc:
                sock.close()
                self._fail(None, "event", exc)
                continue
            self._conns.add(conn)
            try:
                conn.start()
            except Exception as exc:
                self._fail(conn, "event", exc)

    def _listen_again(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, None)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _sweep(self, now: float) -> None:
        for conn in [c for c in self._conns if c.idle and now - c.last_active > self._idle_timeout]:
            self._drop(conn)

    def _release(self, keep_listener: bool = False) -> None:
        if self._released:
            return
        self._released = True
        for conn in list(self._conns):
            self._drop(conn)
        self._timers.clear()
        self._selector.close()
        for sock in (self._wake_r, self._wake_w) if keep_listener else (self._listener, self._wake_r, self._wake_w):
            sock.close()

    def _answer_stopped(self, cause: BaseException) -> None:
        """After the loop died: answer every connection 500 naming ``cause`` (one at a time, blocking,
        none of the loop's machinery), until :meth:`close`; then stop listening."""
        reply = error_reply(500, 3043, str(EmulatorStopped(cause)))
        reply.close = True
        data = b"".join(frame.data for frame in frames(reply, False).frames)
        self._listener.settimeout(0.2)
        try:
            while not self._stopping:
                try:
                    sock, _addr = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    time.sleep(0.1)  # out of file descriptors, say
                    continue
                with sock:
                    _answer_once(sock, data)
        finally:
            self._listener.close()


def _answer_once(sock: socket.socket, data: bytes) -> None:
    """Read a request head, send ``data``, then read until the client closes (so unread request bytes
    cannot turn the close into a reset that destroys the answer); a second at most for each part."""
    try:
        sock.settimeout(1.0)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            more = sock.recv(65536)
            if not more:
                return
            head += more
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(65536):
            pass
    except OSError:
        pass
