"""Generated code as a reader meets it in an IDE: go-to-definition from a model lands in its shape module;
there, the decoder's rules are named records, output fields carry their description and each method's
docstring says what it does, what it requires and what it returns."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
from functools import cache

from workers_ai import _registry
from workers_ai._core.decode import Variant

from codegen.literals import doc_text
from codegen.load import load_schemas
from codegen.plan import MethodPlan, PackagePlan, plan_package
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


@cache
def _plan() -> PackagePlan:
    return plan_package(load_schemas(ROOT / "schemas").models, [])


def _methods(model_id: str) -> tuple[MethodPlan, ...]:
    return next(p.methods for p in _plan().listed if p.model_id == model_id)


def test_go_to_definition_from_a_model_lands_in_its_shape_module() -> None:
    bge = importlib.import_module("workers_ai.models.cf.baai.bge_m3")
    shape = inspect.getmodule(bge.BgeM3.embed)
    assert shape is not None and shape.__name__.startswith("workers_ai.models._shapes.text_embeddings_")
    assert inspect.getmodule(bge.EmbeddingOutput) is shape  # its one model declares it: printed there


def test_output_fields_carry_their_description_as_a_docstring() -> None:
    bge = importlib.import_module("workers_ai.models.cf.baai.bge_m3")
    source = ast.parse(inspect.getsource(bge.EmbeddingOutput))
    assert _field_docs(source.body[0])["data"] == "One vector per input string, in input order."
    checked = 0
    plan = _plan()
    printed = [(s.module, s.structs) for s in plan.shapes] + [(s.module, s.structs) for s in plan.shared]
    for module, structs in printed:
        tree = ast.parse((ROOT / "generated" / "workers_ai" / (module.replace(".", "/") + ".py")).read_text("utf-8"))
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        for s in structs:
            docs = _field_docs(classes[s.name])
            for f in s.fields:
                if s.output and f.description:  # a reply's field with our prose
                    assert docs.get(f.name) == doc_text(f.description), (module, s.name, f.name)
                    checked += 1
                elif not s.output:
                    assert f.name not in docs  # a request's fields are described on its TypedDict's keys
    assert checked > 40


def _field_docs(cls: ast.stmt) -> dict[str, str]:
    """A class's attribute docstrings: the string right under a field."""
    assert isinstance(cls, ast.ClassDef)
    docs: dict[str, str] = {}
    for field, after in itertools.pairwise(cls.body):
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name):
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                docs[field.target.id] = str(after.value.value)
    return docs


def test_a_methods_docstring_says_what_it_does_requires_and_returns() -> None:
    bge = importlib.import_module("workers_ai.models.cf.baai.bge_m3")
    assert inspect.getdoc(bge.BgeM3.embed) == (
        "Embed text as vectors. Takes the keys of ``EmbeddingInputDict``; requires ``text``."
        " Returns ``EmbeddingOutput``."
    )
    checked = 0
    for model_id, (module_name, handle) in _registry.MODELS.items():
        cls = getattr(importlib.import_module(f"workers_ai.{module_name}"), handle)
        for m in _methods(model_id):
            if m.kind == "requests":
                continue
            doc = inspect.getdoc(getattr(cls, m.name)) or ""
            assert not doc.startswith("Send a"), (model_id, m.name, doc)
            assert "Returns " in doc and f"``{m.returns}``" in doc, (model_id, m.name, doc)
            for p in (*m.leading, *m.keywords):
                if p.default is None:
                    assert f"``{p.name}``" in doc, (model_id, m.name, p.name, doc)
            if m.streams:
                stream_doc = inspect.getdoc(getattr(cls, f"{m.name}_stream")) or ""
                assert "streamed" in stream_doc and f"``{m.params_name}``" in stream_doc
            checked += 1
    assert checked > 150
