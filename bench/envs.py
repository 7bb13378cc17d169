"""The interpreters each client runs under: ours as a user gets it (a wheel of this tree in a fresh venv with
msgspec and urllib3 only), the comparison SDKs in ``bench/.venv-peers`` (never in the project's own
environment), and why one is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.paths import BENCH, PY, ROOT
from bench.processes import log, run

PEERS_VENV = BENCH / ".venv-peers"
# The comparison SDKs, pinned so reruns compare like with like (the versions studied in the notes).
PEERS = {"cloudflare": "cloudflare==5.9.0", "openai": "openai==3.54.0"}


class Envs:
    """The interpreters each client runs under, and why one is missing."""

    def __init__(self) -> None:
        self.ours: Path = Path(PY)  # replaced by the wheel venv once it is built
        self.ours_kind = "project .venv (editable)"
        self.peers: Path | None = None
        self.peer_ok: dict[str, str] = {}  # name -> version
        self.peer_error: dict[str, str] = {}
        self.wheel: Path | None = None
        self.wheel_error: str | None = None
        self.peers_have_floor = False  # msgspec + urllib3 in the comparison venv, to pair its samples

    def python_for(self, impl: str) -> Path | None:
        if impl in PEERS:
            return self.peers if impl in self.peer_ok else None
        return self.ours

    def missing(self, impl: str) -> str:
        return self.peer_error.get(impl, "not installed")


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def pip_install(python: Path, *specs: str, timeout: float = 300) -> None:
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *specs], timeout=timeout)


def setup_peers(envs: Envs, skip: bool) -> None:
    if skip:
        for name in PEERS:
            envs.peer_error[name] = "skipped (--skip-peers)"
        return
    python = venv_python(PEERS_VENV)
    try:
        if not python.exists():
            log(f"creating {PEERS_VENV.relative_to(ROOT)}")
            run([sys.executable, "-m", "venv", str(PEERS_VENV)], timeout=120)
    except Exception as exc:
        for name in PEERS:
            envs.peer_error[name] = f"could not create the comparison venv: {exc}"
        return
    envs.peers = python
    floor_specs = [f"{name}=={version}" for name, version in own_versions().items() if name in ("msgspec", "urllib3")]
    try:
        probe = subprocess.run([str(python), "-c", "import msgspec, urllib3"], capture_output=True, check=False)
        if probe.returncode != 0:
            pip_install(python, *floor_specs)
        envs.peers_have_floor = True
    except Exception as exc:
        log(f"no floor in the comparison venv (ratios there fall back to raw medians): {exc}")
    for name, spec in PEERS.items():
        version = _installed_version(python, name)
        if version is None:
            log(f"installing {spec} into the comparison venv")
            try:
                pip_install(python, spec)
            except Exception as pinned_exc:
                try:
                    pip_install(python, name)
                except Exception:
                    envs.peer_error[name] = f"pip install {spec} failed: {str(pinned_exc)[-300:]}"
                    continue
            version = _installed_version(python, name)
        if version is None:
            envs.peer_error[name] = f"{name} installed but not importable"
        else:
            envs.peer_ok[name] = version


def _installed_version(python: Path, name: str) -> str | None:
    code = f"import importlib.metadata as m, {name}; print(m.version({name!r}))"
    try:
        return run([str(python), "-c", code], timeout=120).strip() or None
    except Exception:
        return None


def setup_wheel(envs: Envs, work: Path) -> dict[str, Any]:
    """Build a wheel of this project and install it into a fresh venv with its two dependencies."""
    info: dict[str, Any] = {}
    wheel_dir = work / "wheel"
    venv = work / "venv-wheel"
    try:
        t0 = time.perf_counter()
        # setuptools reuses ./build: files generated away since the last build would ride along in the wheel
        # and inflate the footprint row, so the wheel is always built from the tree as it is now.
        shutil.rmtree(ROOT / "build", ignore_errors=True)
        run(
            [
                PY,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--disable-pip-version-check",
                str(ROOT),
                "-w",
                str(wheel_dir),
            ]
        )
        wheels = sorted(wheel_dir.glob("workers_ai-*.whl"))
        if not wheels:
            raise RuntimeError("pip wheel produced no workers_ai wheel")
        info["wheel"] = wheels[-1].name
        info["wheel_bytes"] = wheels[-1].stat().st_size
        run([sys.executable, "-m", "venv", str(venv)], timeout=120)
        pip_install(venv_python(venv), str(wheels[-1]))
        info["setup_seconds"] = round(time.perf_counter() - t0, 1)
    except Exception as exc:
        envs.wheel_error = str(exc)
        info["error"] = str(exc)
        log(f"wheel venv failed, measuring the editable install instead: {exc}")
        return info
    envs.wheel = venv_python(venv)
    envs.ours = envs.wheel
    envs.ours_kind = "wheel in a fresh venv (msgspec + urllib3 only)"
    return info


def own_versions() -> dict[str, str]:
    """The versions of this project and of what it is measured with, from the running interpreter."""
    from importlib import metadata

    out: dict[str, str] = {}
    for name in ("msgspec", "urllib3", "workers-ai", "mypy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out
