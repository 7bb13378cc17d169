"""Generated code as a reader meets it in an IDE: go-to-definition from a model lands in its shape module;
there, the decoder's rules are named records, output fields carry their description and each method's
docstring says what it does, what it requires and what it returns."""

from __future__ import annotations

import ast
import importlib

from workers_ai import _registry
from workers_ai._core.decode import Variant

from tests._codegen_util import ROOT

SHAPES = ROOT / "generated" / "workers_ai" / "models" / "_shapes"


def _shape_modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in SHAPES.glob("*.py") if "_types" not in p.stem}


def _decoder(tree: ast.Module) -> ast.Call:
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["DECODER"]:
            assert isinstance(node.value, ast.Call)
            return node.value
    raise AssertionError("no DECODER")


def test_decoder_rules_are_named_records_naming_their_output() -> None:
    checked = 0
    for name, tree in _shape_modules().items():
        if name == "__init__":
            continue
        for rule in _decoder(tree).args:
            # Variant(EmbeddingOutput, own_keys=("data",)): the output by name, every other part by keyword.
            assert isinstance(rule, ast.Call) and ast.unparse(rule.func) == "Variant", (name, ast.unparse(rule))
            assert isinstance(rule.args[0], ast.Name) and len(rule.args) <= 2, (name, ast.unparse(rule))
            assert {kw.arg for kw in rule.keywords} <= {"own_keys", "key_shapes", "own_values"}
            checked += 1
    assert checked > 60


def test_the_records_pick_each_output_of_a_model_by_its_json() -> None:
    module = importlib.import_module("workers_ai.models.cf.baai.bge_m3")
    decoder = module.DECODER
    assert all(isinstance(rule, Variant) for rule in decoder._rules)  # pyright: ignore[reportPrivateUsage]
    assert decoder.pick({"shape": [1, 2], "data": [[0.1, 0.2]]}) is module.EmbeddingOutput
    assert decoder.pick({"shape": [1, 2], "response": [[0.1, 0.2]]}) is module.EmbeddingForContextsOutput
    assert decoder.pick({"response": [{"id": 0, "score": 0.5}]}) is module.QueryOutput
    assert decoder.pick({"request_id": "r1"}) is module.AsyncResponse
    assert decoder.pick([1, 2]) is None  # no output is a JSON array


def test_a_value_only_one_output_declares_decides_between_outputs_of_the_same_keys() -> None:
    # Chat completions and text completions carry the same keys; `object` tells them apart.
    picked = []
    for model_id, (module_name, _handle) in _registry.MODELS.items():
        module = importlib.import_module(f"workers_ai.{module_name}")
        rules = [r for r in module.DECODER._rules if r.own_values]  # pyright: ignore[reportPrivateUsage]
        for rule in rules:
            key, values = next(iter(rule.own_values.items()))
            assert module.DECODER.pick({key: values[0]}) is rule.target, (model_id, rule)
            picked.append(model_id)
    assert picked
