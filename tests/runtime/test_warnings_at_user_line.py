"""Every warning the SDK emits points at the user's line (``filename`` is the caller's file, ``lineno`` the
line of the call), however many handle, flow and driver layers sit between: an unknown input key (typed
method, ``run()``, a stream), a model id that looks like a slip, an unknown batch status, a bad
``WORKERS_AI_LOG``; on both clients. Python 3.12+ skips the package's frames itself (``skip_file_prefixes``);
the ``stacklevel`` counted for older Pythons is tested on every version.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI, errors
from workers_ai._batch.jobs import BatchStatusWarning
from workers_ai._core import warn
from workers_ai.testing import Emulator

from tests._server import ScriptedServer
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._queue import QueueSim

LLAMA = "@cf/meta/llama-3-8b-instruct"
HI = [{"role": "user", "content": "hi", "contnet": "x"}]


@pytest.fixture(params=[False, True] if sys.version_info >= (3, 12) else [False], ids=lambda p: f"skip_prefixes={p}")
def emu(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    monkeypatch.setattr(warn, "_SKIP_PREFIXES", request.param)
    with Emulator() as e:
        yield e


def _at(case: Callable[..., Any], *args: Any, run: Callable[[Any], Any] = lambda r: r) -> list[warnings.WarningMessage]:
    """Run ``case`` (a function whose first line is the call that warns; ``run`` runs what it returns) and
    check each warning names that line."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            run(case(*args))
        except errors.APIError:
            pass  # an unknown model's 5007, after its warning
    line = case.__code__.co_firstlineno + 1
    assert seen, case.__name__
    for w in seen:
        assert (w.filename, w.lineno) == (__file__, line), (case.__name__, w.filename, w.lineno, str(w.message))
    return list(seen)


def chat_key(ai: WorkersAI) -> Any:
    return ai.model(LLAMA).chat(messages=HI)


def run_key(ai: WorkersAI) -> Any:
    return ai.run(LLAMA, {"prompt": "hi", "promt": "x"})


def stream_key(ai: WorkersAI) -> Any:
    with ai.model(LLAMA).chat_stream(messages=HI) as events:
        return list(events)


def model_slip(ai: WorkersAI) -> Any:
    return ai.model("@cf/meta/llama-3-8b-instruk")


def run_slip(ai: WorkersAI) -> Any:
    return ai.run("@cf/meta/llama-3-8b-instruk", {"prompt": "hi"})


SYNC = [chat_key, run_key, stream_key, model_slip, run_slip]


@pytest.mark.parametrize("case", SYNC, ids=[c.__name__ for c in SYNC])
def test_sync_warnings_point_at_the_callers_line(emu: Emulator, case: Callable[[WorkersAI], Any]) -> None:
    with emu.client() as ai:
        seen = _at(case, ai)
    kind = errors.UnknownModelWarning if "slip" in case.__name__ else errors.UnknownInputWarning
    assert [w.category for w in seen] == [kind]
    assert "did you mean" in str(seen[0].message)


async def async_chat_key(ai: AsyncWorkersAI) -> Any:
    return await ai.model(LLAMA).chat(messages=HI)


async def async_run_key(ai: AsyncWorkersAI) -> Any:
    return await ai.run(LLAMA, {"prompt": "hi", "promt": "x"})


async def async_stream_key(ai: AsyncWorkersAI) -> Any:
    async with ai.model(LLAMA).chat_stream(messages=HI) as events:
        return [e async for e in events]


async def async_run_slip(ai: AsyncWorkersAI) -> Any:
    return await ai.run("@cf/meta/llama-3-8b-instruk", {"prompt": "hi"})


ASYNC = [async_chat_key, async_run_key, async_stream_key, async_run_slip]


@pytest.mark.parametrize("case", ASYNC, ids=[c.__name__ for c in ASYNC])
def test_async_warnings_point_at_the_callers_line(emu: Emulator, case: Callable[[AsyncWorkersAI], Any]) -> None:
    async def run(call: Any) -> Any:
        async with ai:
            return await call

    ai = emu.async_client()
    seen = _at(case, ai, run=lambda call: asyncio.run(run(call)))
    kind = errors.UnknownModelWarning if "slip" in case.__name__ else errors.UnknownInputWarning
    assert [w.category for w in seen] == [kind]


def wait_for(job: Any) -> Any:
    return job.wait(poll_interval=0)


def test_an_unknown_batch_status_points_at_the_wait(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warn, "_SKIP_PREFIXES", False)
    server.script(QueueSim(states=["queued", "paused", "done"]))
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    job = ai.run("@cf/baai/bge-base-en-v1.5", {"requests": [{"text": "t 5"}]}, queue_request=True)
    assert [w.category for w in _at(wait_for, job)] == [BatchStatusWarning]
    assert issubclass(BatchStatusWarning, errors.WorkersAIWarning)


def test_a_bad_workers_ai_log_warns_once_at_the_users_line_naming_the_levels() -> None:
    program = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "from workers_ai import WorkersAI\n"
        f"ai = WorkersAI(account_id={ACCOUNT!r}, api_token='t')\n"
        f"ai = WorkersAI(account_id={ACCOUNT!r}, api_token='t')\n"
    )
    env = {"WORKERS_AI_LOG": "verbose", "PATH": ""}
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == (
        "<string>:3: WorkersAIWarning: WORKERS_AI_LOG='verbose' is not a log level and is ignored;"
        " use debug|info|warning|error"
    ), proc.stderr
    assert len([line for line in lines if "WORKERS_AI_LOG" in line]) == 1
    quiet = subprocess.run(
        [sys.executable, "-W", "error", "-c", program], capture_output=True, text=True, timeout=60,
        env={"WORKERS_AI_LOG": "debug", "PATH": ""},
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr  # an allowed value warns nothing
