"""Logs, OpenTelemetry spans and metrics, sync and async, against the emulator (docs/observability.md).

Spans go to an ``InMemorySpanExporter`` through a ``SimpleSpanProcessor``, metrics to an
``InMemoryMetricReader``; both providers are passed to the client (the global providers are checked in
a child process). Every test runs on both clients with the same expectations.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any, Final

import msgspec
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai._core.otel import DURATION_BUCKETS, PROVIDER, TOKEN_BUCKETS
from workers_ai._core.redact import scrub
from workers_ai.errors import InternalServerError
from workers_ai.testing import Emulator

from ._drivers import KINDS, Driver

LLAMA: Final = "@cf/meta/llama-3.1-8b-instruct"
BGE: Final = "@cf/baai/bge-m3"
HELLO: Final[list[Any]] = [{"role": "user", "content": "hello there"}]
GATEWAY_SECRET = "GW-SECRET-1"
HEADERS = {"cf-aig-authorization": f"Bearer {GATEWAY_SECRET}", "x-team": "search"}


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


class Seen:
    """The providers a test hands to the client, and what reached them."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def options(self, **more: Any) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider, **more}

    def metrics(self) -> dict[str, list[Any]]:
        """Each metric's data points as (unit, point), by name."""
        out: dict[str, list[Any]] = {}
        data: Any = self.reader.get_metrics_data()
        resources: list[Any] = list(data.resource_metrics) if data is not None else []
        for rm in resources:
            scopes: list[Any] = list(rm.scope_metrics)
            for sm in scopes:
                found: list[Any] = list(sm.metrics)
                for m in found:
                    points: list[Any] = list(m.data.data_points)
                    name: str = m.name
                    unit: str = m.unit
                    out.setdefault(name, []).extend((unit, p) for p in points)
        return out


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture(params=KINDS)
def drv(request: pytest.FixtureRequest, emu: Emulator) -> Driver:
    return Driver(request.param, emu.account_id, emu.api_token, emu.base_url)


def everything_recorded(seen: Seen, caplog: pytest.LogCaptureFixture) -> str:
    """All attributes, events and log lines as one text, to look for secrets in."""
    parts: list[str] = []
    for sp in seen.spans:
        parts.append(sp.name)
        parts.append(repr(dict(sp.attributes or {})))
        parts += [f"{ev.name} {dict(ev.attributes or {})}" for ev in sp.events]
        parts.append(str(sp.status.description))
    parts += [r.getMessage() for r in caplog.records]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------- spans


def test_chat_span_attributes_and_metrics(drv: Driver, seen: Seen, emu: Emulator) -> None:
    out = drv.call(lambda ai: ai.model(LLAMA).chat(messages=HELLO, max_tokens=50, seed=7), **seen.options())
    assert out.response
    (span,) = seen.spans
    assert span.name == f"chat {LLAMA}" and span.kind is SpanKind.CLIENT
    attrs = dict(span.attributes or {})
    host, port = emu.base_url.split("//")[1].split("/")[0].split(":")
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == PROVIDER == "cloudflare.workers_ai"
    assert attrs["gen_ai.request.model"] == LLAMA
    assert attrs["gen_ai.request.max_tokens"] == 50 and attrs["gen_ai.request.seed"] == 7
    assert attrs["server.address"] == host and attrs["server.port"] == int(port)
    assert isinstance(attrs["gen_ai.usage.input_tokens"], int) and attrs["gen_ai.usage.input_tokens"] > 0
    assert isinstance(attrs["gen_ai.usage.output_tokens"], int) and attrs["gen_ai.usage.output_tokens"] > 0
    assert "gen_ai.input.messages" not in attrs and "gen_ai.output.messages" not in attrs  # content: opt-in
    assert span.status.status_code is StatusCode.UNSET
    (event,) = span.events  # one HTTP attempt
    assert event.name == "workers_ai.http.attempt"
    assert event.attributes is not None and event.attributes["http.response.status_code"] == 200
    assert event.attributes["workers_ai.attempt"] == 1 and event.attributes["workers_ai.cf_ray"]

    metrics = seen.metrics()
    ((unit, duration),) = metrics["gen_ai.client.operation.duration"]
    assert unit == "s" and duration.count == 1 and tuple(duration.explicit_bounds) == DURATION_BUCKETS
    assert duration.attributes["gen_ai.operation.name"] == "chat"
    assert duration.attributes["gen_ai.provider.name"] == PROVIDER and "error.type" not in duration.attributes
    tokens = {p.attributes["gen_ai.token.type"]: (u, p) for u, p in metrics["gen_ai.client.token.usage"]}
    assert set(tokens) == {"input", "output"}
    unit, point = tokens["input"]
    assert unit == "{token}" and tuple(point.explicit_bounds) == TOKEN_BUCKETS
    assert point.sum == attrs["gen_ai.usage.input_tokens"]


