"""Every generated model, every input variant, through the real HTTP emulator.

For each variant an example input is synthesized from the model's input schema, posted over HTTP,
and the reply checked against the output schema with ``jsonschema``; the same input then goes through
the SDK (which validates it with its own generated structs) and must decode. Batch-capable models
also run their examples as an async batch; streaming models stream.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import urllib3
from workers_ai import BinaryOutput, WorkersAI, _registry
from workers_ai.families import family_result
from workers_ai.testing import Emulator
from workers_ai.testing._catalog import EXAMPLE_SKIP, ModelSpec
from workers_ai.testing._outputs import branches
from workers_ai.testing._synth import input_variants


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0), check_outputs=True) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def http() -> Iterator[urllib3.PoolManager]:
    pool = urllib3.PoolManager(retries=False)
    yield pool
    pool.clear()


def _post(http: urllib3.PoolManager, emu: Emulator, model: str, body: bytes, query: str = "", **headers: str) -> Any:
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{model}{query}"
    return http.request("POST", url, body=body, headers={"Authorization": f"Bearer {emu.api_token}", **headers})


def _check_json(spec: ModelSpec, value: Any) -> None:
    problem = spec.outputs.validator.first_error(value)
    assert problem is None, f"{spec.model_id}: {problem}"


def _check_decoded(ai: WorkersAI, spec: ModelSpec, decoded: Any, result: Any) -> None:
    """``decoded`` is the output variant the reply's shape names (a struct for an object), and holds the whole reply."""
    variant = ai.model(spec.model_id).decoder.pick(result)
    assert variant is not None, f"{spec.model_id}: no output variant fits {result!r:.200}"
    handle = ai.model(spec.model_id)
    # As the family hands it back: a classifier's list as its list view.
    expected = family_result(handle.info.task, msgspec.convert(result, variant))
    assert type(decoded) is type(expected) and decoded == expected
    if isinstance(result, dict) and typing.get_origin(variant) is not dict:  # a free-form object stays a dict
        assert isinstance(decoded, msgspec.Struct), f"{spec.model_id}: not decoded to a struct"
    # An optional output field is `T | None = None`: an explicit null and an absent key read the same.
    assert _no_nulls(msgspec.to_builtins(decoded)) == _no_nulls(result), (
        f"{spec.model_id}: the decoded value lost or changed fields"
    )


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _examples(spec: ModelSpec) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for label, schema in input_variants(spec.inputs):
        if label == "binary":
            out.append((label, None))
        else:
            out.append((label, spec.inputs.generate(schema, seed=f"{spec.model_id}:{label}", skip=EXAMPLE_SKIP)))
    return out


@pytest.mark.parametrize("model_id", sorted(_registry.MODELS))
def test_every_variant_round_trips_through_http_and_the_sdk(
    model_id: str, emu: Emulator, http: urllib3.PoolManager
) -> None:
    spec = emu.catalog.get(model_id)
    assert spec is not None
    declared = {b.content_type for b in branches(spec)}
    streams = "text/event-stream" in declared
    ai = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, max_retries=0)
    checked = 0
    for label, example in _examples(spec):
        if label == "binary":
            resp = _post(http, emu, model_id, b"\x00\x10" * 512, **{"Content-Type": "application/octet-stream"})
            assert resp.status == 200, resp.data[:300]
            result = json.loads(resp.data)["result"]
            _check_json(spec, result)
            _check_decoded(ai, spec, ai.model(model_id).run(b"\x00\x10" * 512), result)
            checked += 1
            continue
        assert spec.inputs.validator.first_error(example) is None
        if isinstance(example, dict) and "requests" in example:
            _batch(spec, emu, http, example)
            checked += 1
            continue
        resp = _post(http, emu, model_id, json.dumps(example).encode(), **{"Content-Type": "application/json"})
        assert resp.status == 200, resp.data[:300]
        content_type = resp.headers["content-type"]
        decoded = ai.run(model_id, example)
        if content_type == "application/json":
            result = json.loads(resp.data)["result"]
            _check_json(spec, result)
            _check_decoded(ai, spec, decoded, result)
        else:
            assert content_type in declared and resp.data
            assert isinstance(decoded, BinaryOutput) and decoded.content_type == content_type
            assert bytes(decoded) == resp.data  # the emulator answers the same input the same way
        if streams and isinstance(example, dict):
            with ai.run(model_id, example, stream=True) as events:
                collected = events.collect()
            assert (collected.text or collected.tool_calls) and collected.usage is not None and collected.events > 1
        checked += 1
    assert checked


def _batch(spec: ModelSpec, emu: Emulator, http: urllib3.PoolManager, example: dict[str, Any]) -> None:
    body = json.dumps(example).encode()
    queued = _post(http, emu, spec.model_id, body, "?queueRequest=true", **{"Content-Type": "application/json"})
    assert queued.status == 200, queued.data[:300]
    result = json.loads(queued.data)["result"]
    _check_json(spec, result)  # the queued reply fits the "Async Response" branch
    poll = _post(http, emu, spec.model_id, json.dumps({"request_id": result["request_id"]}).encode())
    done = json.loads(poll.data)["result"]
    assert len(done["responses"]) == len(example["requests"])
    for item in done["responses"]:
        assert item["success"], item
        _check_json(spec, item["result"])
