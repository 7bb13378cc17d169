"""Replies, differentially: every instance of a model's effective output schema, wrapped in the API's
envelope, decodes into the typed result and round-trips; none is refused.

For every model with a JSON output (grouped by output schema), hypothesis-jsonschema draws instances of
its JSON branches (``_cases``: the oracle and its reading of ``oneOf``); a recording server on 127.0.0.1
answers with each one in the envelope, and the model is called through ``run()`` and through every
typed method whose reply type is the variant the instance is. The decoded result, encoded back with
msgspec, must equal the instance modulo what the schema allows: keys it does not declare (the typed
result has no place for them), ``null`` for an absent optional field, ``3`` for ``3.0``. The first
model of each group runs on the async client too, and its typed methods; the group's other models (the
same shape, so the same types and methods) are called through ``run()``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from workers_ai import AsyncWorkersAI, BinaryOutput, WorkersAI, _registry
from workers_ai.errors import UnknownInputWarning, WorkersAIError
from workers_ai.testing._catalog import EXAMPLE_SKIP, Catalog
from workers_ai.testing._synth import input_variants

from tests.conftest import ACCOUNT, TOKEN
from tests.fuzz._cases import (
    as_floats,
    examples,
    group_id,
    oracle,
    override_facts,
    override_note,
    read,
    same_json,
    strategy,
)
from tests.fuzz._wire import Recorder, envelope
from tests.fuzz.test_requests import typed_methods

CATALOG = Catalog.from_package()


def json_branches(schema: Any) -> Any:
    """The output schema without the branches that are not JSON (raw media, event streams), or None."""
    branches = schema.get("anyOf") if isinstance(schema, dict) else None
    if branches is None:
        return None if _not_json(schema) else schema
    kept = [b for b in branches if not _not_json(b)]
    return {**{k: v for k, v in schema.items() if k != "anyOf"}, "anyOf": kept} if kept else None


def _not_json(branch: Any) -> bool:
    kind = branch.get("contentType", "application/json") if isinstance(branch, dict) else ""
    return isinstance(branch, dict) and (branch.get("format") == "binary" or kind != "application/json")


def _groups() -> list[tuple[str, ...]]:
    by_schema: dict[str, list[str]] = {}
    for model_id in sorted(_registry.MODELS):
        schema = json_branches(read(model_id, "output"))
        if schema is not None:
            by_schema.setdefault(json.dumps(schema, sort_keys=True), []).append(model_id)
    return [tuple(ids) for ids in by_schema.values()]


GROUPS = _groups()


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


@pytest.fixture(scope="module")
def ai(recorder: Recorder) -> Iterator[WorkersAI]:
    client = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=recorder.base_url, max_retries=0)
    yield client
    client.close()


@pytest.fixture(scope="module")
def aio(recorder: Recorder) -> Iterator[tuple[asyncio.AbstractEventLoop, AsyncWorkersAI]]:
    loop = asyncio.new_event_loop()
    client = AsyncWorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=recorder.base_url, max_retries=0)
    yield loop, client
    loop.run_until_complete(client.aclose())
    loop.close()


# ----------------------------------------------------------------------------- what a reply is compared with


def declared(schema: Any, value: Any) -> Any:
    """``value`` with only what ``schema`` declares: object keys it lists (in any alternative that fits),
    nulls left out (an absent optional field decodes to None too)."""
    if not isinstance(schema, dict):
        return _no_nulls(value)
    branches = [b for b in (schema.get("anyOf") or []) if isinstance(b, dict) and oracle(b).is_valid(value)]
    if isinstance(value, dict):
        props: dict[str, Any] = {}
        for node in [schema, *branches]:
            props.update(node.get("properties") or {})
        extra = schema.get("additionalProperties")
        if not props:
            return {k: declared(extra, v) for k, v in value.items() if v is not None}
        return {k: declared(props[k], v) for k, v in value.items() if k in props and v is not None}
    if isinstance(value, list):
        items = next((b.get("items") for b in [schema, *branches] if "items" in b), None)
        return [declared(items, v) for v in value]
    return value


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def branch_of(schema: Any, decoded: Any) -> Any:
    """The root alternative the decoded result's struct was made from (its keys are the struct's), else
    the whole schema."""
    fields = getattr(type(decoded), "__struct_encode_fields__", None)
    for branch in schema.get("anyOf") or [] if isinstance(schema, dict) else []:
        if fields is not None and isinstance(branch, dict) and set(branch.get("properties") or ()) == set(fields):
            return branch
    return schema


def round_trips(model_id: str, what: str, schema: Any, instance: Any, decoded: Any) -> None:
    if isinstance(decoded, BinaryOutput):
        return  # a media method hands base64 media JSON back as bytes, by design
    back = _no_nulls(msgspec.to_builtins(decoded))
    want = declared(branch_of(schema, decoded), instance)
    assert same_json(back, want), (
        f"{model_id} {what}: the typed result does not give back the reply\n"
        f"  reply:   {_shown(instance)}\n  decoded: {_shown(back)}\n  wanted:  {_shown(want)}"
    )


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) < 600 else text[:600] + "..."


# ----------------------------------------------------------------------------- the calls that read a reply


@functools.cache
def _example(model_id: str, keys: frozenset[str] | None) -> Any:
    """A valid request: of the input variant declaring exactly ``keys`` (a typed method's), or any."""
    spec = CATALOG.get(model_id)
    assert spec is not None
    for label, schema in input_variants(spec.inputs):
        props = frozenset((schema.get("properties") or {}) if isinstance(schema, dict) else ())
        if label == "binary" or "requests" in props or (keys is not None and props != keys):
            continue
        return spec.inputs.generate(schema, seed=f"{model_id}:{label}", skip=EXAMPLE_SKIP)
    return b"RIFF\x00\x00\x00\x00WAVE" if keys is None else None


def reply_calls(client: Any, model_id: str, decoded_as: type[Any] | None) -> list[tuple[str, Callable[[], Any]]]:
    """``run()`` with a valid request, and each typed method whose reply type is ``decoded_as``."""
    out: list[tuple[str, Callable[[], Any]]] = [("run()", lambda: client.run(model_id, _example(model_id, None)))]
    handle = client.model(model_id)
    for name, op in typed_methods(handle):
        if op.expect is None or decoded_as is None or op.expect is not decoded_as:
            continue
        by_wire = {f.encode_name: f.name for f in msgspec.structs.fields(op.request)}
        example = _example(model_id, frozenset(by_wire))
        if not isinstance(example, dict):
            continue
        arg_of = {field: arg for arg, field in op.names.items()}
        args = {arg_of.get(by_wire[k], by_wire[k]): v for k, v in example.items() if k != "stream"}
        method = getattr(handle, name)
        out.append((f"{name}()", lambda method=method, args=args: method(**args)))
    return out


def decodes(
    recorder: Recorder,
    model_id: str,
    what: str,
    call: Callable[[], Any],
    instance: Any,
    drive: Callable[[Any], Any],
    note: str = "",
) -> Any:
    recorder.replies.append(envelope(instance))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownInputWarning)
            return drive(call())
    except WorkersAIError as exc:
        pytest.fail(f"{model_id} {what}: refused a valid reply: {exc}\n  reply: {_shown(instance)}\n  {note}")
    finally:
        recorder.replies.clear()


