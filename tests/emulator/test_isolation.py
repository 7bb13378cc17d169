"""One connection's failure is that connection's alone: an exception of a class nobody handles by name,
raised in each kind of handler the emulator runs (a request's handler, an SSE stream being written, a
batch poll, a WebSocket frame, a timer, request parsing, a queued reply, a WebSocket take-over), closes
that connection and is logged once with its traceback (and kept in ``Emulator.errors``); the next
request, on a new connection, is served, to the sync and to the async client alike. A server that stops anyway says why
at its next use instead of failing with ``Bad file descriptor`` or ``Connection refused``."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI, errors
from workers_ai.testing import Emulator, _connection
from workers_ai.testing._batch import Batches
from workers_ai.testing._connection import Connection
from workers_ai.testing._http import RequestReader
from workers_ai.testing._realtime import WsConnection
from workers_ai.testing._ws_scripts import SpeakScript

from tests.emulator._raw import BGE, connect, post, read_reply
from tests.runtime._drivers import KINDS, Driver

LLAMA = "@cf/meta/llama-3-8b-instruct"
AURA = "@cf/deepgram/aura-1"
NOVA = "@cf/deepgram/nova-3"
SECOND = bytes(32000)  # one second of 16 kHz linear16 silence


class Boom(Exception):
    """A class nobody catches by name: stands for a library's own error, or a bug of ours."""


class Halt(BaseException):
    """Not an ``Exception``: like KeyboardInterrupt and SystemExit, it is not one connection's trouble."""


class Mute(Exception):
    """An exception that cannot even say what it is."""

    def __str__(self) -> str:
        raise RuntimeError("no message for you")


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(stream_interval=0.01) as emulator:
        yield emulator


def _once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, error: Exception | None = None) -> None:
    """Make ``owner.name`` raise ``error`` (a Boom) the first time it is called, then work as before."""
    original = getattr(owner, name)
    fired: list[bool] = []

    def boom_once(*args: Any, **kwargs: Any) -> Any:
        if not fired:
            fired.append(True)
            raise error if error is not None else Boom(f"injected into {name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, boom_once)


def _fails(kind: str, emu: Emulator, fn: Callable[[Any], Any]) -> BaseException:
    """Run ``fn(ai)`` with a new client of ``kind`` that does not retry; what it raised."""
    drive = Driver(kind, emu.account_id, emu.api_token, emu.base_url)
    with pytest.raises(errors.WorkersAIError) as info:
        drive.call(fn, max_retries=0)
    return info.value


def _served(kind: str, emu: Emulator) -> None:
    """The next requests are served: REST on a new raw connection and through a new client of ``kind``."""
    with connect(emu.port, timeout=10) as sock:
        sock.sendall(post(emu, b'{"text": "raw"}'))
        assert read_reply(sock).status == 200
    drive = Driver(kind, emu.account_id, emu.api_token, emu.base_url)
    out = drive.call(lambda ai: ai.model(BGE).embed(text="still here"), max_retries=0)
    assert out.shape == [1, 1024]


def _contained_once(emu: Emulator, caplog: pytest.LogCaptureFixture, stage: str, where: str, at: str) -> None:
    """One ERROR on ``workers_ai.testing`` with the Boom's traceback, one record in ``emu.errors``."""
    logged = [r for r in caplog.records if r.name == "workers_ai.testing"]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].levelno == logging.ERROR and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is Boom and where in logged[0].getMessage()
    assert "Boom" in caplog.text and f"in {at}" in caplog.text  # the traceback, down to the raising frame
    (error,) = emu.errors
    assert error.stage == stage and isinstance(error.error, Boom) and where in error.where
    assert "Traceback" in error.traceback and "boom_once" in error.traceback and f"in {at}" in error.traceback


# ---------------------------------------------------------------------------- realtime, sync and async


def _speak(kind: str, emu: Emulator, text: str = "hi") -> bytes:
    """Audio of a whole aura session (speak, then close)."""
    if kind == "sync":
        with emu.client(max_retries=0).model(AURA).speak_live() as s:
            return b"".join(s.speak(text))

    async def main() -> bytes:
        async with AsyncWorkersAI(
            account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_retries=0
        ) as ai:
            async with ai.model(AURA).speak_live() as s:
                return b"".join([chunk async for chunk in s.speak(text)])

    return asyncio.run(main())


def _listen_until_closed(kind: str, emu: Emulator, **client: Any) -> None:
    """A nova session that sends a little audio and reads until the server ends it."""
    if kind == "sync":
        with (
            WorkersAI(
                account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_retries=0, **client
            )
            .model(NOVA)
            .listen(encoding="linear16", sample_rate=16000) as s
        ):
            s.send(SECOND[:3200])
            for _ in s:
                pass
        return

    async def main() -> None:
        async with AsyncWorkersAI(
            account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_retries=0, **client
        ) as ai:
            async with ai.model(NOVA).listen(encoding="linear16", sample_rate=16000) as s:
                await s.send(SECOND[:3200])
                async for _ in s:
                    pass

    asyncio.run(main())


