"""Requests, differentially: what the model's effective input schema accepts is sent as given, what it
refuses is refused before sending.

For every model with a schema (grouped by input schema, so each distinct schema is drawn from once and
every model of the group is checked with the same instances), hypothesis-jsonschema draws valid
instances (``_cases``: the oracle and how it reads ``oneOf`` and ``format: binary``). Each one goes
through ``run()`` (a ``requests`` batch with ``queue_request=True``, the queue being where the API takes
it) and through every typed method whose arguments cover it, to a recording server on 127.0.0.1: the
server must receive exactly one request carrying the instance, key for key and value for value (read
back from JSON, a multipart form or a raw body with query parameters). Then single-keyword breaks of it
that the oracle refuses go the same ways: each must raise a ``WorkersAIError`` naming the model and the
path of the break, and nothing may reach the server. The first model of each group also runs its checks
on the async client, which shares every rule with the sync one; the group's other models (the same
shape, so the same methods) are checked through ``run()``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from workers_ai import AsyncWorkersAI, WorkersAI, _registry
from workers_ai._handles.ops import Op
from workers_ai.errors import InputValidationError, UnknownInputWarning, WorkersAIError

from tests.conftest import ACCOUNT, TOKEN
from tests.fuzz._cases import (
    Break,
    as_floats,
    breaks,
    examples,
    group_id,
    json_path,
    oracle,
    override_facts,
    override_note,
    read,
    same_json,
    strategy,
)
from tests.fuzz._wire import Recorder, sent_instance

BREAKS_PER_INSTANCE = 3


def _groups() -> list[tuple[str, ...]]:
    by_schema: dict[str, list[str]] = {}
    for model_id in sorted(_registry.MODELS):
        by_schema.setdefault(json.dumps(read(model_id, "input"), sort_keys=True), []).append(model_id)
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


# ----------------------------------------------------------------------------- the ways a request is made

Call = Callable[[], Any]


def typed_methods(handle: Any) -> list[tuple[str, Op[Any]]]:
    """The handle's generated methods and their recipes (``*_stream`` twins left out)."""
    out: list[tuple[str, Op[Any]]] = []
    for name in sorted(dir(type(handle))):
        fn = getattr(type(handle), name)
        code = getattr(fn, "__code__", None)
        if name.startswith("_") or name.endswith("_stream") or code is None:
            continue
        op = next((fn.__globals__.get(n) for n in code.co_names if isinstance(fn.__globals__.get(n), Op)), None)
        if op is not None:
            out.append((name, op))
    return out


def _arguments(op: Op[Any], instance: dict[str, Any], complete: bool) -> dict[str, Any] | None:
    """The keyword arguments that make ``op``'s request ``instance``, or None when the method cannot
    (``complete``: the instance must have every key the method requires)."""
    by_wire = {f.encode_name: f for f in msgspec.structs.fields(op.request)}
    if not instance.keys() <= by_wire.keys() or (op.streams and "stream" in instance):
        return None
    if op.first is not None and op.names.get(op.first, op.first) not in {
        f.name for f in by_wire.values() if f.encode_name in instance
    }:
        return None  # the positional argument left out: Python itself refuses the call
    required = (f.encode_name for f in by_wire.values() if f.required and f.encode_name != "stream")
    if complete and any(k not in instance for k in required):
        return None
    arg_of = {field: arg for arg, field in op.names.items()}
    return {arg_of.get(by_wire[k].name, by_wire[k].name): v for k, v in instance.items()}


def _branch_accepts(model_id: str, op: Op[Any], instance: Any) -> bool:
    """Whether the input branch ``op`` sends (the one declaring exactly its fields) accepts ``instance``."""
    wire = {f.encode_name for f in msgspec.structs.fields(op.request)}
    for branch in _branches(read(model_id, "input")):
        if set(branch.get("properties") or {}) == wire:
            return oracle(branch).is_valid(instance)
    return False


