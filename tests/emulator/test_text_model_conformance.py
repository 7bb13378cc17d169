"""Every text-generation model, over plain HTTP: the reply fits the model's output schema (the package's
copy, schema overrides applied) under the real ``jsonschema`` validator, carries usage with integer
counts, and with ``stream: true`` streams server-sent events wherever the schema (with overrides) says
the API streams, ending in a usage event and ``data: [DONE]``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft7Validator
from workers_ai import _registry
from workers_ai.testing import Emulator
from workers_ai.testing._catalog import ModelSpec
from workers_ai.testing._outputs import branches

from tests.emulator._calls import call

TEXT_MODELS = sorted(
    m
    for m in _registry.MODELS
    if (spec := Emulator(start=False).catalog.get(m)) is not None and spec.task_name == "Text Generation"
)
REQUESTS: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": "What is the capital of Portugal?"}]},
    {"prompt": "What is the capital of Portugal?"},
]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(check_outputs=True) as emulator:
        yield emulator


def _ints(usage: Any) -> None:
    counts = {k: v for k, v in usage.items() if k.endswith("tokens")}
    assert counts and all(type(v) is int for v in counts.values()), usage


def _request(spec: ModelSpec) -> dict[str, Any] | None:
    return next((r for r in REQUESTS if spec.inputs.validator.first_error(r) is None), None)


@pytest.mark.parametrize("model", TEXT_MODELS)
def test_text_model_answers_streams_and_counts_in_integers(emu: Emulator, model: str) -> None:
    spec = emu.catalog.get(model)
    assert spec is not None
    body = _request(spec)
    if body is None:  # clef and clairic take questions/fields, not a conversation
        assert "state" in json.dumps(spec.input_schema)
        return
    resp = call(emu, "POST", f"ai/run/{model}", body)
    assert resp.status == 200, resp.data[:300]
    out = json.loads(resp.data)["result"]
    json_branches = [b.schema for b in branches(spec) if b.kind == "json"]
    assert any(Draft7Validator(s).is_valid(out) for s in json_branches), (model, out)
    assert "usage" in out, f"{model}: no usage"
    _ints(out["usage"])
    if not any(b.kind == "stream" for b in branches(spec)):
        return
    streamed = call(emu, "POST", f"ai/run/{model}", {**body, "stream": True})
    assert streamed.status == 200 and streamed.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in streamed.data.decode().split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]" and len(events) > 2
    payloads = [json.loads(e) for e in events[:-1]]
    _ints(payloads[-1]["usage"])
    text = "".join(
        p.get("response") or "".join((c.get("delta") or {}).get("content") or "" for c in p.get("choices", []))
        for p in payloads
    )
    whole = out.get("response") if "response" in out else out["choices"][0]["message"]["content"]
    assert text == whole  # the stream says what the whole reply says


def test_gpt_oss_models_answer_messages_in_one_shape() -> None:
    with Emulator() as emu:
        shapes = set()
        for model in ("@cf/openai/gpt-oss-120b", "@cf/openai/gpt-oss-20b"):
            body = {"messages": [{"role": "user", "content": "hi"}]}
            out = json.loads(call(emu, "POST", f"ai/run/{model}", body).data)["result"]
            shapes.add(out.get("object"))
        assert shapes == {"chat.completion"}
