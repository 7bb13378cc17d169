"""One scenario, both clients: the same calls on ``WorkersAI`` and ``AsyncWorkersAI`` against one emulator
give the same results, the same errors, the same number of requests and the same ``ai.usage``, step by step,
and leave the same OpenTelemetry spans and the same ``workers_ai`` log lines (timings and ids aside).

Each step is written once as ``step(ai)``; the sync run calls it, the async run awaits what it returns
(streams are collected inside ``async with``). A drift in any shared rule (retries, JSON mode, the tool
loop, batches, usage counting, the rate budget, the account endpoints) shows up as a differing row.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from workers_ai import errors
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
GPT = "@cf/openai/gpt-oss-20b"
BGE = "@cf/baai/bge-m3"
HELLO = [{"role": "user", "content": "hello"}]
VOLATILE = {"id", "created", "request_id", "created_at", "modified_at", "cf_ray"}


class Weather(msgspec.Struct):
    city: str
    temperature: float


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temperature": 20.5}


def _failing(emu: Emulator, fault: str, times: int) -> Callable[[Any], Any]:
    def step(ai: Any) -> Any:
        emu.inject(fault, times=times, model=BGE)
        return ai.model(BGE).embed(text=["retry me"])

    return step


def steps(emu: Emulator) -> list[tuple[str, Callable[[Any], Any]]]:
    """The scenario: (name, step). A step returns a value (sync) or an awaitable of it (async)."""
    return [
        ("chat", lambda ai: ai.model(LLAMA).chat(messages=HELLO)),
        ("json mode", lambda ai: ai.model(LLAMA).chat(messages=HELLO, response_format=Weather)),
        ("tool loop", lambda ai: ai.model(LLAMA).run_tools(messages=HELLO, tools=[get_weather])),
        ("tool loop, chat completions", lambda ai: ai.model(GPT).run_tools(messages=HELLO, tools=[get_weather])),
        ("stream", lambda ai: ai.model(LLAMA).chat_stream(messages=HELLO)),
        ("run by id", lambda ai: ai.run(BGE, {"text": ["a", "b"]})),
        ("retried 503", _failing(emu, "unavailable", 1)),
        ("500 after retries", _failing(emu, "internal_error", 3)),
        ("bad input", lambda ai: ai.model(BGE).run({"text": 3})),
        ("batch", lambda ai: ai.model(BGE).submit_batch({"requests": [{"text": ["x"]}, {"text": ["y"]}]})),
        ("to_markdown", lambda ai: ai.to_markdown([("a.html", b"<h1>Title</h1><p>text</p>")])),
        ("to_markdown formats", lambda ai: ai.to_markdown_supported()),
        ("finetunes", lambda ai: ai.finetunes.list()),
        ("universal route", lambda ai: ai.run("openai/gpt-4.1-mini", {"messages": HELLO})),
    ]


def plain(value: Any) -> Any:
    """A comparable form: structs as builtins, volatile ids dropped, errors as (type, message)."""
    if isinstance(value, BaseException):
        return (type(value).__name__, getattr(value, "status", None), re.sub(r"cf-ray \S+", "cf-ray *", str(value)))
    if hasattr(value, "request_id") and hasattr(value, "model") and hasattr(value, "submitted_at"):
        return ("batch job", value.model, value.size)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "__slots__") and not isinstance(value, msgspec.Struct):
        return {k: plain(getattr(value, k)) for k in value.__slots__}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return _drop(msgspec.to_builtins(value, builtin_types=(bytes,), str_keys=True))


def _drop(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _drop(v) for k, v in data.items() if k not in VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(data, list):
        return [_drop(v) for v in data]  # pyright: ignore[reportUnknownVariableType]
    return data


# Span attributes and event attributes that differ from run to run (timings, ids, the server's ray id).
_VOLATILE_ATTRS = {
    "workers_ai.duration_ms",
    "workers_ai.cf_ray",
    "gen_ai.response.time_to_first_chunk",
    "gen_ai.response.id",
    "workers_ai.batch.request_id",
}
_VOLATILE_LOG = [
    (re.compile(r"in [0-9.]+ ?m?s\b"), "in T"),
    (re.compile(r"cf-ray [^)\s]+"), "cf-ray X"),
    (re.compile(r"batch [0-9a-f-]{8,} for"), "batch ID for"),
    (re.compile(r"after [0-9.]+s"), "after T"),
]


class Telemetry(logging.Handler):
    """The spans (in-memory exporter) and ``workers_ai`` log lines of one client's run."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = f"{record.levelname} {record.name}: {record.getMessage()}"
        for pattern, fixed in _VOLATILE_LOG:
            line = pattern.sub(fixed, line)
        self.lines.append(line)

    def __enter__(self) -> Telemetry:
        log = logging.getLogger("workers_ai")
        self._level = log.level
        log.setLevel(logging.DEBUG)
        log.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        log = logging.getLogger("workers_ai")
        log.removeHandler(self)
        log.setLevel(self._level)

    def take(self) -> dict[str, Any]:
        spans = [
            {
                "name": sp.name,
                "kind": sp.kind.name,
                "status": sp.status.status_code.name,
                "attributes": {k: v for k, v in (sp.attributes or {}).items() if k not in _VOLATILE_ATTRS},
                "events": [
                    (ev.name, {k: v for k, v in (ev.attributes or {}).items() if k not in _VOLATILE_ATTRS})
                    for ev in sp.events
                ],
            }
            for sp in self.exporter.get_finished_spans()
        ]
        self.exporter.clear()
        lines, self.lines = self.lines, []
        return {"spans": spans, "log": lines}


