"""``workers_ai.__version__`` and ``workers-ai --version`` state one version, pyproject.toml's: the generator
prints it into the package (``_version.py``), so the installed package, a vendored copy on a machine where no
``workers-ai`` distribution is installed, and ``codegen --check`` after a version bump all agree with it."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import workers_ai

from tests._codegen_util import ROOT, codegen_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency there
    import tomli as tomllib

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_the_installed_package_and_its_command_state_pyprojects_version() -> None:
    assert workers_ai.__version__ == VERSION == importlib.metadata.version("workers-ai")
    assert "__version__" in dir(workers_ai)
    script = Path(sys.executable).parent / "workers-ai"
    for command in ([str(script), "--version"], [sys.executable, "-m", "workers_ai._cli", "--version"]):
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"workers-ai {VERSION}\n", ""), command


def test_a_vendored_copy_states_it_without_package_metadata(tmp_path: Path) -> None:
    proc = codegen_cli("--package", "myapp._vendor.workers_ai", "--models", "@cf/baai/bge-m3", "--out", tmp_path, "-q")
    assert proc.returncode == 0, proc.stderr
    assert "importlib.metadata" not in (tmp_path / "myapp/_vendor/workers_ai/_version.py").read_text(encoding="utf-8")
    script = (
        "import sys, importlib.metadata as md\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "def missing(name):\n"
        "    raise md.PackageNotFoundError(name)\n"
        "md.version = missing  # a machine where no workers-ai distribution is installed\n"
        "import myapp._vendor.workers_ai as pkg\n"
        "print(pkg.__version__)\n"
        "from myapp._vendor.workers_ai._cli.main import main\n"
        "main(['--version'])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [VERSION, f"workers-ai {VERSION}"]


def test_a_version_bump_is_drift_until_regenerated(tmp_path: Path) -> None:
    """The version comes from pyproject.toml at generation time: ``--check`` fails on a bump, naming
    ``_version.py``, and a regeneration carries the new one."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "codegen", checkout / "codegen", ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "schemas/@cf/baai").mkdir(parents=True)
    shutil.copy(ROOT / "schemas/@cf/baai/bge-m3.json", checkout / "schemas/@cf/baai/bge-m3.json")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (checkout / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(checkout)}

    def codegen(*args: str) -> subprocess.CompletedProcess[str]:
        # --out elsewhere: the copy has no runtime of its own, so it reads the checkout's (see runtime_root)
        run = [sys.executable, "-m", "codegen", "--out", str(tmp_path / "out"), "--without-testing", *args]
        return subprocess.run(run, cwd=checkout, env=env, capture_output=True, text=True, timeout=600)

    assert codegen("-q").returncode == 0
    version_file = tmp_path / "out/workers_ai/_version.py"
    assert f'__version__ = "{VERSION}"' in version_file.read_text(encoding="utf-8")
    bumped = pyproject.replace(f'version = "{VERSION}"', 'version = "9.8.7"', 1)
    assert bumped != pyproject
    (checkout / "pyproject.toml").write_text(bumped, encoding="utf-8")
    check = codegen("--check")
    assert check.returncode == 1 and "drift: changed" in check.stderr and "_version.py" in check.stderr
    assert codegen("-q").returncode == 0
    assert '__version__ = "9.8.7"' in version_file.read_text(encoding="utf-8")
