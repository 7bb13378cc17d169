"""Every generated model: a reply missing a field the schema (or the documented per-task rule) says is
always returned raises ResponseDecodeError naming the model and the field, on the direct decode path
(method knows its output type) and on the union path (``run()``); a complete reply decodes.
And no output type anywhere carries ``UnsetType``."""

from __future__ import annotations

import importlib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from workers_ai import WorkersAI, errors
from workers_ai._registry import MODELS
from workers_ai._sync.session import Reply
from workers_ai.testing._synth import Synthesizer

from codegen.draft import always_returned, output_rule
from codegen.load import load_schemas
from codegen.plan import ModelPlan, plan_models
from codegen.variants import variant_schemas

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plans() -> list[ModelPlan]:
    loaded = load_schemas(ROOT / "schemas")
    built, _shared = plan_models(loaded.models, [])
    assert len(built) == len(MODELS)
    return built


def _struct_outputs(plan: ModelPlan) -> Iterator[tuple[type[Any], dict[str, Any]]]:
    """(variant struct, a complete schema-valid example) for each JSON object output of a model."""
    module = importlib.import_module(f"workers_ai.{plan.module}")
    branches = variant_schemas(plan.source.output)
    for out in plan.json_outputs:
        cls = getattr(module, out.class_name or "")
        if not isinstance(cls, type) or not issubclass(cls, msgspec.Struct):
            continue
        branch = always_returned(branches[out.index], output_rule(plan.source.task, branches[out.index]))
        example = Synthesizer({**branch, "$defs": plan.source.definitions}).generate(seed=plan.model_id, optional=1.0)
        if isinstance(example, dict):
            yield cls, example


def _reply(result: Any) -> Reply:
    body = msgspec.json.encode({"result": result, "success": True, "errors": [], "messages": []})
    return Reply(200, {"content-type": "application/json"}, body)


def test_a_reply_missing_a_required_field_is_a_decode_error_naming_it(plans: list[ModelPlan]) -> None:
    ai = WorkersAI(account_id="a" * 32, api_token="tok", base_url="http://127.0.0.1:9")
    checked = 0
    for plan in plans:
        handle = ai.model(plan.model_id)
        for cls, example in _struct_outputs(plan):
            reply = _reply(example)
            assert isinstance(handle.decode_envelope(reply, cls), cls), plan.model_id
            required = [f.encode_name for f in msgspec.structs.fields(cls) if f.required]
            for key in required:
                broken = {k: v for k, v in example.items() if k != key}
                for expect in (cls, None):  # the method's direct path, then run()'s union path
                    reply = _reply(broken)
                    if expect is None and len(module_variants(handle)) > 1:
                        # A union may read a gutted reply as another variant (a free-form one, or one
                        # whose keys it still has); never as the variant it no longer fits.
                        try:
                            value = handle.decode_envelope(reply, expect)
                        except errors.ResponseDecodeError as exc:
                            assert plan.model_id in str(exc) and "missing required field" in str(exc), str(exc)
                        else:
                            assert not isinstance(value, cls), (plan.model_id, key)
                        continue
                    with pytest.raises(errors.ResponseDecodeError) as info:
                        handle.decode_envelope(reply, expect)
                    message = str(info.value)
                    assert plan.model_id in message and f"`{key}`" in message, message
                checked += 1
    assert checked >= 100  # every family has fields it always returns


def module_variants(handle: Any) -> tuple[Any, ...]:
    return tuple(handle.decoder.variants)


def _annotations(tp: Any, seen: set[Any]) -> Iterator[Any]:
    if tp in seen:
        return
    seen.add(tp)
    yield tp
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        for hint in typing.get_type_hints(tp, include_extras=True).values():
            yield from _annotations(hint, seen)
    for arg in typing.get_args(tp):
        yield from _annotations(arg, seen)


def test_no_output_type_carries_unset(plans: list[ModelPlan]) -> None:
    for plan in plans:
        module = importlib.import_module(f"workers_ai.{plan.module}")
        for variant in module.DECODER.variants:
            found = [t for t in _annotations(variant, set()) if t is msgspec.UnsetType]
            assert not found, f"{plan.model_id}: UnsetType in the output type {variant}"
