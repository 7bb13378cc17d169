"""The hand-written runtime is committed once, in the package itself (docs/architecture.md): no copy
under codegen/, no type-checking bridge, a runtime edit seen without regenerating, and vendoring still
writes a self-contained package holding exactly the hand-written files beside the rendered ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codegen.runtime_source import is_generated, runtime_files
from codegen.write import GENERATED_MARK

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generated" / "workers_ai"


def test_no_hand_written_file_lives_under_the_generator() -> None:
    assert not (ROOT / "codegen" / "runtime").exists()
    assert not list(ROOT.joinpath("codegen").rglob("*.pyi"))
    assert not list(PACKAGE.rglob("*.pyi"))  # no bridge stubs standing in for generated modules


def test_each_file_is_either_generated_or_hand_written_and_none_is_both() -> None:
    hand = runtime_files(PACKAGE)
    assert "_core/config.py" in hand and "errors.py" in hand and "testing/_emulator.py" in hand
    for rel, data in hand.items():
        assert not data.startswith(GENERATED_MARK), rel
    # Generated modules carry the header: the client overloads, the registry, every model module.
    for rel in (
        "_client.py",
        "_aio_client.py",
        "_registry.py",
        "_listing.py",
        "__init__.py",
        "models/cf/baai/bge_m3.py",
    ):
        assert (PACKAGE / rel).read_bytes().startswith(GENERATED_MARK), rel
        assert rel not in hand
    assert is_generated("_schemas/models/cf/baai/bge_m3.json.gz", b"\x1f\x8b")
    # No file's text is committed twice anywhere in the project (the old codegen/runtime copies).
    texts: dict[bytes, str] = {}
    for path in [*ROOT.joinpath("codegen").rglob("*.py"), *PACKAGE.rglob("*.py")]:
        data = path.read_bytes()
        if len(data) > 200 and "__pycache__" not in path.parts:
            assert data not in texts, f"{path} repeats {texts.get(data)}"
            texts[data] = str(path)


def test_a_runtime_edit_is_seen_without_regenerating(tmp_path: Path) -> None:
    # The tests import the package where the runtime is written: the module file they load is the one
    # committed, not a copy made by `make generate`.
    import workers_ai._core.config as config

    assert Path(config.__file__).resolve() == (PACKAGE / "_core" / "config.py").resolve()


def test_a_vendored_copy_is_self_contained(tmp_path: Path) -> None:
    vendor = tmp_path / "vendor"
    out = vendor / "acme_ai"
    code = subprocess.run(
        [sys.executable, "-m", "codegen", "--out", str(vendor), "--package", "acme_ai", "--models", "@cf/baai/bge-m3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert code.returncode == 0, code.stderr
    hand = runtime_files(PACKAGE, with_testing=False)
    for rel in [r for r in hand if r == "ray.py" or r.startswith("_ray/")]:
        del hand[rel]  # a lean copy leaves out what needs numpy and ray (--with-ray adds it)
    assert not (out / "ray.py").exists() and not (out / "_ray").exists()
    for rel, data in hand.items():
        assert (out / rel).read_bytes() == data, rel
    assert not (out / "testing").exists()
    probe = "import acme_ai; from acme_ai.models.cf.baai.bge_m3 import BgeM3; print(acme_ai.WorkersAI.__name__)"
    ran = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(vendor)!r}); {probe}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "WorkersAI", ran.stderr