def test_a_generic_run_is_described_like_the_typed_method(drv: Driver, seen: Seen) -> None:
    # ai.model(id).run({...}) and .chat(...) send the same request: their spans say the same.
    drv.call(lambda ai: ai.model(LLAMA).run({"messages": HELLO, "max_tokens": 50}), **seen.options())
    (span,) = seen.spans
    attrs = dict(span.attributes or {})
    assert span.name == f"chat {LLAMA}" and attrs["gen_ai.request.max_tokens"] == 50


def test_prompt_is_text_completion_and_embeddings_are_embeddings(drv: Driver, seen: Seen) -> None:
    drv.call(lambda ai: ai.model(LLAMA).generate(prompt="say hi"), **seen.options())
    drv.call(lambda ai: ai.model(BGE).embed(text=["a", "b"]), **seen.options())
    names = [(sp.name, (sp.attributes or {})["gen_ai.operation.name"]) for sp in seen.spans]
    assert names == [(f"text_completion {LLAMA}", "text_completion"), (f"embeddings {BGE}", "embeddings")]


def _read_stream(drv: Driver, seen: Seen, abandon: bool) -> tuple[int, list[str]]:
    """Open a stream, note how many spans had ended before reading, then read it whole or drop it after
    one event; the count of spans ended at open and the texts read."""

    def sync(ai: WorkersAI) -> tuple[int, list[str]]:
        stream = ai.model(LLAMA).chat_stream(messages=HELLO)
        ended_at_open = len(seen.spans)
        texts: list[str] = []
        with stream:
            for ev in stream:
                texts.append(ev.text)
                if abandon:
                    break
        return ended_at_open, texts

    async def run_async(ai: AsyncWorkersAI) -> tuple[int, list[str]]:
        texts: list[str] = []
        async with ai.model(LLAMA).chat_stream(messages=HELLO) as stream:
            ended_at_open = len(seen.spans)
            async for ev in stream:
                texts.append(ev.text)
                if abandon:
                    break
        return ended_at_open, texts

    result: tuple[int, list[str]] = drv.call(sync if drv.kind == "sync" else run_async, **seen.options())
    return result


def test_a_stream_span_lasts_until_the_stream_ends(drv: Driver, seen: Seen) -> None:
    ended_at_open, texts = _read_stream(drv, seen, abandon=False)
    assert ended_at_open == 0 and len(texts) > 1
    (span,) = seen.spans
    attrs = dict(span.attributes or {})
    assert span.name == f"chat {LLAMA}" and attrs["workers_ai.stream.completed"] is True
    first = attrs["gen_ai.response.time_to_first_chunk"]
    assert isinstance(first, float) and 0 < first <= (span.end_time - span.start_time) / 1e9  # type: ignore[operator]
    assert isinstance(attrs["gen_ai.usage.output_tokens"], int)
    assert span.status.status_code is StatusCode.UNSET
    assert seen.metrics()["gen_ai.client.operation.time_to_first_chunk"][0][1].count == 1


