"""One client connection of the event-loop server: read and parse requests as bytes arrive, hand each
complete one to the loop, then write its reply frame by frame (pausing where a slow reply or a stream
says), and end the way the reply says: keep the connection for the next request, close it, or reset it.

Everything here runs on the loop's thread; the loop itself is reached only through :class:`Loop`.
"""

from __future__ import annotations

import selectors
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import Literal, Protocol

from ._http import HttpError, Request, RequestReader
from ._reply import Reply, error_reply
from ._wire import Ending, Frame, frames

__all__ = ["Connection", "Loop"]

State = Literal["reading", "busy", "writing", "draining", "closed"]
_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE
_RECV = 64 * 1024
_SEND = 1024 * 1024
_LINGER = 2.0  # after refusing a request, read (and drop) what the client still sends for this long
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class Loop(Protocol):
    def watch(self, conn: Connection, events: int) -> None:
        """Wake ``conn`` on these selector events (0: on none)."""

    def hold(self, delta: int) -> bool:
        """Count ``delta`` more (or fewer) bytes held for unfinished requests; False when over the limit."""
        ...

    def later(self, delay: float, action: Callable[[], None], owner: Connection | None = None) -> None:
        """Run ``action`` on the loop after ``delay`` seconds; with an ``owner``, only while it is open
        (if the action raises, that connection is closed)."""

    def submit(self, conn: Connection, request: Request) -> None:
        """Answer ``request`` off the loop; the reply comes back through :meth:`Connection.respond`."""

    def forget(self, conn: Connection) -> None:
        """``conn`` is closed."""

    def adopt(self, conn: Connection) -> None:
        """``conn`` (a connection that took over another's socket, e.g. a WebSocket) is served too."""


class Connection:
    def __init__(self, sock: socket.socket, loop: Loop, max_body: int) -> None:
        self.sock = sock
        self.state: State = "reading"
        self.last_active = time.monotonic()
        self.events = 0
        self._loop = loop
        self._reader = RequestReader(max_body)
        self._keep_alive = True
        self._frames: deque[Frame] = deque()
        self._ending: Ending = "keep"
        self._linger = False
        self._waited = False
        self._out = b""
        self._sent = 0
        self._held = 0  # bytes of unfinished requests counted against the server's limit
        self._last: tuple[str, str] | None = None  # method and target of the request handed out last

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def idle(self) -> bool:
        """Waiting for a request (or the rest of one)."""
        return self.state == "reading"

    def start(self) -> None:
        self._watch(_READ)

    def describe(self) -> str:
        """Which connection this is, for an error report: its last request and the client's address."""
        what = self._what()
        try:
            host, port, *_ = self.sock.getpeername()
        except (OSError, ValueError):
            return what
        return f"{what} from {host}:{port}"

    def _what(self) -> str:
        return f"{self._last[0]} {self._last[1][:300]}" if self._last is not None else "a connection"

    def on_event(self, mask: int) -> None:
        if mask & _WRITE:
            self._pump()
        if mask & _READ and self.state in ("reading", "draining"):
            self._receive()

    def respond(self, reply: Reply) -> None:
        """Send ``reply`` to the request handed out last."""
        if self.state != "busy":
            return
        take_over = getattr(reply, "take_over", None)
        if take_over is not None:  # a WebSocket upgrade (testing/_realtime): another object owns the socket now
            take_over(self, self._loop)
            return
        plan = frames(reply, self._keep_alive)
        self._frames = deque(plan.frames)
        self._ending = plan.ending
        self.state = "writing"
        self._pump()

    def close(self) -> None:
        if self.state == "closed":
            return
        self.state = "closed"
        self._loop.hold(-self._held)
        self._held = 0
        self._loop.forget(self)
        self.sock.close()

    # ---------------------------------------------------------------- reading

    def _receive(self) -> None:
        try:
            data = self.sock.recv(_RECV)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        if not data:
            self.close()
            return
        if self.state == "draining":
            return  # dropped: the reply has been sent
        self.last_active = time.monotonic()
        self._reader.feed(data)
        if not self._count_held():
            self._reader = RequestReader(0)  # the bytes held so far are dropped
            self._count_held()
            self._refuse(HttpError(413, 3006, "Request is too large: the server holds too many unfinished uploads"))
            return
        self._advance()

    def _count_held(self) -> bool:
        held = self._reader.pending
        within = self._loop.hold(held - self._held)
        self._held = held
        return within

    def _advance(self) -> None:
        try:
            request = self._reader.next()
        except HttpError as exc:
            self._refuse(exc)
            return
        if self._reader.continue_due:
            self._reader.continue_due = False
            try:
                self.sock.send(_CONTINUE)
            except OSError:
                pass  # a client that waits for it sends the body after a timeout anyway
        if request is None:
            self._watch(_READ)
            return
        self._count_held()  # the request's bytes left the reader
        self.state = "busy"
        self._keep_alive = request.keep_alive
        self._last = (request.method, request.target)
        self._watch(0)
        self._loop.submit(self, request)

    def _refuse(self, exc: HttpError) -> None:
        reply = error_reply(exc.status, exc.code, exc.message, [("server", "workers-ai-emulator")])
        self.state = "busy"
        self._keep_alive = False
        self._linger = True
        self.respond(reply)

    # ---------------------------------------------------------------- writing

    def _pump(self) -> None:
        while self.state == "writing":
            if self._sent < len(self._out):
                try:
                    self._sent += self.sock.send(memoryview(self._out)[self._sent : self._sent + _SEND])
                except (BlockingIOError, InterruptedError):
                    self._watch(_WRITE)
                    return
                except OSError:
                    self.close()
                    return
                continue
            if not self._frames:
                self._finish()
                return
            frame = self._frames[0]
            if frame.delay > 0 and not self._waited:
                self._waited = True
                self._watch(0)
                self._loop.later(frame.delay, self._pump, self)
                return
            self._frames.popleft()
            self._waited = False
            self._out, self._sent = frame.data, 0

    def _finish(self) -> None:
        self._out, self._sent = b"", 0
        if self._ending == "reset":
            try:  # close with an RST instead of a FIN
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            self.close()
        elif self._ending == "close" and self._linger:
            # Closing with unread request bytes would reset the connection and could destroy the reply
            # before the client reads it: stop writing, drop what still comes for a moment, then close.
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                self.close()
                return
            self.state = "draining"
            self._watch(_READ)
            self._loop.later(_LINGER, self.close, self)
        elif self._ending == "close":
            self.close()
        else:
            self.state = "reading"
            self.last_active = time.monotonic()
            self._advance()  # a pipelined request may already be here

    def _watch(self, events: int) -> None:
        if events != self.events and self.state != "closed":
            self._loop.watch(self, events)
            self.events = events
