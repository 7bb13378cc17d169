"""Names that explain themselves: no collision counters in public names, handle names by one rule,
identical shapes shared, a true clash refused (exit 2 naming the file)."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

from workers_ai import _registry

from codegen.cli import generate
from codegen.naming import handle_name
from tests._codegen_util import model_exports

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "generated" / "workers_ai"


def test_handle_names_keep_number_groups_apart() -> None:
    assert handle_name("@cf/qwen/qwen3-30b-a3b-fp8") == "Qwen3_30bA3bFp8"
    assert handle_name("@cf/meta/m2m100-1.2b") == "M2m100_1_2b"
    assert handle_name("@cf/llava-hf/llava-1.5-7b-hf") == "Llava1_5_7bHf"
    assert handle_name("@cf/baai/bge-m3") == "BgeM3"
    for model_id, (_module, handle) in _registry.MODELS.items():
        assert handle in (handle_name(model_id), f"{handle_name(model_id)}Model"), model_id
        for a, b in re.findall(r"([0-9])[^0-9A-Za-z]+([0-9])", model_id.split("/")[-1]):
            assert f"{a}_{b}" in handle, (model_id, handle)  # `1.2b` -> `1_2b`, never `12b`


def test_no_public_name_ends_in_a_collision_counter() -> None:
    modules = [f"workers_ai.{m}" for m, _ in _registry.MODELS.values()]
    modules += [f"workers_ai.models._shapes.{p.stem}" for p in (GENERATED / "models" / "_shapes").glob("*_types*.py")]
    checked = 0
    for name in modules:
        module = importlib.import_module(name)
        handle = next((h for m, h in _registry.MODELS.values() if f"workers_ai.{m}" == name), "")
        for public in (n for n in vars(module) if not n.startswith("_")):
            if handle and (public.startswith(handle) or public == f"Async{handle}"):
                continue  # the handles and the Input/Output aliases carry the model's own numbers
            obj = getattr(module, public)
            if getattr(obj, "__module__", name) not in (name,) and not isinstance(obj, type):
                continue
            assert not re.search(r"[A-Za-z][0-9]+(Dict|Item|Input|Output)?$", public), f"{name}.{public}"
            checked += 1
    assert checked > 500


def test_identical_shapes_are_shared_across_a_family() -> None:
    a = importlib.import_module("workers_ai.models.cf.meta.llama_3_8b_instruct")
    b = importlib.import_module("workers_ai.models.hf.nousresearch.hermes_2_pro_mistral_7b")
    common = [n for n in model_exports(a) if n in model_exports(b) and getattr(a, n) is getattr(b, n)]
    homes = {getattr(a, n).__module__ for n in common}
    assert common and all(h.startswith("workers_ai.models._shapes.text_generation_types") for h in homes), homes
    text = (GENERATED / "models" / "cf" / "meta" / "llama_3_8b_instruct.py").read_text(encoding="utf-8")
    assert all(f"class {n}(" not in text for n in common)


def test_models_with_one_schema_share_all_of_it() -> None:
    # nemotron-3 and glm-4.7-flash publish the same OpenAI-compatible schema: a second shape of a name
    # the most common shapes already use goes to another shared module, so neither declares a struct.
    for module in ("cf.nvidia.nemotron_3_120b_a12b", "cf.zai_org.glm_4_7_flash"):
        text = (GENERATED / "models" / Path(*module.split("."))).with_suffix(".py").read_text(encoding="utf-8")
        declared = [line for line in text.splitlines() if line.startswith("class ") and "(Struct," in line]
        assert declared == [], (module, declared)
    a = importlib.import_module("workers_ai.models.cf.nvidia.nemotron_3_120b_a12b")
    b = importlib.import_module("workers_ai.models.cf.zai_org.glm_4_7_flash")
    assert a.MessagesInput is b.MessagesInput and a.Tool is b.Tool


def _model(name: str, out: dict[str, object]) -> dict[str, object]:
    return {
        "name": name,
        "task": {"name": "Translation"},
        "schema": {"input": {"type": "object", "properties": {"text": {"type": "string"}}}, "output": out},
    }


def test_two_shapes_one_name_are_told_apart_by_a_key_or_refused(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas" / "@cf" / "x"
    schemas.mkdir(parents=True)
    apart = {
        "type": "object",
        "properties": {
            "Usage": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "usage": {"type": "object", "properties": {"b": {"type": "string"}}},
        },
    }
    (schemas / "apart.json").write_text(json.dumps(_model("@cf/x/apart", apart)))
    result = generate(tmp_path / "schemas", tmp_path / "out", "pkg_apart")
    assert result.code == 0, result.problems
    root = tmp_path / "out" / "pkg_apart"
    text = (root / "models" / "cf" / "x" / "apart.py").read_text(encoding="utf-8")
    shape = re.search(r"from \.+models\._shapes\.(\w+) import \*", text)
    assert shape is not None
    text = (root / "models" / "_shapes" / f"{shape.group(1)}.py").read_text(encoding="utf-8")  # its structs
    assert "class UsageWithA(" in text and "class UsageWithB(" in text
    same_keys = {
        "type": "object",
        "properties": {
            "Usage": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "usage": {"type": "object", "properties": {"a": {"type": "string"}}},
        },
    }
    (schemas / "clash.json").write_text(json.dumps(_model("@cf/x/clash", same_keys)))
    result = generate(tmp_path / "schemas", tmp_path / "out2", "pkg_clash")
    assert result.code == 2 and not (tmp_path / "out2").exists()
    assert len(result.problems) == 1 and "clash.json" in result.problems[0] and "Usage'" in result.problems[0]