def test_an_abandoned_stream_ends_its_span_when_closed(drv: Driver, seen: Seen) -> None:
    ended_at_open, texts = _read_stream(drv, seen, abandon=True)
    assert ended_at_open == 0 and len(texts) == 1
    (span,) = seen.spans
    attrs = dict(span.attributes or {})
    # Ended at close; "completed" says whether the server had sent [DONE] by then (it may have: the reply is short).
    assert isinstance(attrs["workers_ai.stream.completed"], bool) and "gen_ai.response.time_to_first_chunk" in attrs
    assert span.status.status_code is StatusCode.UNSET  # closing early is not an error


def test_a_stream_that_fails_midway_records_the_error(drv: Driver, seen: Seen, emu: Emulator) -> None:
    emu.inject("stream_no_done", times=1, model=LLAMA)
    with pytest.raises(Exception) as info:
        _read_stream(drv, seen, abandon=False)
    (span,) = seen.spans
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == type(info.value).__name__ == "StreamError"


def test_a_stream_whose_connection_breaks_ends_its_span_with_the_error(drv: Driver, seen: Seen, emu: Emulator) -> None:
    # The connection is cut mid-body: the read fails in the transport (not a protocol error), and the span
    # must still end, with the error the user sees.
    emu.inject("reset", times=1, model=LLAMA)
    with pytest.raises(Exception) as info:
        _read_stream(drv, seen, abandon=False)
    (span,) = seen.spans
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == type(info.value).__name__ == "APIConnectionError"
    assert seen.metrics()["gen_ai.client.operation.duration"][0][1].count == 1


def test_api_error_sets_error_type_and_status(drv: Driver, seen: Seen, emu: Emulator) -> None:
    emu.inject("internal_error", times=1, model=BGE)
    with pytest.raises(InternalServerError):
        drv.call(lambda ai: ai.model(BGE).embed(text=["x"]), **seen.options(max_retries=0))
    (span,) = seen.spans
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "InternalServerError"
    ((_, point),) = seen.metrics()["gen_ai.client.operation.duration"]
    assert point.attributes["error.type"] == "InternalServerError"


def test_each_attempt_is_an_event_and_a_retry_is_logged(
    drv: Driver, seen: Seen, emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="workers_ai")
    emu.inject("unavailable", times=1, model=BGE)
    drv.call(lambda ai: ai.model(BGE).embed(text=["x"]), **seen.options())
    (span,) = seen.spans
    attempts = [dict(ev.attributes or {}) for ev in span.events if ev.name == "workers_ai.http.attempt"]
    assert [(a["workers_ai.attempt"], a["http.response.status_code"]) for a in attempts] == [(1, 503), (2, 200)]
    assert (span.attributes or {})["workers_ai.attempts"] == 2
    assert span.status.status_code is StatusCode.UNSET
    http = [r for r in caplog.records if r.name == "workers_ai.http"]
    assert [r.levelno for r in http] == [logging.DEBUG, logging.DEBUG]
    assert "-> 503 in " in http[0].getMessage() and "(attempt 1, cf-ray " in http[0].getMessage()
    assert f"/ai/run/{BGE} -> 200 in " in http[1].getMessage() and "(attempt 2," in http[1].getMessage()
    retries = [r for r in caplog.records if r.levelno == logging.INFO and "retry 1 of" in r.getMessage()]
    assert len(retries) == 1


def test_batch_submit_and_wait_spans_carry_the_request_id(
    drv: Driver, seen: Seen, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="workers_ai")
    payload = {"requests": [{"text": ["x"]}, {"text": ["y"]}]}

    def step(ai: Any) -> Any:
        return drv.wait(ai.model(BGE).submit_batch(payload), poll_interval=0.0)

    result = drv.call(step, **seen.options())
    assert len(result.items) == 2
    submit, wait = seen.spans
    assert submit.name == f"batch_submit {BGE}" and wait.name == f"batch_wait {BGE}"
    rid = (submit.attributes or {})["workers_ai.batch.request_id"]
    assert isinstance(rid, str) and rid and (wait.attributes or {})["workers_ai.batch.request_id"] == rid
    assert (submit.attributes or {})["workers_ai.batch.size"] == 2
    assert (wait.attributes or {})["workers_ai.batch.items"] == 2
    assert [ev.name for ev in wait.events if ev.name.startswith("workers_ai.batch")]  # a state change
    lines = [r.getMessage() for r in caplog.records if r.name == "workers_ai.batch"]
    assert lines[0] == f"batch {rid} for {BGE}: queued (2 requests)" and any("-> done" in line for line in lines)


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temperature": 20.5}


