"""Realtime rows: live transcription sessions against the emulator in another process.

``python bench/_realtime.py serve``: starts an emulator and prints ``EMULATOR {json}``; stops when stdin closes.
``python bench/_realtime.py client SPEC SECONDS ROUNDS``: prints one JSON object with

- ``cpu``: client CPU microseconds per second of audio (``time.process_time``), for
  ``bare_websockets`` (the websockets asyncio client used directly: the same handshake and frames, each
  text frame decoded by msgspec into the same generated event structs), ``bare_websockets_sync`` (its
  threading client, the same work), ``bare_aiohttp`` (aiohttp's
  ``ws_connect``, the same work: the measurement behind the choice of websockets), ``ours_async``
  (``AsyncListenSession.transcribe``) and ``ours_sync`` (``ListenSession.transcribe``); audio is sent
  as fast as the server takes it, in 100 ms chunks of 16 kHz linear16, rounds alternating;
- ``concurrent``: 32 async sessions at once, each event count compared with a single session's
  (``lost`` = events missing over all sessions);
- ``first_interim``: with real-time pacing, milliseconds from sending the first chunk to the first
  interim result, and that as a fraction of one chunk's duration.

The emulator and the client are separate processes, so the server's CPU never counts as the client's.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

import msgspec

MODEL = "@cf/deepgram/nova-3"
RATE = 16000
CHUNK = RATE * 2 // 10  # 100 ms of 16 kHz linear16
QUERY = "encoding=linear16&sample_rate=16000&interim_results=true"


def serve() -> None:
    from workers_ai.testing import Emulator

    with Emulator() as emu:
        spec = {"base_url": emu.base_url, "account_id": emu.account_id, "api_token": emu.api_token}
        print("EMULATOR " + json.dumps(spec), flush=True)
        sys.stdin.read()


def _ws_url(spec: dict[str, str]) -> str:
    base = spec["base_url"].replace("http://", "ws://")
    return f"{base}/accounts/{spec['account_id']}/ai/run/{MODEL}?{QUERY}"


def _decoder() -> Any:
    from workers_ai.models.cf.deepgram.nova_3_live import SPEC

    events: tuple[Any, ...] = SPEC.events
    return msgspec.json.Decoder(Any if not events else events[0] | events[1] | events[2] | events[3])


async def bare_websockets(spec: dict[str, str], audio: bytes) -> int:
    from websockets.asyncio.client import connect

    decode = _decoder().decode
    count = 0
    headers = {"Authorization": f"Bearer {spec['api_token']}"}
    async with connect(_ws_url(spec), additional_headers=headers, compression=None) as ws:
        for at in range(0, len(audio), CHUNK):
            await ws.send(audio[at : at + CHUNK])
        await ws.send('{"type":"CloseStream"}')
        async for message in ws:
            decode(message)
            count += 1
    return count


def bare_websockets_sync(spec: dict[str, str], audio: bytes) -> int:
    from websockets.sync.client import connect

    decode = _decoder().decode
    count = 0
    headers = {"Authorization": f"Bearer {spec['api_token']}"}
    with connect(_ws_url(spec), additional_headers=headers, compression=None) as ws:
        for at in range(0, len(audio), CHUNK):
            ws.send(audio[at : at + CHUNK])
        ws.send('{"type":"CloseStream"}')
        for message in ws:
            decode(message)
            count += 1
    return count


async def bare_aiohttp(spec: dict[str, str], audio: bytes) -> int:
    import aiohttp

    decode = _decoder().decode
    count = 0
    headers = {"Authorization": f"Bearer {spec['api_token']}"}
    async with aiohttp.ClientSession() as session, session.ws_connect(_ws_url(spec), headers=headers) as ws:
        for at in range(0, len(audio), CHUNK):
            await ws.send_bytes(audio[at : at + CHUNK])
        await ws.send_str('{"type":"CloseStream"}')
        async for message in ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                decode(message.data)
                count += 1
    return count


def _clients(spec: dict[str, str]) -> tuple[Any, Any]:
    from workers_ai import AsyncWorkersAI, WorkersAI

    keys = {"account_id": spec["account_id"], "api_token": spec["api_token"], "base_url": spec["base_url"]}
    return WorkersAI(**keys), AsyncWorkersAI(**keys)


async def ours_async(ai: Any, audio: bytes, pace: bool = False) -> int:
    async with ai.model(MODEL).listen(encoding="linear16", sample_rate=RATE, interim_results=True) as s:
        done = await s.transcribe(audio, pace=pace)
    return len(done.events)


def ours_sync(ai: Any, audio: bytes) -> int:
    with ai.model(MODEL).listen(encoding="linear16", sample_rate=RATE, interim_results=True) as s:
        done = s.transcribe(audio)
    return len(done.events)


def client(spec: dict[str, str], seconds: float, rounds: int) -> dict[str, Any]:
    audio = bytes(int(RATE * 2 * seconds))
    sync_ai, async_ai = _clients(spec)
    loop = asyncio.new_event_loop()
    rows: dict[str, Any] = {
        "bare_websockets": lambda: loop.run_until_complete(bare_websockets(spec, audio)),
        "bare_websockets_sync": lambda: bare_websockets_sync(spec, audio),
        "bare_aiohttp": lambda: loop.run_until_complete(bare_aiohttp(spec, audio)),
        "ours_async": lambda: loop.run_until_complete(ours_async(async_ai, audio)),
        "ours_sync": lambda: ours_sync(sync_ai, audio),
    }
    cpu: dict[str, list[float]] = {name: [] for name in rows}
    events: dict[str, int] = {}
    for name, row in rows.items():  # warm up: imports, first connections
        events[name] = row()
    for _ in range(rounds):
        for name, row in rows.items():
            t0 = time.process_time()
            got = row()
            cpu[name].append((time.process_time() - t0) / seconds * 1e6)
            assert got == events[name], f"{name}: {got} events, {events[name]} before"
    out: dict[str, Any] = {"audio_seconds": seconds, "events": events}
    out["cpu_us_per_audio_s"] = {name: statistics.median(v) for name, v in cpu.items()}
    base = out["cpu_us_per_audio_s"]["bare_websockets"]
    out["ratio_vs_bare_websockets"] = {k: v / base for k, v in out["cpu_us_per_audio_s"].items()}
    # Each driver against the same library's client used bare: asyncio for ours_async, sync for ours_sync.
    per = out["cpu_us_per_audio_s"]
    out["ratio_vs_bare"] = {
        "ours_async": per["ours_async"] / per["bare_websockets"],
        "ours_sync": per["ours_sync"] / per["bare_websockets_sync"],
    }

    # 32 concurrent async sessions: every session must see every event a lone session sees.
    short = bytes(RATE * 2 * 3)
    single = loop.run_until_complete(ours_async(async_ai, short))

    async def many() -> list[int]:
        return list(await asyncio.gather(*(ours_async(async_ai, short) for _ in range(32))))

    t0 = time.perf_counter()
    counts = loop.run_until_complete(many())
    out["concurrent"] = {
        "sessions": 32,
        "events_each": single,
        "lost": sum(single - c for c in counts),
        "wall_s": time.perf_counter() - t0,
    }

    # First interim result, paced in real time: how long after the first chunk went out.
    async def first_interim() -> float:
        async with async_ai.model(MODEL).listen(encoding="linear16", sample_rate=RATE, interim_results=True) as s:
            t = time.perf_counter()
            await s.send(bytes(CHUNK))
            event = await s.receive(timeout=5)
            took = time.perf_counter() - t
            assert type(event).__name__ == "Results" and not event.is_final, event
            await s.close()
            return took

    took = statistics.median(loop.run_until_complete(first_interim()) for _ in range(5))
    out["first_interim"] = {"ms": took * 1000, "chunk_ms": 100, "fraction_of_chunk": took / 0.1}
    loop.run_until_complete(async_ai.aclose())
    loop.close()
    return out


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    else:
        print(json.dumps(client(json.loads(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))))
