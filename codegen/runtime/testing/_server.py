"""The emulator's HTTP server core: one event-loop thread and a small pool of worker threads.

The loop thread accepts connections and moves bytes (``selectors``, non-blocking sockets, requests
parsed incrementally by :mod:`._http`); a complete request goes to a worker, which calls the handler
and hands the :class:`Reply` back to the loop to write. So an idle keep-alive connection costs a socket
and a few small objects, never a thread: the thread count stays at ``1 + workers`` however many
clients are connected. Pauses (a ``slow`` reply, the interval between stream events) are timers on the
loop, not sleeping threads. The server knows nothing of the API: it serves any handler.
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

from ._connection import Connection
from ._http import MAX_BODY, Request
from ._reply import Reply, error_reply

__all__ = ["Handler", "HttpServer"]

Handler = Callable[[Request], Reply]
MAX_PENDING = 64 * 1024 * 1024
"""Bytes held for requests not yet complete, over every connection: past it the connection whose bytes
tipped it over is refused (413) and its buffer dropped, so unfinished uploads (200 clients each 9.9 MB
into a 10 MB body) cannot exhaust memory and stop the server."""
_WAKE = object()
_SWEEP = 1.0  # seconds between checks for idle connections
_WORKER_NAME = "workers-ai-emulator-worker"


class HttpServer:
    """Serves ``handler`` on ``host:port`` (0: a free port) once :meth:`start` is called."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        *,
        workers: int = 8,
        idle_timeout: float = 300.0,
        max_connections: int = 10_000,
        max_body: int = MAX_BODY,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._handler = handler
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
        self._done: deque[tuple[Connection, Reply]] = deque()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_WORKER_NAME)
        self._stopping = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="workers-ai-emulator", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def start(self) -> None:
        self._thread.start()

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

    def later(self, delay: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), action))

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
        try:
            reply = self._handler(request)
        except Exception as exc:  # a handler bug: answer it rather than leave the client hanging
            reply = error_reply(500, 3043, f"emulator error: {type(exc).__name__}: {exc}")
        self._done.append((conn, reply))
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # already awake (the buffer is full) or closed

    # ---------------------------------------------------------------- the loop

    def _run(self) -> None:
        swept = time.monotonic()
        try:
            while not self._stopping:
                for key, mask in self._selector.select(self._timeout()):
                    if key.data is None:
                        self._accept()
                    elif key.data is _WAKE:
                        self._drain_wake()
                    elif isinstance(key.data, Connection):
                        try:
                            key.data.on_event(mask)
                        except (MemoryError, OSError, ValueError):
                            key.data.close()  # one connection's trouble never stops the loop
                while self._done:
                    conn, reply = self._done.popleft()
                    conn.respond(reply)
                self._run_timers()
                now = time.monotonic()
                if now - swept >= _SWEEP:
                    swept = now
                    self._sweep(now)
        finally:
            self._release()

    def _timeout(self) -> float:
        if not self._timers:
            return _SWEEP
        return min(_SWEEP, max(0.0, self._timers[0][0] - time.monotonic()))

    def _run_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, action = heapq.heappop(self._timers)
            action()

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
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(sock, self, self._max_body)
            self._conns.add(conn)
            conn.start()

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
            conn.close()

    def _release(self) -> None:
        for conn in list(self._conns):
            conn.close()
        self._timers.clear()
        self._selector.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