def test_tool_loop_has_a_span_per_round_and_per_tool(drv: Driver, seen: Seen) -> None:
    run = drv.call(lambda ai: ai.model(LLAMA).run_tools(messages=HELLO, tools=[get_weather]), **seen.options())
    assert run.rounds == 1
    names = [sp.name for sp in seen.spans]
    assert names == [f"chat {LLAMA}", "execute_tool get_weather", f"chat {LLAMA}"]
    tool = seen.spans[1]
    attrs = dict(tool.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["gen_ai.tool.name"] == "get_weather"
    assert attrs.get("gen_ai.tool.call.id") == run.calls[0].id  # when the model gave one
    assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs


def test_a_realtime_session_is_one_span(drv: Driver, seen: Seen, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="workers_ai")
    second = bytes(32000)

    def sync(ai: WorkersAI) -> str:
        with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
            return s.transcribe(second).text

    async def run_async(ai: AsyncWorkersAI) -> str:
        async with ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000) as s:
            return (await s.transcribe(second)).text

    text = drv.call(sync if drv.kind == "sync" else run_async, **seen.options())
    assert text
    (span,) = seen.spans
    attrs = dict(span.attributes or {})
    assert span.name == "generate_content @cf/deepgram/nova-3" and attrs["workers_ai.realtime.session"] is True
    assert attrs["workers_ai.realtime.audio_bytes_sent"] == len(second)
    lines = [r.getMessage() for r in caplog.records if r.name == "workers_ai.realtime"]
    assert lines[0] == "realtime @cf/deepgram/nova-3: opening" and "closed after" in lines[-1]


def test_telemetry_false_records_nothing(drv: Driver, seen: Seen) -> None:
    drv.call(lambda ai: ai.model(BGE).embed(text=["x"]), **seen.options(telemetry=False))
    assert seen.spans == [] and seen.metrics() == {}


# ---------------------------------------------------------------------------------------------- what is never recorded


def test_no_attribute_event_or_log_line_holds_a_secret(
    drv: Driver, seen: Seen, emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="workers_ai")
    emu.inject("unavailable", times=1, model=LLAMA)
    options = seen.options(headers=HEADERS, log_bodies=True)
    drv.call(lambda ai: ai.model(LLAMA).chat(messages=HELLO), **options)
    drv.call(lambda ai: ai.model(LLAMA).run_tools(messages=HELLO, tools=[get_weather]), **options)
    recorded = everything_recorded(seen, caplog)
    assert "hello there" in recorded  # the body opt-in shows content in the DEBUG lines...
    assert emu.api_token not in recorded and GATEWAY_SECRET not in recorded  # ...never a credential
    assert "Bearer" not in recorded


def test_bodies_are_logged_only_when_asked_and_truncated(
    drv: Driver, emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="workers_ai")
    long = "z" * 5000
    drv.call(lambda ai: ai.model(BGE).embed(text=[long]))
    assert not any("body" in r.getMessage() for r in caplog.records)
    assert not any("zzz" in r.getMessage() for r in caplog.records)
    caplog.clear()
    drv.call(lambda ai: ai.model(BGE).embed(text=[long]), log_bodies=True)
    bodies = [r.getMessage() for r in caplog.records if "body:" in r.getMessage()]
    assert bodies[0].startswith("request body: ") and bodies[0].endswith("truncated)")
    assert len(bodies[0]) < 2200 and bodies[1].startswith("response body: ")


