"""What only the async client has: many calls on one loop without threads, cancellation, lazy import,
``async with`` streams and the same typed handles from the same generated modules."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI, errors
from workers_ai.models.cf.baai.bge_m3 import AsyncBgeM3, BgeM3
from workers_ai.testing import Emulator

from tests.runtime._raw import RawRequest, RawServer, envelope, reply

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3-8b-instruct"


def _client_threads() -> int:
    """Threads of this process that are not the emulator's (its worker pool grows with load)."""
    return sum(1 for t in threading.enumerate() if not t.name.startswith("workers-ai-emulator"))


def test_200_calls_in_flight_on_one_loop_use_no_thread_per_call() -> None:
    with Emulator() as emu:

        async def main() -> tuple[int, int, int]:
            async with AsyncWorkersAI(
                account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_connections=200
            ) as ai:
                await ai.model(BGE).embed(text=["warm"])  # the session and the loop's executor-free path exist
                before = _client_threads()
                peak = before
                stop = False

                async def watch() -> None:
                    nonlocal peak
                    while not stop:
                        peak = max(peak, _client_threads())
                        await asyncio.sleep(0)

                watcher = asyncio.create_task(watch())
                calls = [ai.model(BGE).embed(text=[f"t{i}"]) for i in range(200)]
                results = await asyncio.gather(*calls)
                stop = True
                await watcher
                return before, peak, len(results)

        before, peak, done = asyncio.run(main())
        assert done == 200
        assert len([r for r in emu.requests if r.model == BGE]) == 201
    assert peak == before, (before, peak)  # no thread per call, no executor thread: none at all


def test_a_cancelled_call_releases_its_connection() -> None:
    seen = threading.Semaphore(0)
    closed: list[int] = []
    lock = threading.Lock()

    def handler(conn: socket.socket, req: RawRequest) -> bool:
        if b"hang" in req.body:
            seen.release()
            try:
                while conn.recv(1024):
                    pass
            except OSError:
                pass
            with lock:
                closed.append(1)
            return False
        return reply(conn, envelope({"response": "ok"}))

    with RawServer(handler) as server:

        async def main() -> Any:
            async with AsyncWorkersAI(
                account_id="a" * 32, api_token="tok", base_url=server.base_url, max_connections=2, max_retries=0
            ) as ai:
                model = ai.model("@cf/acme/any")
                hung = [asyncio.create_task(model.run({"prompt": "hang"})) for _ in range(2)]
                for _ in range(2):
                    await asyncio.to_thread(seen.acquire, True, 30)
                for task in hung:
                    task.cancel()
                outcomes = await asyncio.gather(*hung, return_exceptions=True)
                assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)
                # Both pool slots are free again: with max_connections=2, a leaked slot would block here.
                return await asyncio.wait_for(model.run({"prompt": "fine"}), 30)

        out = asyncio.run(main())
        assert out == {"response": "ok"}
        for _ in range(300):
            with lock:
                if len(closed) == 2:
                    break
            server.stop.wait(0.1)
        assert len(closed) == 2  # the server saw both cancelled connections close