def snapshot(ai: Any, emu: Emulator, before: int, seen: Telemetry) -> dict[str, Any]:
    return {"requests": len(emu.requests) - before, "usage": msgspec.to_builtins(ai.usage.total), **seen.take()}


def run_sync(emu: Emulator) -> list[tuple[str, Any, dict[str, Any]]]:
    rows: list[tuple[str, Any, dict[str, Any]]] = []
    with Telemetry() as seen, emu.client(max_retries=2, tracer_provider=seen.provider) as ai:
        ai._sleep = lambda _s: None  # pyright: ignore[reportPrivateUsage]  # retries and polls without waiting
        for name, step in steps(emu):
            before = len(emu.requests)
            try:
                out = step(ai)
                if name == "stream":
                    out = out.collect()
                elif name == "batch":
                    out = (plain(out), out.wait(poll_interval=0.0))
            except errors.WorkersAIError as exc:
                out = exc
            rows.append((name, plain(out), snapshot(ai, emu, before, seen)))
    return rows


def run_async(emu: Emulator) -> list[tuple[str, Any, dict[str, Any]]]:
    async def main() -> list[tuple[str, Any, dict[str, Any]]]:
        with Telemetry() as seen:
            return await steps_async(seen)

    async def steps_async(seen: Telemetry) -> list[tuple[str, Any, dict[str, Any]]]:
        rows: list[tuple[str, Any, dict[str, Any]]] = []

        async def no_wait(_s: float) -> None:
            await asyncio.sleep(0)

        async with emu.async_client(max_retries=2, tracer_provider=seen.provider) as ai:
            ai._sleep_async = no_wait  # pyright: ignore[reportPrivateUsage]
            for name, step in steps(emu):
                before = len(emu.requests)
                try:
                    out = step(ai)
                    if name == "stream":
                        async with out as events:
                            out = await events.collect()
                    else:
                        out = await out if inspect.isawaitable(out) else out
                        if name == "batch":
                            out = (plain(out), await out.wait(poll_interval=0.0))
                except errors.WorkersAIError as exc:
                    out = exc
                rows.append((name, plain(out), snapshot(ai, emu, before, seen)))
        return rows

    return asyncio.run(main())


@pytest.fixture(scope="module")
def both() -> tuple[list[Any], list[Any]]:
    with Emulator() as emu:
        sync_rows = run_sync(emu)
        emu.reset()
        async_rows = run_async(emu)
    return sync_rows, async_rows


@pytest.mark.parametrize("index", range(len(steps(Emulator.__new__(Emulator)))))
def test_both_clients_give_the_same_result_requests_and_usage(index: int, both: tuple[list[Any], list[Any]]) -> None:
    sync_rows, async_rows = both
    assert sync_rows[index] == async_rows[index]


def test_the_scenario_exercises_what_it_names(both: tuple[list[Any], list[Any]]) -> None:
    rows = {name: (out, snap) for name, out, snap in both[0]}
    assert rows["retried 503"][1]["requests"] == 2  # one retry, then the answer
    assert rows["500 after retries"][0][0] == "InternalServerError" and rows["500 after retries"][1]["requests"] == 3
    assert rows["bad input"][0][0] == "InputValidationError" and rows["bad input"][1]["requests"] == 0
    assert rows["tool loop"][1]["requests"] == 2 and rows["json mode"][1]["requests"] == 1
    # Every counted call shows in ai.usage: JSON mode and each tool-loop round included.
    assert rows["tool loop"][1]["usage"]["calls"] == rows["json mode"][1]["usage"]["calls"] + 2
    assert rows["universal route"][0]["model"] == "openai/gpt-4.1-mini"
    assert rows["to_markdown"][0][0]["data"].startswith("# Title")
    # The spans and log lines the comparison covers are there: a retry shows as a second attempt event.
    retried = rows["retried 503"][1]["spans"]
    assert [sp["name"] for sp in retried] == [f"embeddings {BGE}"]
    assert [ev[1]["http.response.status_code"] for ev in retried[0]["events"]] == [503, 200]
    assert rows["500 after retries"][1]["spans"][0]["status"] == "ERROR"
    assert [sp["name"] for sp in rows["batch"][1]["spans"]] == [f"batch_submit {BGE}", f"batch_wait {BGE}"]
    tools = [sp["name"] for sp in rows["tool loop"][1]["spans"]]
    assert tools == [f"chat {LLAMA}", "execute_tool get_weather", f"chat {LLAMA}"]
    assert any(line.startswith("DEBUG workers_ai.http: POST ") for line in rows["chat"][1]["log"])


def test_the_rate_budget_paces_both_clients_alike() -> None:
    limit = {BGE: 60.0}  # one request a second: the 2nd and 3rd calls wait
    with Emulator() as emu:
        slept: list[float] = []
        with emu.client(rate_limit=limit) as ai:
            ai._sleep = slept.append  # pyright: ignore[reportPrivateUsage]
            for _ in range(3):
                ai.model(BGE).embed(text=["x"])

        aslept: list[float] = []

        async def main() -> None:
            async def record(seconds: float) -> None:
                aslept.append(seconds)

            async with emu.async_client(rate_limit=limit) as ai:
                ai._sleep_async = record  # pyright: ignore[reportPrivateUsage]
                for _ in range(3):
                    await ai.model(BGE).embed(text=["x"])

        asyncio.run(main())
    assert len(slept) == len(aslept) == 2
    assert [round(s) for s in slept] == [round(s) for s in aslept]