@pytest.mark.parametrize("mode", ["", "false", "true", "span_only", "span_and_event", "event_only"])
def test_content_only_when_opted_in(drv: Driver, seen: Seen, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode)
    drv.call(lambda ai: ai.model(LLAMA).run_tools(messages=HELLO, tools=[get_weather]), **seen.options())
    chat, tool, _ = seen.spans
    attrs = dict(chat.attributes or {})
    on_span = mode in ("true", "span_only", "span_and_event")
    as_event = mode in ("span_and_event", "event_only")
    assert ("gen_ai.input.messages" in attrs) is on_span
    assert ("gen_ai.tool.call.arguments" in (tool.attributes or {})) is on_span
    details = [ev for ev in chat.events if ev.name == "gen_ai.client.inference.operation.details"]
    assert len(details) == int(as_event)
    if on_span:
        messages = json.loads(str(attrs["gen_ai.input.messages"]))
        assert messages[0] == {"role": "user", "parts": [{"type": "text", "content": "hello there"}]}
    if as_event:
        assert "hello there" in str((details[0].attributes or {})["gen_ai.input.messages"])
    if not (on_span or as_event):
        assert "hello there" not in repr([dict(sp.attributes or {}) for sp in seen.spans])


# ---------------------------------------------------------------------------------------------- reprs and pickles


def test_reprs_and_pickles_mask_header_secrets_and_proxy_passwords(emu: Emulator) -> None:
    proxy = "http://bob:hunter2@proxy.example:3128"
    for cls in (WorkersAI, AsyncWorkersAI):
        ai = cls(
            account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, headers=HEADERS, proxy=proxy
        )
        shown = repr(ai) + repr(ai.options) + repr(list(ai.options.__rich_repr__())) + repr(ai.__reduce__())
        assert GATEWAY_SECRET not in shown and "hunter2" not in shown and emu.api_token not in shown
        assert "'x-team': 'search'" in shown and "http://bob:***@proxy.example:3128" in shown
        copy = pickle.loads(pickle.dumps(ai))
        assert copy.options.headers == HEADERS and copy.options.proxy == proxy  # the copy still works


def test_error_text_is_scrubbed() -> None:
    assert (
        scrub("Cannot connect to proxy http://bob:hunter2@p:3128/ now")
        == "Cannot connect to proxy http://bob:***@p:3128/ now"
    )
    assert scrub("header was Bearer abc.def-1") == "header was Bearer ***"
    assert scrub("nothing secret here") == "nothing secret here"


# ---------------------------------------------------------------------------------------------- from outside


def _child(code: str, emu: Emulator, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **env, "EMU_BASE": emu.base_url, "EMU_ACCOUNT": emu.account_id, "EMU_TOKEN": emu.api_token}
    return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=60)


_CALL = """
import os, sys
from workers_ai import WorkersAI
ai = WorkersAI(account_id=os.environ["EMU_ACCOUNT"], api_token=os.environ["EMU_TOKEN"],
               base_url=os.environ["EMU_BASE"], headers={"cf-aig-authorization": "Bearer GW-SECRET-1"})
ai.model("@cf/baai/bge-m3").embed(text=["from a child"])
"""


@pytest.mark.parametrize("level", ["debug", "info"])
def test_workers_ai_log_env_adds_a_stderr_handler(emu: Emulator, level: str) -> None:
    got = _child(_CALL, emu, WORKERS_AI_LOG=level)
    assert got.returncode == 0, got.stderr
    lines = [line for line in got.stderr.splitlines() if "workers_ai" in line]
    if level == "debug":
        assert len(lines) == 1 and " DEBUG workers_ai.http: POST " in lines[0]
        assert f"/ai/run/{BGE} -> 200 in " in lines[0] and "(attempt 1, cf-ray " in lines[0]
    else:
        assert lines == []
    assert emu.api_token not in got.stderr and GATEWAY_SECRET not in got.stderr


_SET_GLOBALS = """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
"""