def _branches(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for key in ("anyOf", "allOf"):
            for branch in schema.get(key) or []:
                yield from _branches(branch)


def calls(
    client: Any, model_id: str, instance: Any, run_async: Callable[[Any], Any] | None, valid: Any = None
) -> list[tuple[str, Call]]:
    """Every way ``instance`` can be sent to ``model_id``: ``(what, call)``. For a break of the instance
    ``valid``, the typed methods are those of ``valid``'s input variant."""
    drive: Callable[[Any], Any] = run_async or (lambda value: value)
    handle = client.model(model_id)
    if not isinstance(instance, dict):  # a raw-body branch: the bytes themselves
        try:
            data = base64.b64decode(instance, validate=True) if isinstance(instance, str) else instance
        except ValueError:
            return []  # no bytes are this text: nothing a caller can send
        return [("run(bytes)", lambda: drive(client.run(model_id, data)))]
    if "requests" in instance:
        out = [("run(queue_request=True)", lambda: drive(client.run(model_id, instance, queue_request=True)))]
        if list(instance) == ["requests"] and hasattr(handle, "batch"):
            out.append(("batch()", lambda: drive(handle.batch(instance["requests"]))))
        return out
    out = [("run()", lambda: drive(client.run(model_id, instance)))]
    for name, op in typed_methods(handle):
        args = _arguments(op, instance, complete=valid is None)
        if args is not None and _branch_accepts(model_id, op, instance if valid is None else valid):
            method = getattr(handle, name)
            out.append((f"{name}()", lambda method=method, args=args: drive(method(**args))))
    return out


# ----------------------------------------------------------------------------- the properties


def sends_as_given(recorder: Recorder, model_id: str, what: str, call: Call, instance: Any, note: str = "") -> None:
    recorder.take()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownInputWarning)  # unknown keys: sent as given, with a warning
            call()
    except InputValidationError as exc:
        pytest.fail(f"{model_id} {what}: refused a valid request: {exc}\n  instance: {_shown(instance)}\n  {note}")
    except WorkersAIError:
        pass  # after sending: the recorder's reply is not this model's answer
    sent = recorder.take()
    assert len(sent) == 1, f"{model_id} {what}: {len(sent)} requests sent for {_shown(instance)}"
    got = sent_instance(sent[0], instance)
    assert same_json(got, instance), (
        f"{model_id} {what}: the request on the wire differs from the instance\n"
        f"  instance: {_shown(instance)}\n  sent:     {_shown(got)}\n  {note}"
    )


def refuses(recorder: Recorder, model_id: str, what: str, call: Call, broken: Break, note: str = "") -> None:
    recorder.take()
    exc: WorkersAIError | None = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownInputWarning)
            call()
    except WorkersAIError as raised:
        exc = raised
    sent = recorder.take()
    shown = f"{model_id} {what}: {broken}: {_shown(broken.instance)}\n  {note}"
    assert not sent and exc is not None, f"sent an invalid request: {shown}"
    assert isinstance(exc, InputValidationError), f"{exc!r}: {shown}"
    assert exc.model_id == model_id and str(exc).startswith(model_id + ":"), f"{what}: error names no model: {exc}"
    assert names_the_place(exc.path, broken), f"the error says: {exc}: {shown}"


def names_the_place(reported: str, broken: Break) -> bool:
    """The error's path is the break's, its parent's (a missing key, a union that fits no branch there), for
    a missing key a sibling's (the key the closest alternative lacks), for a combination ``not`` allows one
    of its keys (JSON mode's ``response_format`` with ``stream``)."""
    at = json_path(broken.path)
    parent = json_path(broken.path[:-1])
    if reported in (at, parent):
        return True
    child = reported[len(at) :] if reported.startswith(at) else ""
    if broken.keyword == "not":
        return child.startswith(".") and not any(c in child[1:] for c in ".[")
    return broken.keyword == "required" and reported.startswith(parent) and reported.count(".") == at.count(".")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) < 600 else text[:600] + "..."


@pytest.mark.parametrize("models", GROUPS, ids=[group_id(g, "input") for g in GROUPS])
def test_requests_follow_the_input_schema(
    models: tuple[str, ...],
    recorder: Recorder,
    ai: WorkersAI,
    aio: tuple[asyncio.AbstractEventLoop, AsyncWorkersAI],
    record_property: Callable[[str, object], None],
) -> None:
    schema = read(models[0], "input")
    loop, async_client = aio

    @examples()
    @given(drawn=strategy(schema), floats=st.booleans(), data=st.data())
    def check(drawn: Any, floats: bool, data: st.DataObject) -> None:
        instance = as_floats(drawn) if floats else drawn
        assert oracle(schema).is_valid(instance)
        found = breaks(schema, instance)
        # A break our override makes (the published schema accepts it) first: the property follows it.
        overridden = [b for b in found if any(override_note(m, "input", b.instance, False) for m in models)]
        rest = [b for b in found if b not in overridden]
        picked = [*overridden[:1], *(data.draw(st.permutations(rest)) if rest else [])][:BREAKS_PER_INSTANCE]
        for i, model_id in enumerate(models):
            clients: list[tuple[Any, Any]] = [(ai, None)]
            if i == 0:
                clients.append((async_client, loop.run_until_complete))
            note = override_note(model_id, "input", instance, True)
            for client, run_async in clients:
                # The group's other models share the first one's shape: run() alone for them.
                ways = calls(client, model_id, instance, run_async)[: None if i == 0 else 1]
                for what, call in ways:
                    sends_as_given(recorder, model_id, what, call, instance, note)
                for broken in picked:
                    said = override_note(model_id, "input", broken.instance, False)
                    ways = calls(client, model_id, broken.instance, run_async, instance)[: None if i == 0 else 1]
                    for what, call in ways:
                        refuses(recorder, model_id, what, call, broken, said)

    check()
    for model_id in models:  # what the property followed: the override, where one states a fact
        for fact in override_facts(model_id, "input"):
            record_property(f"override {model_id}", fact)
