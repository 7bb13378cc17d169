"""Vendoring is lean by default (runtime and the selected models, no emulator, no schema JSON) and passes
plain ``mypy --strict`` with no config of ours; ``--with-testing`` adds the emulator, which starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._codegen_util import codegen_cli

PACKAGE = "myapp._vendor.workers_ai"
MODELS = ("@cf/baai/*", "@cf/meta/llama-3-8b-instruct")


def _vendor(out: Path, *extra: str) -> Path:
    proc = codegen_cli("--package", PACKAGE, "--models", *MODELS, "--out", out, "-q", *extra)
    assert proc.returncode == 0, proc.stderr
    return out / "myapp" / "_vendor" / "workers_ai"


def test_lean_copy_has_runtime_and_models_only_and_passes_plain_mypy_strict(tmp_path: Path) -> None:
    root = _vendor(tmp_path)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert "_client.py" in files and "models/cf/meta/llama_3_8b_instruct.py" in files
    assert not any(f.startswith(("testing/", "_schemas/")) or f.endswith(".json") for f in files), files
    models = {f for f in files if f.startswith("models/cf/") and not f.endswith("__init__.py")}
    assert models and all(f.startswith(("models/cf/baai/", "models/cf/meta/llama_3_8b_instruct")) for f in models)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            os.devnull,
            "--cache-dir",
            str(tmp_path / "cache"),
            "-p",
            PACKAGE,
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and "Success: no issues found" in proc.stdout, proc.stdout + proc.stderr


def test_with_testing_adds_the_emulator_and_its_schemas_and_it_serves_the_vendored_models(tmp_path: Path) -> None:
    root = _vendor(tmp_path, "--with-testing")
    assert (root / "testing" / "__init__.py").is_file()
    assert (root / "_schemas" / "models" / "cf" / "baai" / "bge_m3.json.gz").is_file()
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from myapp._vendor.workers_ai.testing import Emulator\n"
        "with Emulator() as emu:\n"
        "    ai = emu.client()\n"
        "    out = ai.model('@cf/baai/bge-m3').embed(text=['a', 'b'])\n"
        "    reply = ai.model('@cf/meta/llama-3-8b-instruct').chat(messages=[{'role': 'user', 'content': 'hi'}])\n"
        "    print(out.shape[0], len(out.data[0]), type(reply.response).__name__, type(ai).__module__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "1024", "str", "myapp._vendor.workers_ai._clients.sync"]


def test_the_main_package_keeps_the_emulator_and_can_leave_it_out(tmp_path: Path) -> None:
    proc = codegen_cli("--models", "@cf/baai/bge-m3", "--out", tmp_path / "a", "-q")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a" / "workers_ai" / "testing" / "__init__.py").is_file()
    proc = codegen_cli("--models", "@cf/baai/bge-m3", "--out", tmp_path / "b", "-q", "--without-testing")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "b" / "workers_ai" / "testing").exists()


def test_a_vendored_copy_never_names_the_generator_and_its_cli_runs_without_it(tmp_path: Path) -> None:
    """The shipped runtime reaches the generator only through the ``workers_ai.commands`` entry point
    group: no import, string or name in the copy mentions ``codegen``, and where no generator is
    registered the CLI does not offer ``sync``."""
    import io
    import tokenize

    root = _vendor(tmp_path, "--with-testing")
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            if tok.type != tokenize.COMMENT and "codegen" in tok.string.lower():
                found.append(f"{path.relative_to(root)}:{tok.start[0]}: {tok.string[:60]}")
    assert found == []
    script = (
        "import sys, importlib.metadata as md\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "md.entry_points = lambda **kw: []  # a machine where no generator is installed\n"
        "from myapp._vendor.workers_ai._cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('codegen' in sys.modules, any(m.startswith('codegen') for m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    commands = proc.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    assert {"run", "embed", "models", "serve"} <= set(commands) and "sync" not in commands
    assert proc.stdout.strip().endswith("False False")


def test_sync_is_offered_by_the_installed_console_script_from_any_folder(tmp_path: Path) -> None:
    """An install of this project installs the generator (the ``workers_ai_codegen`` package), so the console
    script offers ``sync`` wherever it runs, as ``make sync`` uses it; a vendored copy, where no
    generator is registered, does not (see the test above)."""
    command = Path(sys.executable).parent / "workers-ai"
    if not command.exists():
        pytest.skip(f"{command} is not installed")
    for where in (Path(__file__).resolve().parents[2], tmp_path):  # the checkout, and anywhere else
        proc = subprocess.run([command, "sync", "--help"], capture_output=True, text=True, timeout=60, cwd=where)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage: workers-ai sync")
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "$(BIN)/workers-ai sync" in makefile


def _lean_python(tmp_path: Path) -> Path:
    """A venv whose only packages are msgspec and urllib3 (this venv's own, linked in: no download)."""
    import importlib.util
    import venv

    env = tmp_path / "lean-venv"
    venv.create(env, with_pip=False, symlinks=True)
    python = env / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    ).stdout.strip()
    only = tmp_path / "lean-site"
    only.mkdir()
    for name in ("msgspec", "urllib3"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        (only / name).symlink_to(Path(spec.origin).parent, target_is_directory=True)
    Path(site, "lean.pth").write_text(f"{only}\n")
    return python


def test_a_lean_copy_type_checks_and_imports_with_only_msgspec_and_urllib3(tmp_path: Path) -> None:
    """Realtime models included (their sessions import websockets by name, on use); ray.py is left out
    unless asked (``--with-ray``): it needs numpy and ray."""
    root = _vendor(tmp_path, "--models", "@cf/deepgram/*")
    assert (root / "realtime" / "_sync.py").is_file() and not (root / "ray.py").exists()
    python = _lean_python(tmp_path)
    probe = subprocess.run(
        [python, "-c", "import websockets"], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False
    )
    assert probe.returncode != 0  # the venv really lacks the extras
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", os.devnull, "--cache-dir", str(tmp_path / "cache"),
         "--python-executable", str(python), "-p", PACKAGE],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(tmp_path)}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0 and "Success: no issues found" in proc.stdout, proc.stdout + proc.stderr
    script = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "from myapp._vendor.workers_ai import WorkersAI, errors\n"
        "ai = WorkersAI(account_id='0123456789abcdef0123456789abcdef', api_token='t', base_url='http://127.0.0.1:9')\n"
        "try:\n"
        "    ai.model('@cf/deepgram/nova-3').listen(encoding='linear16', sample_rate=16000)\n"
        "except errors.ConfigurationError as exc:\n"
        "    print(exc)\n"
    )
    ran = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "pip install 'workers-ai[realtime]'" in ran.stdout
    with_ray = _vendor(tmp_path / "ray", "--with-ray")
    assert (with_ray / "ray.py").is_file()
