"""The blocking driver: :class:`Session` runs the shared flows over urllib3.

Every rule (retries, backoff, the rate budget, envelopes) is a flow of :mod:`.._core`; this module
only answers the flows' commands: a :class:`~.._core.flow.Send` with one urllib3 exchange, a
:class:`~.._core.flow.Sleep` with ``time.sleep``, a :class:`~.._core.flow.Call` in place. The async
driver (:mod:`.._aio.session`) is printed from this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core.config import DEFAULT_BASE_URL, ResponseInfo, SessionConfig
from .._core.exchange import Reply
from .._core.flow import Call, Flow, Send, T
from .._error_base import APIConnectionError
from .transport import Urllib3Transport

if TYPE_CHECKING:
    from .transport import Transport

__all__ = ["DEFAULT_BASE_URL", "Reply", "ResponseInfo", "Session"]


def _in_place(command: Call) -> Any:
    """``command.fn(*args)``, here and now (the async driver runs it in the loop's executor)."""
    return command.fn(*command.args)


class Session(SessionConfig):
    """Configuration and the blocking transport shared by every call.

    Deadlines: see :class:`SessionConfig`; the transport is urllib3 (:class:`~.transport.Urllib3Transport`).
    ``AsyncSession``'s driver is printed from these methods but ``_new_transport``.
    """

    _transport: Transport

    def _new_transport(self, transport: Any, max_connections: int, compress: bool) -> Transport:
        return transport or Urllib3Transport(max_connections=max_connections, decompress=compress, network=self.network)

    def close(self) -> None:
        """Close pooled connections (a ``with_options`` copy leaves the ones it shares to their owner)."""
        if self._owns_transport:
            self._transport.close()

    def _drive(self, flow: Flow[T]) -> T:
        """Run ``flow`` to its result, answering its commands with blocking I/O (the driver: what every
        call of this client runs)."""
        send = self._transport.send
        answer: Any = None
        try:
            command = flow.send(None)
            while True:
                if isinstance(command, Send):
                    try:
                        resp = send(
                            command.method, command.url, command.headers, command.body, deadline=command.deadline
                        )
                        data = b"" if command.stream and resp.status < 300 else resp.read_all(command.limit)
                    except APIConnectionError as exc:
                        command = flow.throw(exc)
                        continue
                    answer = (resp, data)
                elif isinstance(command, Call):
                    try:
                        answer = _in_place(command)
                    except Exception as exc:
                        command = flow.throw(exc)
                        continue
                else:
                    self._sleep(command.seconds)
                    answer = None
                command = flow.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            flow.close()
