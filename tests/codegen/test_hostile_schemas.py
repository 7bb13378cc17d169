"""Schema text is data, never code: hostile schemas generate inert, compiling, importable modules.

Every string a schema can carry (descriptions, titles, enum values, defaults, patterns, property
names, content types, task names, prices, model ids and file names) tries to break out of its literal
and create the file ``PWNED``; generator extensions like ``x-python-import`` try to import a module
that would do the same. After generating, compiling, importing and exercising the result, the file
must not exist and the hostile text must come back unchanged as data.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._codegen_util import ROOT, codegen_cli, tree
from tests.codegen._hostile import (
    CANARY,
    EVIL_TEXTS,
    JINJA,
    PWNED_MODULE,
    TOUCH,
    hostile_documents,
    raw_documents,
    write_hostile,
)

PACKAGE = "evil_pkg"

_EXERCISE = r"""
import importlib, json, sys
import msgspec
registry = importlib.import_module("evil_pkg._registry")
report = {"models": {}, "fields": {}}
for model_id, (module_name, handle_name) in registry.MODELS.items():
    module = importlib.import_module("evil_pkg." + module_name)
    handle = getattr(module, handle_name)
    for cls, _req in handle.input_types:
        msgspec.json.Decoder(cls)
        fields = msgspec.structs.fields(cls)
        report["fields"][cls.__name__] = [[f.name, f.encode_name] for f in fields]
        # Fill every str field with its own wire name and encode: hostile names must stay wire keys.
        kwargs = {}
        for f in fields:
            if f.type is str or "str" in repr(f.type):
                kwargs[f.name] = f.encode_name
        try:
            obj = cls(**kwargs)
            report["fields"][cls.__name__ + ".json"] = msgspec.json.decode(msgspec.json.encode(obj))
        except Exception as exc:  # a Literal-only field given a free string, for example
            report["fields"][cls.__name__ + ".error"] = repr(exc)
    for variant in handle.decoder.variants:
        msgspec.json.Decoder(variant)
        if isinstance(variant, type) and issubclass(variant, msgspec.Struct):
            report["fields"][variant.__name__] = [[f.name, f.encode_name] for f in msgspec.structs.fields(variant)]
    report["models"][model_id] = {
        "task": handle.info.task,
        "description": handle.info.description,
        "price": msgspec.to_builtins(handle.info.price),
        "properties": msgspec.to_builtins(handle.info.properties),
        "doc": module.__doc__,
    }
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("hostile")
    schemas, out, work = base / "schemas", base / "out", base / "work"
    write_hostile(schemas)
    # A file name that tries to end the header comment and declare a source encoding.
    odd = schemas / "@cf" / "evil" / f"x\nimport os # -*- coding: latin-1 -*-\n{TOUCH}.json"
    odd.write_text(
        json.dumps(
            {
                "name": "@cf/evil/filename",
                "task": "Translation",
                "schema": {
                    "input": {"type": "object", "properties": {"text": {"type": "string"}}},
                    "output": {"type": "object"},
                },
            }
        ),
        encoding="utf-8",
    )
    work.mkdir()
    (work / "pwned_module.py").write_text(PWNED_MODULE, encoding="utf-8")
    proc = codegen_cli(
        "--schemas",
        schemas,
        "--out",
        out,
        "--package",
        PACKAGE,
        cwd=work,
        env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(work)])},
    )
    return out, work, proc


def test_hostile_schemas_generate(generated: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    _out, work, proc = generated
    assert proc.returncode == 0, proc.stderr
    assert not (work / CANARY).exists()
    # Names msgspec cannot carry (quotes, backslashes, control characters) are left out, with a warning.
    assert "cannot be a struct field" in proc.stderr
    # Two ids that normalise to one module: both generated, the clash reported.
    assert "have the same module name" in proc.stderr


def test_generated_code_compiles_and_holds_no_evaluated_template(
    generated: tuple[Path, Path, subprocess.CompletedProcess[str]],
) -> None:
    out, _work, _proc = generated
    files = tree(out / PACKAGE)
    for rel, data in files.items():
        if rel.endswith(".py"):
            compile(data.decode("utf-8"), rel, "exec")
            text = data.decode("utf-8")
            assert "1337" not in text, f"{rel}: a jinja expression from a schema was evaluated"
            assert "pwned_module" not in text, f"{rel}: a generator extension keyword turned into code"
            if rel.startswith("models/") and not rel.endswith("__init__.py"):
                header = text.splitlines()[:2]
                assert [line[:1] for line in header] == ["#", '"'], f"{rel}: header comment broken: {header!r}"
                assert not any(re.search(r"coding[:=]", line) for line in header), f"{rel}: {header!r}"


def test_importing_and_using_hostile_models_runs_nothing(
    generated: tuple[Path, Path, subprocess.CompletedProcess[str]],
) -> None:
    out, work, _proc = generated
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(out), str(work)])}
    proc = subprocess.run(
        [sys.executable, "-c", _EXERCISE], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert not (work / CANARY).exists(), "hostile schema text was executed"
    report = json.loads(proc.stdout)
    docs = hostile_documents()
    texts = report["models"]["@cf/evil/texts"]
    # The hostile strings come back byte for byte: they were literals, not code.
    assert texts["description"] == docs["@cf/evil/texts.json"]["description"]
    assert texts["task"] == EVIL_TEXTS[0]
    assert texts["price"][0]["currency"] == JINJA
    assert texts["properties"][EVIL_TEXTS[1]] == EVIL_TEXTS[2]
    # Numbers msgspec cannot take, 90 levels of nesting, a 300-character id and a non-ASCII id all
    # generate, import and build their decoders.
    raw_ids = {
        json.loads(text)["name"] if "1e400" not in text else "@cf/evil/numbers" for text in raw_documents().values()
    }
    assert raw_ids <= set(report["models"])
    names_id = docs["@cf/evil/names.json"]["name"]
    assert names_id in report["models"], "a model id with quotes and code in it must stay an inert literal"
    # Docstrings keep the text readable but can never close the docstring.
    assert '"""' not in (texts["doc"] or "")
    # Property names that are keywords, builtins or not identifiers keep their wire name.
    encoded = next(v for k, v in report["fields"].items() if k.endswith(".json") and TOUCH in v)
    assert encoded[TOUCH] == TOUCH
    assert encoded["class"] == "class" and encoded["123"] == "123" and encoded[JINJA] == JINJA
    # Properties `Usage` and `usage` (objects of different shapes) in one object: both keep their wire
    # names, and their types get distinct names (from a key only one of them has), never a number.
    pairs = [tuple(p) for k, v in report["fields"].items() if not k.endswith((".json", ".error")) for p in v]
    assert ("Usage", "Usage") in pairs and ("usage", "usage") in pairs


def test_hostile_package_passes_mypy_strict(
    generated: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    from tests._codegen_util import mypy_strict

    out, _work, _proc = generated
    errors = mypy_strict(out, PACKAGE, tmp_path / "cache")
    assert errors == [], "\n".join(errors)
