"""The whole public catalog through the generator: every model generates, imports, decodes, round-trips
and type-checks.

The catalog (``WORKERS_AI_CATALOG`` or ``../shared/catalog``, see ``tests/_catalog.py``; about 105 real
model files) is conformance test data, never part of the project. Files without a schema are skipped
with a warning (exit 2 only with ``--strict``); the build runs on a copy of the files that have one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from workers_ai.testing._synth import Synthesizer

from codegen.cli import generate
from codegen.draft import always_returned, output_rule
from codegen.load import load_schemas
from codegen.plan import ModelPlan, plan_models
from codegen.variants import variant_schemas
from tests._catalog import catalog_dir
from tests._codegen_util import build, copy_catalog, handle_class, importable, model_modules, mypy_strict

PACKAGE = "wai_catalog"


@dataclass
class Built:
    schemas: Path
    out: Path
    skipped: list[str]
    plans: list[ModelPlan]
    modules: dict[str, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    catalog = catalog_dir()
    base = tmp_path_factory.mktemp("catalog")
    schemas, out = base / "schemas", base / "out"
    skipped = copy_catalog(catalog, schemas)
    build(schemas, out, PACKAGE)
    loaded = load_schemas(schemas)
    plans, _shared = plan_models(loaded.models, [])
    with importable(out, PACKAGE):
        yield Built(schemas, out, skipped, plans, model_modules(PACKAGE))


def test_files_without_a_schema_are_skipped_with_one_warning_each(tmp_path: Path) -> None:
    catalog = catalog_dir()
    out = tmp_path / "out"
    expected = sorted(_no_schema_files(catalog))
    assert expected, "the public catalog has files without a schema"
    result = generate(catalog, out, PACKAGE)
    assert result.code == 0 and result.problems == []
    skipped = [w for w in result.warnings if "publishes no input/output schema" in w]
    assert sorted(Path(w.split(": ")[0]).name for w in skipped) == expected
    assert all(w.startswith(str(catalog)) and "\n" not in w for w in skipped)
    assert result.models == len(list(catalog.glob("*.json"))) - len(expected)
    # --strict: the same files are problems, and nothing is written.
    strict_out = tmp_path / "strict"
    strict = generate(catalog, strict_out, PACKAGE, strict=True)
    assert strict.code == 2 and not strict_out.exists()
    assert sorted(Path(p.split(": ")[0]).name for p in strict.problems) == expected


def _no_schema_files(catalog: Path) -> set[str]:
    from tests._codegen_util import has_schema

    return {p.name for p in catalog.glob("*.json") if not has_schema(p)}


def test_every_model_generates_and_imports(built: Built) -> None:
    assert len(built.plans) >= 95
    # The same id published twice is generated twice (the second under a suffixed module), never lost.
    assert len(built.modules) == len({p.model_id for p in built.plans})
    for plan in built.plans:
        assert (built.out / PACKAGE / (plan.module.replace(".", "/") + ".py")).is_file(), plan.model_id


def test_every_variant_gets_a_msgspec_decoder(built: Built) -> None:
    for model_id, module in built.modules.items():
        handle = handle_class(module)
        for cls, _required in handle.input_types:
            msgspec.json.Decoder(cls)
        for variant in handle.decoder.variants:
            msgspec.json.Decoder(variant)
        assert handle.info.model_id == model_id


def _examples(plan: ModelPlan, half: str) -> Iterator[tuple[str, Any, float, Any]]:
    """(variant class name, example, share of optional keys filled, validator) per JSON variant of one half."""
    src = plan.source
    raw = src.input if half == "input" else src.output
    branches = variant_schemas(raw)
    variants: list[Any] = (
        [v for v in plan.inputs if v.kind in ("object", "request", "json")] if half == "input" else plan.json_outputs
    )
    for v in variants:
        # Outputs: the catalog rarely says which keys are always returned; the generator's documented
        # per-task rule does, so valid examples are valid under the schema plus that rule.
        rule = output_rule(src.task, branches[v.index]) if half == "output" else ()
        root = {**always_returned(branches[v.index], rule), "$defs": src.definitions}
        synth = Synthesizer(root)
        for optional in (1.0, 0.0):
            example = synth.generate(seed=f"{plan.model_id}/{v.index}/{optional}", optional=optional)
            yield v.class_name, example, optional, synth.validator


@pytest.mark.parametrize("half", ["input", "output"])
def test_schema_valid_examples_round_trip(built: Built, half: str) -> None:
    """A valid example becomes the variant's type and comes back out still valid and unchanged."""
    checked = 0
    for plan in built.plans:
        module = _module_for(built, plan)
        for class_name, example, _optional, validator in _examples(plan, half):
            # An output alias decodes from its wire type (a family's list view wraps the decoded list).
            shape = sys.modules[module.ShapeHandle.__module__]  # the private _<alias>_TYPE values are the shape's
            tp = getattr(shape, f"_{class_name}_TYPE", None) or getattr(module, class_name)
            value = msgspec.convert(example, tp)
            wire = msgspec.json.decode(msgspec.json.encode(value))
            problem = validator.first_error(wire)
            assert problem is None, f"{plan.model_id} {class_name}: encoded value is no longer valid: {problem}"
            assert msgspec.convert(wire, tp) == value, f"{plan.model_id} {class_name}: not a lossless round trip"
            checked += 1
    assert checked > (150 if half == "input" else 100)


def test_output_dispatch_picks_the_variant_the_example_came_from(built: Built) -> None:
    """Fully filled examples go to their own variant; sparse ones (often ambiguous) still decode."""
    for plan in built.plans:
        module = _module_for(built, plan)
        for class_name, example, optional, _validator in _examples(plan, "output"):
            module.DECODER.decode(example, plan.model_id)
            if optional < 1.0:
                continue
            variant = next(o for o in plan.json_outputs if o.class_name == class_name)
            picked = module.DECODER.pick(example)
            shape = sys.modules[module.ShapeHandle.__module__]
            expected = getattr(module, class_name) if not variant.alias else getattr(shape, f"_{class_name}_TYPE")
            assert picked is expected, f"{plan.model_id}: {class_name} example decoded as {picked}"


def _module_for(built: Built, plan: ModelPlan) -> Any:
    import importlib

    return importlib.import_module(f"{PACKAGE}.{plan.module}")


def test_generated_catalog_package_passes_mypy_strict(built: Built, tmp_path: Path) -> None:
    errors = mypy_strict(built.out, PACKAGE, tmp_path / "mypy-cache")
    assert errors == [], "\n".join(errors[:40])


def test_generated_catalog_package_passes_pyright_strict(built: Built, tmp_path: Path) -> None:
    """Every generated catalog model module and the client overloads type-check under pyright strict."""
    import json
    import os
    import subprocess
    import sys

    config = built.out / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "include": [f"{PACKAGE}/models", f"{PACKAGE}/_client.py"],
                "venvPath": str(Path(sys.prefix).parent),
                "venv": Path(sys.prefix).name,
                "typeCheckingMode": "strict",
                "pythonVersion": "3.10",
                "reportMissingTypeStubs": False,
                "reportUnnecessaryTypeIgnoreComment": False,
            }
        ),
        encoding="utf-8",
    )
    pyright = Path(sys.executable).parent / "pyright"
    proc = subprocess.run(
        [str(pyright), "-p", str(config), "--outputjson"],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    report = json.loads(proc.stdout)
    assert report["summary"]["filesAnalyzed"] > 50, report["summary"]
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    where = [(e["file"].rsplit("/", 1)[-1], e["range"]["start"]["line"], e["message"]) for e in errors[:20]]
    assert errors == [], where
