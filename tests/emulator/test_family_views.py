"""Family conformance: every generated model of a family, on the emulator, offers its family's view with
the fields present, typed and filled (text and integer usage on every text model, tool-call arguments as
dicts, vectors and dimensions on every embedding model, a transcript on every ASR model, media bytes that
save to exactly the decoded wire bytes); and one wire sample per text shape decodes to the same view."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from workers_ai import BinaryOutput, ToolCall, WorkersAI, _registry
from workers_ai.families import EmbeddingView, MediaView, TextView, TranscriptView
from workers_ai.testing import Emulator
from workers_ai.testing._catalog import EXAMPLE_SKIP
from workers_ai.testing._synth import input_variants

from tests._server import ScriptedServer, ok

MODULES = {mid: module for mid, (module, _handle) in _registry.MODELS.items()}


def _module(model_id: str) -> Any:
    import importlib

    return importlib.import_module(f"workers_ai.{MODULES[model_id]}")


def _has_text_view(model_id: str) -> bool:
    module = _module(model_id)
    return any(isinstance(v, type) and issubclass(v, TextView) for v in vars(module).values())


TASKS = {mid: str(_module(mid).INFO.task) for mid in sorted(MODULES)}
# Text generation models that answer with text (clef and clairic answer scores and extractions instead).
TEXT = [m for m, t in TASKS.items() if t == "Text Generation" and _has_text_view(m)]
NOT_TEXT = sorted(m for m, t in TASKS.items() if t == "Text Generation" and m not in TEXT)


def test_only_the_scoring_models_of_the_task_have_no_text_view() -> None:
    assert all(m.startswith(("@cf/cloudflare/clef", "@cf/cloudflare/clairic")) for m in NOT_TEXT), NOT_TEXT


EMBEDDINGS = [m for m, t in TASKS.items() if t == "Text Embeddings"]
ASR = [m for m, t in TASKS.items() if t == "Automatic Speech Recognition"]
MEDIA = [m for m, t in TASKS.items() if t in ("Text-to-Image", "Text-to-Speech")]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0)) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def ai(emu: Emulator) -> Iterator[WorkersAI]:
    with WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_retries=0) as c:
        yield c


def _examples(emu: Emulator, model_id: str) -> list[Any]:
    """One synthesized JSON input per (non-batch) input variant of the model."""
    spec = emu.catalog.get(model_id)
    assert spec is not None
    out: list[Any] = []
    for label, schema in input_variants(spec.inputs):
        if label == "binary":
            continue
        example = spec.inputs.generate(schema, seed=f"{model_id}:{label}", skip=EXAMPLE_SKIP)
        if isinstance(example, dict) and "requests" in example:
            continue
        out.append(example)
    return out


def _check_text(model_id: str, reply: Any) -> None:
    assert isinstance(reply, TextView), f"{model_id}: {type(reply).__name__} has no text view"
    assert isinstance(reply.text, str)
    usage = reply.usage
    counts = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    assert all(type(n) is int for n in counts), (model_id, counts)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens > 0, (model_id, counts)
    calls = reply.tool_calls
    assert isinstance(calls, list) and all(isinstance(c, ToolCall) for c in calls)
    assert all(isinstance(c.arguments, dict) and c.name for c in calls), (model_id, calls)
    assert reply.text or calls, f"{model_id}: neither text nor a tool call"
    assert reply.finish_reason is None or isinstance(reply.finish_reason, str)
    assert reply.reasoning is None or isinstance(reply.reasoning, str)


@pytest.mark.parametrize("model_id", TEXT)
def test_every_text_model_reads_alike(model_id: str, emu: Emulator, ai: WorkersAI) -> None:
    handle: Any = ai.model(model_id)
    checked = 0
    if hasattr(handle, "chat"):
        reply = handle.chat(messages=[{"role": "user", "content": "Say hello in three words."}])
        _check_text(model_id, reply)
        assert reply.text, f"{model_id}: a plain question got no text"
        checked += 1
    for example in _examples(emu, model_id):
        if isinstance(example, dict) and "response_format" in example:
            continue  # JSON mode is the structured-outputs suite's
        _check_text(model_id, ai.run(model_id, example))
        checked += 1
    assert checked


def _handles() -> dict[str, Any]:
    offline = WorkersAI(account_id="a" * 32, api_token="t")
    return {m: offline.model(m) for m in TEXT}


def _takes_tools(handle: Any) -> bool:
    from tests._params import keywords

    return hasattr(handle, "chat") and "tools" in keywords(handle.chat)


HANDLES = _handles()
STREAMING = [m for m, h in HANDLES.items() if hasattr(h, "chat_stream")]
TOOLS = [m for m, h in HANDLES.items() if _takes_tools(h)]


def test_text_families_cover_the_catalog() -> None:
    """The parametrised suites below cover (nearly) every text model: the overrides gave the older models
    their event stream, and most take tools."""
    assert len(STREAMING) >= len(TEXT) - 8, sorted(set(TEXT) - set(STREAMING))
    for older in (
        "@cf/meta/llama-2-7b-chat-int8",
        "@hf/mistral/mistral-7b-instruct-v0.2",
        "@cf/qwen/qwen1.5-7b-chat-awq",
    ):
        assert older in STREAMING, older
    assert len(TOOLS) >= 20


@pytest.mark.parametrize("model_id", STREAMING)
def test_every_streaming_text_model_streams_text_then_usage(model_id: str, ai: WorkersAI) -> None:
    handle: Any = ai.model(model_id)
    with handle.chat_stream(messages=[{"role": "user", "content": "Tell me a short story."}]) as events:
        seen = list(events)
    assert all(isinstance(e.text, str) for e in seen)
    assert "".join(e.text for e in seen), f"{model_id}: no text deltas"
    final = [e.usage for e in seen if e.usage is not None]
    assert final, f"{model_id}: the stream did not end with usage"
    assert type(final[-1].total_tokens) is int and final[-1].total_tokens > 0


@pytest.mark.parametrize("model_id", TOOLS)
def test_every_tool_calling_text_model_gives_dict_arguments(model_id: str, ai: WorkersAI) -> None:
    handle: Any = ai.model(model_id)

    def get_weather(city: str) -> str:
        """Current weather of a city."""
        return "sunny"

    reply = handle.chat(messages=[{"role": "user", "content": "Use get_weather for Paris."}], tools=[get_weather])
    _check_text(model_id, reply)
    assert reply.tool_calls, f"{model_id}: the emulator was asked to call a tool"
    call = reply.tool_calls[0]
    assert call.name == "get_weather" and isinstance(call.arguments["city"], str)


@pytest.mark.parametrize("model_id", EMBEDDINGS)
def test_every_embedding_model_has_vectors_and_dimensions(model_id: str, emu: Emulator, ai: WorkersAI) -> None:
    out = ai.model(model_id).embed(text=["a llama in the meadow", "an orange cloud"])
    assert isinstance(out, EmbeddingView)
    vectors, dims = out.vectors, out.dimensions
    assert len(vectors) == 2 and type(dims) is int and dims > 0
    assert all(len(v) == dims and all(type(x) is float for x in v) for v in vectors), model_id
    for example in _examples(emu, model_id):  # every other variant that returns vectors reads the same
        other = ai.run(model_id, example)
        if isinstance(other, EmbeddingView):
            assert all(len(v) == other.dimensions for v in other.vectors), model_id


@pytest.mark.parametrize("model_id", ASR)
def test_every_speech_model_has_a_transcript(model_id: str, emu: Emulator, ai: WorkersAI) -> None:
    outs = [ai.run(model_id, example) for example in _examples(emu, model_id)]
    if not outs:  # raw-body-only models
        outs = [ai.model(model_id).run(b"RIFF\x00\x00\x00\x00WAVE" + b"\x00" * 64)]
    for out in outs:
        text = out.text
        assert isinstance(text, str) and text, (model_id, out)
    if model_id == "@cf/deepgram/nova-3":
        assert all(isinstance(o, TranscriptView) for o in outs)


@pytest.mark.parametrize("model_id", MEDIA)
def test_every_media_model_saves_the_decoded_wire_bytes(
    model_id: str, emu: Emulator, ai: WorkersAI, tmp_path: Path
) -> None:
    checked = 0
    for i, example in enumerate(_examples(emu, model_id)):
        out = ai.run(model_id, example)
        assert isinstance(out, (BinaryOutput, MediaView)), (model_id, type(out))
        data = out.data
        if isinstance(out, MediaView):
            wire = getattr(out, "image", None) or getattr(out, "audio", None)
            assert isinstance(wire, str) and data == base64.b64decode(wire)
        else:
            assert data == bytes(out)
        assert data and isinstance(out.content_type, str) and "/" in out.content_type
        path = tmp_path / f"{i}.bin"
        out.save(path)
        assert path.read_bytes() == data
        checked += 1
    assert checked


# ------------------------------------------------------------------ one wire sample per text shape

USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
CLASSIC = {
    "response": "Hello there!",
    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    "usage": USAGE,
}
CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1764000000,
    "model": "@cf/openai/gpt-oss-20b",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Hello there!",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
        }
    ],
    "usage": USAGE,
}
RESPONSES = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1764000000,
    "model": "@cf/openai/gpt-oss-20b",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello there!"}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
    ],
    "usage": {"input_tokens": 7, "output_tokens": 5, "total_tokens": 12},
}


def test_one_sample_of_each_text_shape_decodes_to_the_same_view() -> None:
    from workers_ai.models.cf.meta.llama_3_1_8b_instruct import TextGenerationOutput
    from workers_ai.models.cf.openai.gpt_oss_20b import ChatCompletionOutput, ResponsesOutput

    views = [
        msgspec.convert(CLASSIC, TextGenerationOutput),
        msgspec.convert(CHAT, ChatCompletionOutput),
        msgspec.convert(RESPONSES, ResponsesOutput),
    ]
    seen = set()
    for view in views:
        calls = [(c.name, c.arguments) for c in view.tool_calls]
        usage = (view.usage.prompt_tokens, view.usage.completion_tokens, view.usage.total_tokens)
        seen.add((view.text, json.dumps(calls), usage))
    assert seen == {("Hello there!", json.dumps([("get_weather", {"city": "Paris"})]), (7, 5, 12))}
    # The wire struct is the result itself: nothing the API sent is lost.
    assert views[1].choices[0].message.tool_calls is not None and views[2].output[0].type == "message"


def test_unparseable_tool_arguments_keep_the_reply_with_the_text_and_the_problem(server: ScriptedServer) -> None:
    # The schema says only `string`, and models do emit malformed arguments: the reply is valid, so the
    # user gets it whole, each call with the text as sent and what is wrong with it.
    from workers_ai.models.cf.openai.gpt_oss_20b import ChatCompletionOutput

    bad = json.loads(json.dumps(CHAT))
    bad["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": '
    server.script(ok(bad))
    client = WorkersAI(
        account_id="0123456789abcdef0123456789abcdef", api_token="t", base_url=server.base_url, max_retries=0
    )
    for reply in (
        msgspec.convert(bad, ChatCompletionOutput),
        client.model("@cf/openai/gpt-oss-20b").chat(messages=[{"role": "user", "content": "hi"}]),
    ):
        (call,) = reply.tool_calls
        assert (call.name, call.arguments, call.raw_arguments) == ("get_weather", {}, '{"city": ')
        assert call.arguments_error is not None and "not valid JSON" in call.arguments_error
