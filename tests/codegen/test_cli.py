"""``python -m codegen``: bad input exits 2 and writes nothing, output is deterministic, regeneration
touches only what changed, name clashes never overwrite, and importing the package stays cheap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegen.cli import generate
from tests._codegen_util import ROOT, build, codegen_cli, importable, model_modules, tree, write_schema

SCHEMAS = ROOT / "schemas"


def _small(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Model {name}.",
        "task": {"name": "Translation"},
        "schema": {
            "input": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "output": {"type": "object", "properties": {"translated_text": {"type": "string"}}},
        },
        **extra,
    }


BAD_FILES: dict[str, tuple[str, str, str]] = {
    # file name -> (content, expected JSON pointer, words in the message)
    "bad-json.json": ('{"name": "@cf/x/bad", "schema": {', "/", "not valid JSON"),
    # (files whose model publishes no schema are warnings, not problems: tests/codegen/test_no_schema.py)
    "unknown-type.json": (
        json.dumps(
            {
                "name": "@cf/x/t",
                "schema": {
                    "input": {"type": "object", "properties": {"a": {"type": "str"}}},
                    "output": {"type": "object"},
                },
            }
        ),
        "/schema/input/properties/a/type",
        "unknown type 'str'",
    ),
    "dangling.json": (
        json.dumps(
            {
                "name": "@cf/x/d",
                "schema": {
                    "input": {"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}},
                    "output": {"type": "object"},
                },
            }
        ),
        "/schema/input/properties/a/$ref",
        "dangling $ref",
    ),
    "remote.json": (
        json.dumps(
            {
                "name": "@cf/x/r",
                "schema": {"input": {"$ref": "https://example.com/schema.json"}, "output": {"type": "object"}},
            }
        ),
        "/schema/input/$ref",
        "remote $ref",
    ),
    "escape.json": (json.dumps(_small("@cf/../../etc/passwd")), "/name", "escape the output folder"),
    "absolute.json": (json.dumps(_small("/etc/passwd")), "/name", "absolute path"),
}


def test_bad_input_exits_2_one_line_per_problem_and_leaves_output_untouched(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/x/good.json", _small("@cf/x/good"))
    build(schemas, out, "pkg_bad")
    before = tree(out)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    for name, (content, _, _) in BAD_FILES.items():
        (schemas / name).write_text(content, encoding="utf-8")
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_bad")
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith(("warning:", "codegen:"))]
    assert len(lines) == len(BAD_FILES), proc.stderr
    for name, (_, pointer, words) in BAD_FILES.items():
        (line,) = [line for line in lines if line.startswith(f"{schemas / name}: ")]
        assert f": {pointer}: " in line, line
        assert words in line, line
    assert "nothing written" in proc.stderr
    assert tree(out) == before
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == stamps


def test_output_is_byte_identical_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    # This process runs with pytest's random hash seed, in-process; the subprocess with a fixed seed
    # and two worker processes.
    a, b = tmp_path / "a", tmp_path / "b"
    build(SCHEMAS, a, "workers_ai")
    proc = codegen_cli("--schemas", SCHEMAS, "--out", b, "-q", env={"PYTHONHASHSEED": "4242", "CODEGEN_JOBS": "2"})
    assert proc.returncode == 0, proc.stderr
    assert tree(a) == tree(b)
    # The committed package is exactly what the generator writes (what `--check` enforces in CI).
    assert tree(a / "workers_ai") == tree(ROOT / "generated" / "workers_ai")


def test_check_reports_drift_and_writes_nothing(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/x/one.json", _small("@cf/x/one"))
    build(schemas, out, "pkg_check")
    assert generate(schemas, out, "pkg_check", check=True).code == 0
    write_schema(schemas, "@cf/x/one.json", _small("@cf/x/one", description="Changed."))
    before = tree(out)
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_check", "--check")
    assert proc.returncode == 1
    assert "drift: changed" in proc.stderr and "models/cf/x/one.py" in proc.stderr
    assert tree(out) == before


def test_one_changed_schema_rewrites_only_what_depends_on_it(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    shutil.copytree(SCHEMAS, schemas)
    build(schemas, out, "workers_ai")
    root = out / "workers_ai"
    old = 1_000_000_000
    for path in root.rglob("*"):
        os.utime(path, ns=(old, old))
    target = schemas / "@cf" / "baai" / "bge-m3.json"
    doc = json.loads(target.read_text(encoding="utf-8"))
    doc["description"] = "Edited description."
    target.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    result = generate(schemas, out, "workers_ai")
    assert result.code == 0
    assert result.changed == ["_schemas/models/cf/baai/bge_m3.json.gz", "models/cf/baai/bge_m3.py"]
    assert result.added == [] and result.removed == []
    touched = sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.stat().st_mtime_ns != old
    )
    assert touched == result.changed
    # A new model adds its files (and the module of its shape, new here) and changes only the registry,
    # the listing, the two clients and folder indexes.
    write_schema(schemas, "@cf/baai/new-model.json", _small("@cf/baai/new-model"))
    result = generate(schemas, out, "workers_ai")
    shapes = [rel for rel in result.added if rel.startswith("models/_shapes/")]
    assert len(shapes) == 1
    assert sorted(set(result.added) - set(shapes)) == [
        "_schemas/models/cf/baai/new_model.json.gz",
        "models/cf/baai/new_model.py",
    ]
    assert result.changed == ["_aio_client.py", "_client.py", "_listing.py", "_registry.py"]


def test_colliding_model_ids_are_disambiguated_never_overwritten(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "a.json", _small("@cf/x/model-1"))
    write_schema(schemas, "b.json", _small("@cf/x/model_1"))  # normalises to the same module
    write_schema(schemas, "c.json", _small("@cf/x/model-1", description="Same id again."))  # same id
    write_schema(schemas, "d.json", _small("@cf/x"))  # a module where the folder of the others is
    runs = []
    for _ in range(2):
        shutil.rmtree(out, ignore_errors=True)
        result = generate(schemas, out, "pkg_clash")
        assert result.code == 0
        runs.append(tree(out / "pkg_clash"))
        assert len(result.warnings) == 3, result.warnings
    assert runs[0] == runs[1]
    modules = sorted(p for p in runs[0] if p.startswith("models/cf/") and p.endswith(".py") and "__init__" not in p)
    assert len(modules) == 4, modules
    with importable(out, "pkg_clash"):
        loaded = model_modules("pkg_clash")
        assert set(loaded) == {"@cf/x/model-1", "@cf/x/model_1", "@cf/x"}
        # `model()` keeps the first file (by path) for an id published twice.
        assert loaded["@cf/x/model-1"].INFO.description == "Model @cf/x/model-1."


def test_models_glob_selects_models(tmp_path: Path) -> None:
    result = generate(SCHEMAS, tmp_path / "out", "pkg_glob", ["@cf/baai/*"])
    assert result.code == 0
    files = tree(tmp_path / "out" / "pkg_glob")
    ids = sorted(p for p in files if p.startswith("models/") and p.endswith(".py") and "__init__" not in p)
    assert ids and all(p.startswith(("models/cf/baai/", "models/_shapes/")) for p in ids)
    assert generate(SCHEMAS, tmp_path / "none", "pkg_glob", ["@cf/nothing/*"]).code == 2


def test_importing_the_package_loads_no_model_module() -> None:
    code = (
        "import sys\n"
        "import workers_ai\n"
        "ai = workers_ai.WorkersAI(account_id='a' * 32, api_token='t')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('workers_ai.models.') or m == 'jsonschema')\n"
        "print(loaded)\n"
        "ai.model('@cf/baai/bge-m3')\n"
        "print(sorted(m for m in sys.modules if m.startswith('workers_ai.models.cf.baai.')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == "[]"
    assert second == "['workers_ai.models.cf.baai.bge_m3']"


@pytest.mark.parametrize("package", ["not-a-name", "1abc", "a..b"])
def test_bad_package_name_is_refused(tmp_path: Path, package: str) -> None:
    result = generate(SCHEMAS, tmp_path / "out", package)
    assert result.code == 2 and "--package" in result.problems[0]
    assert not (tmp_path / "out").exists()


def test_publishing_slips_are_repaired_with_a_warning(tmp_path: Path) -> None:
    """Slips with one obvious reading generate (with a warning) instead of failing the whole run."""
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    slips = {
        "name": "@cf/x/slips",
        "task": {"name": "Translation"},
        "schema": {
            "input": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "required": True, "pattern": "^\\p{L}+$"},  # draft 3; ECMA regex
                    "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},  # draft 4
                    "required": ["text"],  # the catalog's flux-2-dev slip
                },
            },
            "output": {},  # published without an output schema: any JSON
        },
    }
    write_schema(schemas, "slips.json", slips)
    result = generate(schemas, out, "pkg_slips")
    assert result.code == 0, result.problems
    joined = "\n".join(result.warnings)
    for words in ("boolean `required`", "draft 4", "not a regular expression Python can use", "inside `properties`"):
        assert words in joined
    assert "/schema/output: the `output` schema is empty" in joined
    with importable(out, "pkg_slips"):
        module = model_modules("pkg_slips")["@cf/x/slips"]
        import msgspec

        request = module.TextInput(text="abc", count=1)
        assert msgspec.json.decode(msgspec.json.encode(request)) == {"text": "abc", "count": 1}
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"text": "abc", "count": 0}, module.TextInput)  # exclusive minimum kept
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"count": 3}, module.TextInput)  # `text` became required