def _speech_served(kind: str, emu: Emulator) -> None:
    assert len(_speak(kind, emu)) == 2 * 480 * 2  # 20 ms per character at 24 kHz


# ---------------------------------------------------------------------------- each kind of handler


def _predicate_raises(mp: pytest.MonkeyPatch, emu: Emulator) -> None:
    """A ``match`` predicate is the user's code inside the request handler."""
    fired: list[bool] = []

    def boom_once(rec: object) -> bool:
        if not fired:
            fired.append(True)
            raise Boom("a predicate with a bug")
        return False

    emu.inject("capacity", match=boom_once)


def _stream_raises(mp: pytest.MonkeyPatch, emu: Emulator) -> None:
    original = Connection._pump
    fired: list[bool] = []

    def boom_once(self: Connection) -> None:
        if self._waited and not fired:  # a stream event's turn, on its timer: the stream is half sent
            fired.append(True)
            raise Boom("mid-stream")
        original(self)

    mp.setattr(Connection, "_pump", boom_once)


def _embed(kind: str, emu: Emulator) -> Any:
    return _fails(kind, emu, lambda ai: ai.model(BGE).embed(text="x"))


def _stream_call(kind: str, emu: Emulator) -> Callable[[Any], Any]:
    drive = Driver(kind, emu.account_id, emu.api_token, emu.base_url)
    return lambda ai: drive.texts(ai.model(LLAMA).generate_stream(prompt="tell me a long story", max_tokens=64))


def _batch_call(kind: str, emu: Emulator) -> Callable[[Any], Any]:
    drive = Driver(kind, emu.account_id, emu.api_token, emu.base_url)
    return lambda ai: drive.wait(ai.model(BGE).batch([{"text": "a"}]), poll_interval=0.001)


def _works(call: Callable[[str, Emulator], Callable[[Any], Any]]) -> Callable[[str, Emulator], None]:
    def run(kind: str, emu: Emulator) -> None:
        assert Driver(kind, emu.account_id, emu.api_token, emu.base_url).call(call(kind, emu), max_retries=0)

    return run


def _session_fails(session: Callable[[str, Emulator], object]) -> Callable[[str, Emulator], BaseException]:
    def run(kind: str, emu: Emulator) -> BaseException:
        with pytest.raises(errors.WorkersAIError) as info:
            session(kind, emu)
        return info.value

    return run


def _idle_listen(kind: str, emu: Emulator) -> None:  # the idle check's timer runs 50 ms in
    _listen_until_closed(kind, emu, headers={"x-emulator-fault": "ws_idle; seconds=0.05"})