def test_import_does_not_load_asyncio_or_aiohttp() -> None:
    code = (
        "import sys, workers_ai\n"
        "ai = workers_ai.WorkersAI('a' * 32, 't')\n"
        "ai.model('@cf/baai/bge-m3'); ai.model('@cf/meta/llama-3-8b-instruct')\n"
        "before = sorted(m for m in ('asyncio', 'aiohttp', 'workers_ai._aio.session') if m in sys.modules)\n"
        "from workers_ai import AsyncWorkersAI\n"
        "AsyncWorkersAI('a' * 32, 't')\n"
        "print(before, 'asyncio' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[] True"


def test_the_first_calls_setup_does_not_count_against_its_timeout() -> None:
    """aiohttp is imported and the session made on the first call: that set-up (a cold import of an old
    aiohttp took over a second here) is not a wait on the server, so a 1 s timeout still gets its second."""
    code = (
        "import asyncio, time\n"
        "from workers_ai import AsyncWorkersAI\n"
        "from workers_ai._aio import transport\n"
        "real = transport._aiohttp\n"
        "def slow_import():\n"
        "    time.sleep(1.5)  # a cold import on a busy machine\n"
        "    return real()\n"
        "transport._aiohttp = slow_import\n"
        "async def main():\n"
        "    async with AsyncWorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=BASE, timeout=1,\n"
        "                              max_retries=0) as ai:\n"
        "        out = await ai.model('@cf/baai/bge-m3').embed(text=['hi'])\n"
        "        print(out.shape)\n"
        "asyncio.run(main())\n"
    )
    with Emulator() as emu:
        values = f"ACCOUNT = {emu.account_id!r}\nTOKEN = {emu.api_token!r}\nBASE = {emu.base_url!r}\n"
        out = subprocess.run([sys.executable, "-c", values + code], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == "[1, 1024]"
        assert len(emu.requests) == 1


def test_async_handles_come_from_the_same_generated_module() -> None:
    sync_h = WorkersAI("a" * 32, "t").model(BGE)
    async_h = AsyncWorkersAI("a" * 32, "t").model(BGE)
    assert type(sync_h) is BgeM3 and type(async_h) is AsyncBgeM3
    assert type(sync_h).__module__ == type(async_h).__module__
    assert AsyncBgeM3.info is BgeM3.info and AsyncBgeM3.decoder is BgeM3.decoder
    # The methods are the shape's (the model's classes subclass its two handles).
    sync_shape, async_shape = BgeM3.__mro__[1], AsyncBgeM3.__mro__[1]
    public = {n for n in vars(sync_shape) if not n.startswith("_")} - {"info", "decoder", "input_types", "batch_input"}
    assert public and public == {n for n in vars(async_shape) if not n.startswith("_")} - {
        "info",
        "decoder",
        "input_types",
        "batch_input",
    }
    for name in public:
        assert asyncio.iscoroutinefunction(getattr(AsyncBgeM3, name)), name


def test_the_token_stays_out_of_repr_and_errors() -> None:
    ai = AsyncWorkersAI("a" * 32, "tok-very-secret", base_url="http://127.0.0.1:9/client/v4", max_retries=0)
    assert "tok-very-secret" not in repr(ai) and "tok-very-secret" not in repr(ai.model(BGE))

    async def main() -> BaseException:
        try:
            await ai.model(BGE).embed(text=["a"])
        except errors.WorkersAIError as exc:
            return exc
        finally:
            await ai.aclose()
        raise AssertionError("no error")

    exc = asyncio.run(main())
    assert isinstance(exc, errors.APIConnectionError) and not exc.request_sent
    assert "tok-very-secret" not in str(exc) and "tok-very-secret" not in repr(exc)


def test_streams_work_awaited_or_in_async_with_and_collect() -> None:
    with Emulator() as emu:

        async def main() -> tuple[str, str, bool]:
            async with AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
                llama = ai.model(LLAMA)
                async with llama.generate_stream(prompt="one") as events:
                    first = await events.text()
                stream = await llama.generate_stream(prompt="one")
                joined = await stream.collect()
                # Leaving early closes the stream; the client goes on working.
                async with llama.generate_stream(prompt="two") as early:
                    async for _ in early:
                        break
                return first, joined.text, early.closed

        first, joined, closed = asyncio.run(main())
        assert first and first == joined and closed


def test_the_same_client_can_be_used_from_a_second_event_loop() -> None:
    with Emulator() as emu:
        ai = AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url)

        async def once() -> Any:
            try:
                return await ai.model(BGE).embed(text=["a"])
            finally:
                await ai.aclose()  # connections belong to the loop that opened them

        one = asyncio.run(once())
        two = asyncio.run(once())
        assert one == two and len(emu.requests) == 2


def test_a_missing_aiohttp_is_a_clear_configuration_error(tmp_path: Any) -> None:
    blocker = tmp_path / "aiohttp.py"
    blocker.write_text("raise ImportError('blocked for the test')\n")
    code = (
        "import asyncio, workers_ai\n"
        "ai = workers_ai.AsyncWorkersAI('a' * 32, 't', base_url='http://127.0.0.1:9/client/v4')\n"
        "try:\n"
        "    asyncio.run(ai.model('@cf/baai/bge-m3').embed(text=['a']))\n"
        "except workers_ai.errors.ConfigurationError as exc:\n"
        "    print(json.dumps(str(exc)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert "workers-ai[async]" in json.loads(out.stdout), out.stderr


def test_run_rejects_stream_with_queue_request() -> None:
    ai = AsyncWorkersAI("a" * 32, "t")
    with pytest.raises(errors.ConfigurationError):
        ai.run(BGE, {"text": "x"}, stream=True, queue_request=True)


def test_last_response_is_kept_per_task() -> None:
    with Emulator() as emu:

        async def main() -> tuple[list[str | None], Any]:
            async with AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
                model = ai.model(BGE)

                async def one(i: int) -> str | None:
                    await model.embed(text=[f"t{i}"])
                    await asyncio.sleep(0.01)  # the other tasks' replies arrive meanwhile
                    info = ai.last_response
                    assert info is not None and info.status == 200
                    return info.cf_ray

                rays = await asyncio.gather(*(one(i) for i in range(20)))
                return list(rays), ai.last_response  # this task made no call itself

        rays, own = asyncio.run(main())
    assert len(set(rays)) == 20 and own is None