@pytest.mark.parametrize("models", GROUPS, ids=[group_id(g, "output") for g in GROUPS])
def test_replies_follow_the_output_schema(
    models: tuple[str, ...],
    recorder: Recorder,
    ai: WorkersAI,
    aio: tuple[asyncio.AbstractEventLoop, AsyncWorkersAI],
    record_property: Callable[[str, object], None],
) -> None:
    schema = json_branches(read(models[0], "output"))
    loop, async_client = aio

    @examples()
    @given(drawn=strategy(schema), floats=st.booleans())
    def check(drawn: Any, floats: bool) -> None:
        instance = as_floats(drawn) if floats else drawn
        assert oracle(schema).is_valid(instance)
        for i, model_id in enumerate(models):
            clients: list[tuple[Any, Callable[[Any], Any]]] = [(ai, lambda value: value)]
            if i == 0:
                clients.append((async_client, loop.run_until_complete))
            note = override_note(model_id, "output", instance, True)
            for client, drive in clients:
                run = reply_calls(client, model_id, None)[0][1]
                decoded = decodes(recorder, model_id, "run()", run, instance, drive, note)
                round_trips(model_id, "run()", schema, instance, decoded)
                if i > 0:
                    continue  # the group's other models share the first one's types and methods
                for what, call in reply_calls(client, model_id, type(decoded))[1:]:
                    typed = decodes(recorder, model_id, what, call, instance, drive, note)
                    round_trips(model_id, what, schema, instance, typed)

    check()
    for model_id in models:  # what the property followed: the override, where one states a fact
        for fact in override_facts(model_id, "output"):
            record_property(f"override {model_id}", fact)