@pytest.mark.parametrize("when", ["before the first call", "after the first call"])
def test_global_providers_from_outside(emu: Emulator, when: str) -> None:
    """The global providers, set before the client's first call or later (the first call then records
    nothing, calls from a second later do); ``import workers_ai`` imports no opentelemetry."""
    imports = """
import json, sys
import workers_ai
assert not any(m.startswith("opentelemetry") for m in sys.modules), "imported at import workers_ai"
"""
    report = """
import time
time.sleep(1.1)  # the providers are looked up at most once a second while none is set
ai.model("@cf/baai/bge-m3").embed(text=["again"])
spans = [(s.name, dict(s.attributes)) for s in exporter.get_finished_spans()]
names = [m.name for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
print(json.dumps({"spans": spans, "metrics": names}))
"""
    before = when.startswith("before")
    code = imports + (_SET_GLOBALS if before else "") + _CALL + ("" if before else _SET_GLOBALS) + report
    got = _child(code, emu)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert [name for name, _ in out["spans"]] == [f"embeddings {BGE}"] * (2 if before else 1)
    assert "gen_ai.client.operation.duration" in out["metrics"]
    assert GATEWAY_SECRET not in got.stdout and emu.api_token not in got.stdout


def test_without_the_api_calls_work_and_nothing_is_imported(emu: Emulator) -> None:
    code = (
        textwrap.dedent("""
    import sys
    class NoOtel:  # as if opentelemetry-api were not installed
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(name)
            return None
    sys.meta_path.insert(0, NoOtel())
    """)
        + _CALL
        + textwrap.dedent("""
    assert not any(m.startswith("opentelemetry") for m in sys.modules)
    print("ok")
    """)
    )
    got = _child(code, emu)
    assert got.returncode == 0 and got.stdout.strip() == "ok", got.stderr


def test_async_streams_left_to_the_garbage_collector_end_their_span(emu: Emulator, seen: Seen) -> None:
    async def main() -> None:
        async with AsyncWorkersAI(
            account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **seen.options()
        ) as ai:
            stream = await ai.model(LLAMA).chat_stream(messages=HELLO)
            async for _ in stream:
                break
            del stream

    asyncio.run(main())
    import gc

    gc.collect()
    (span,) = seen.spans  # ended when the stream was collected, though never closed
    assert span.name == f"chat {LLAMA}"


GPT: Final = "@cf/openai/gpt-oss-20b"
LLAMA33: Final = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


class Weather(msgspec.Struct):
    city: str
    temperature: float


def test_reply_id_model_and_finish_reasons_and_json_mode(drv: Driver, seen: Seen) -> None:
    drv.call(lambda ai: ai.model(GPT).chat(messages=HELLO, max_tokens=9), **seen.options())
    drv.call(lambda ai: ai.model(LLAMA33).chat(messages=HELLO, response_format=Weather), **seen.options())
    chat, json_mode = seen.spans
    attrs = dict(chat.attributes or {})
    assert str(attrs["gen_ai.response.id"]).startswith("chatcmpl-") and attrs["gen_ai.response.model"] == GPT
    assert list(attrs["gen_ai.response.finish_reasons"]) in (["stop"], ["length"])  # type: ignore[arg-type]
    assert "gen_ai.output.type" not in attrs and (json_mode.attributes or {})["gen_ai.output.type"] == "json"


def test_unknown_keys_and_deprecations_are_warnings(
    drv: Driver, emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    from workers_ai.errors import ModelDeprecatedError

    caplog.set_level(logging.WARNING, logger="workers_ai")
    with pytest.warns(Warning, match="unknown input key"):
        drv.call(lambda ai: ai.model(BGE).run({"text": ["a"], "bogus": 1}))
    emu.inject("model_deprecated", times=1, model=BGE)
    with pytest.raises(ModelDeprecatedError):
        drv.call(lambda ai: ai.model(BGE).embed(text=["a"]))
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "workers_ai"]
    assert lines[0] == (logging.WARNING, f"{BGE}: unknown input key at $.bogus (sent as given; the API ignores it)")
    assert lines[1][0] == logging.WARNING and lines[1][1].startswith(f"{BGE} is deprecated")