RUN = "/client/v4/accounts/{account}/ai/run/"
# name: (inject, what the client does and sees, the error it gets, stage, where (the request line), after)
CASES: dict[str, tuple[Any, Any, type[Exception], str, str, Any]] = {
    "request handler": (_predicate_raises, _embed, errors.InternalServerError, "request", "POST " + BGE, None),
    "sse stream": (
        _stream_raises,
        lambda kind, emu: _fails(kind, emu, _stream_call(kind, emu)),
        errors.WorkersAIError,
        "timer",
        "POST " + LLAMA,
        _works(_stream_call),
    ),
    "batch poll": (
        lambda mp, emu: _once(mp, Batches, "poll"),
        lambda kind, emu: _fails(kind, emu, _batch_call(kind, emu)),
        errors.InternalServerError,
        "request",
        "POST " + BGE,
        _works(_batch_call),
    ),
    "websocket frame": (
        lambda mp, emu: _once(mp, SpeakScript, "message"),
        _session_fails(_speak),
        errors.RealtimeError,
        "event",
        "WebSocket session GET " + AURA,
        _speech_served,
    ),
    "timer": (
        lambda mp, emu: _once(mp, WsConnection, "_idle_check"),
        _session_fails(_idle_listen),
        errors.RealtimeError,
        "timer",
        "WebSocket session GET " + NOVA,
        _speech_served,
    ),
    "request parsing": (  # on the loop, before there is a request to answer
        lambda mp, emu: _once(mp, RequestReader, "feed"),
        _embed,
        errors.APIConnectionError,
        "event",
        "a connection from 127.0.0.1:",
        None,
    ),
    "queued reply": (  # closed without an answer: nothing left to answer with
        lambda mp, emu: _once(mp, _connection, "frames"),
        _embed,
        errors.APIConnectionError,
        "reply",
        "POST " + BGE,
        None,
    ),
    "websocket take-over": (  # the socket has left its HTTP connection: it is closed too, not left open
        lambda mp, emu: _once(mp, SpeakScript, "opened"),
        _session_fails(_speak),
        errors.APIConnectionError,
        "reply",
        "GET " + AURA,
        _speech_served,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_handler_that_raises_closes_its_connection_only(
    case: str, kind: str, emu: Emulator, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject, fail, error_class, stage, where, again = CASES[case]
    inject(monkeypatch, emu)
    error = fail(kind, emu)
    assert isinstance(error, error_class), repr(error)
    if error_class is errors.InternalServerError:  # answered: the error is named
        assert "emulator error: Boom: " in str(error)
    _served(kind, emu)
    if again is not None:  # the same kind of handler serves again
        again(kind, emu)
    where = where.replace("GET ", f"GET {RUN}").replace("POST ", f"POST {RUN}").format(account=emu.account_id)
    _contained_once(emu, caplog, stage, where, "boom_once")


def test_an_error_that_cannot_say_what_it_is(emu: Emulator, caplog: pytest.LogCaptureFixture) -> None:
    def mute(rec: object) -> bool:
        raise Mute

    emu.inject("capacity", times=1, match=mute)
    error = _fails("sync", emu, lambda ai: ai.model(BGE).embed(text="x"))
    assert "Mute (its message cannot be shown)" in str(error)
    emu.clear_faults()
    _served("sync", emu)
    assert [type(e.error) for e in emu.errors] == [Mute] and "Mute" in str(emu.errors[0])
    assert len([r for r in caplog.records if r.name == "workers_ai.testing"]) == 1


# ---------------------------------------------------------------------------- a server that stops anyway


def _emulator_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("workers-ai-emulator")]


@pytest.mark.parametrize("stop", [Halt, KeyboardInterrupt, SystemExit], ids=lambda c: c.__name__)
def test_a_stopped_server_names_its_cause_at_the_next_use(kind: str, stop: type[BaseException]) -> None:
    """KeyboardInterrupt and SystemExit are not swallowed as one connection's trouble: the server stops,
    and every later use of the emulator says so, naming the cause."""
    from workers_ai.testing import EmulatorStopped

    emu = Emulator()
    drive = Driver(kind, emu.account_id, emu.api_token, emu.base_url)  # built while the server ran

    def halt(rec: object) -> bool:
        raise stop("halted by the test")

    emu.inject("capacity", match=halt)
    with pytest.raises(errors.WorkersAIError):
        drive.call(lambda ai: ai.model(BGE).embed(text="x"), max_retries=0)
    for use in (lambda: emu.port, lambda: emu.url, emu.client, emu.async_client):
        with pytest.raises(EmulatorStopped, match=f"{stop.__name__}: halted by the test") as info:
            use()
        assert isinstance(info.value.__cause__, stop)
    # A client that was already pointed at it gets an answer naming the cause, not "connection refused".
    with pytest.raises(errors.InternalServerError, match=f"server stopped: {stop.__name__}: halted by the test"):
        drive.call(lambda ai: ai.model(BGE).embed(text="y"), max_retries=0)
    assert [e.stage for e in emu.errors] == ["loop"] and isinstance(emu.errors[0].error, stop)
    with pytest.raises(EmulatorStopped):
        emu.serve_forever()  # `workers-ai serve`: ends with the cause (and closes the emulator)
    assert _emulator_threads() == []


def test_a_loop_that_fails_on_its_own_names_its_cause(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers_ai.testing import EmulatorStopped

    def broken(timeout: float | None = None) -> list[Any]:
        raise OSError(9, "the selector broke")

    with pytest.raises(EmulatorStopped, match=r"OSError: \[Errno 9\] the selector broke"):
        with Emulator() as emu:
            server = emu._server
            assert server is not None
            monkeypatch.setattr(server._selector, "select", broken)
            socket.create_connection(("127.0.0.1", emu.port), 5).close()  # wakes the loop: it calls select again
            for _ in range(500):
                if server.died is not None:
                    break
                threading.Event().wait(0.01)
            with pytest.raises(EmulatorStopped):
                emu.client()
            with connect(server.port, timeout=10) as sock:  # still answered, with the cause
                sock.sendall(post(emu, b'{"text": "x"}'))
                reply = read_reply(sock)
            assert reply.status == 500 and "the selector broke" in reply.error()[1]
    critical = [r for r in caplog.records if r.name == "workers_ai.testing"]
    assert [r.levelno for r in critical] == [logging.CRITICAL] and critical[0].exc_info is not None
    assert _emulator_threads() == []


# ---------------------------------------------------------------------------- what a fixture user sees


def test_the_fixture_reports_contained_errors_after_the_test(tmp_path: Path) -> None:
    test = tmp_path / "test_user.py"
    test.write_text(
        textwrap.dedent(
            """
            pytest_plugins = ["workers_ai.testing.pytest_plugin"]

            def test_user(workers_ai_emulator):
                def buggy(rec):
                    raise LookupError("the predicate has a bug")
                workers_ai_emulator.inject("capacity", match=buggy)
                try:
                    workers_ai_emulator.client(max_retries=0).model("@cf/baai/bge-m3").embed(text="x")
                except Exception:
                    pass
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert "1 passed, 1 warning" in out.stdout, out.stdout[-3000:]
    assert "RuntimeWarning: the emulator contained" in out.stdout
    assert "LookupError: the predicate has a bug" in out.stdout
