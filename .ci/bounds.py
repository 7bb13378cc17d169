"""Both ends of the library's dependency ranges, for `make test-lowest` / `make test-latest` and CI's smoke.

The library's own dependencies (pyproject's `dependencies` and the extras the runtime tests need) stay
ranges for users. This script asks uv which versions those ranges allow at their lowest (`--resolution
lowest-direct`) or at their newest (`--resolution highest`, no lock), and prints them as pins, or builds a
virtual environment with them: the project (editable) at those pins, and the test tools at the versions
uv.lock holds (their own dependencies resolve around the range), so a failure there is the range's and
not a new test tool's.

    python .ci/bounds.py pins lowest [--python PY]     # msgspec==0.19.0 ... (constraints for pip / uv)
    python .ci/bounds.py venv latest DIR [--python PY]  # DIR/bin/python has the project at the newest pins

Needs only the standard library and uv (`make` installs it into .uv/).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
UV = os.environ.get("UV", str(ROOT / ".uv" / "bin" / "uv"))
# The extras whose packages the runtime's tests exercise (codegen: some build a vendored copy; ray has its own,
# heavier, integration tests).
EXTRAS = ("async", "realtime", "otel", "testing", "codegen")
# What tests/runtime, tests/emulator, tests/realtime and tests/network import beyond the library, taken at
# uv.lock's versions. opentelemetry-sdk is the exception: it pins opentelemetry-api to its own version, so
# it follows whichever API version the range puts in.
TEST_TOOLS = ("pytest", "hypothesis", "openai", "anthropic", "numpy", "trustme", "pysocks", "proxy-py")
TEST_TOOLS += ("mypy", "pyright")  # tests/emulator type-checks a vendored copy
PAIRED = {"opentelemetry-sdk": "opentelemetry-api"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project["optional-dependencies"][extra]
    return sorted(set(reqs))


def pins(end: str, python: str) -> dict[str, str]:
    """``{name: version}`` for each direct dependency, at the lowest or newest end of its range."""
    reqs = _requirements()
    names = {_norm(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in reqs}  # type: ignore[union-attr]
    resolution = "lowest-direct" if end == "lowest" else "highest"
    with tempfile.TemporaryDirectory() as tmp:
        req_file = Path(tmp, "requirements.in")
        req_file.write_text("\n".join(reqs) + "\n")
        compile_args = ["-q", "--no-header", "--no-annotate", "--no-config", "--upgrade", "--resolution", resolution]
        out = subprocess.run(
            [UV, "pip", "compile", *compile_args, "--python", python, str(req_file)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and _norm(name) in names:
            found[_norm(name)] = version.split(";")[0].strip()
    missing = names - found.keys()
    if missing:
        raise SystemExit(f"bounds: uv's {resolution} resolution did not pin {sorted(missing)}")
    return found


def _locked_constraints(keep: set[str]) -> str:
    """uv.lock's pins of the packages in ``keep``, as constraints (with markers: each Python its own pin)."""
    export_args = ["-q", "--frozen", "--all-extras", "--no-hashes", "--no-emit-project", "--no-header", "--no-annotate"]
    out = subprocess.run(
        [UV, "export", *export_args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    kept = []
    for line in out.splitlines():
        name = re.match(r"[A-Za-z0-9._-]*", line.strip()).group(0)  # type: ignore[union-attr]
        if name and not line.startswith(("#", "-")) and _norm(name) in keep:
            kept.append(line)
    return "\n".join(kept) + "\n"


def venv(end: str, target: Path, python: str) -> None:
    chosen = pins(end, python)
    tools = [*TEST_TOOLS, *(f"{tool}=={chosen[base]}" for tool, base in PAIRED.items() if base in chosen)]
    subprocess.run([UV, "venv", "-q", "--clear", "--python", python, str(target)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        ranged = Path(tmp, "range.txt")
        ranged.write_text("".join(f"{n}=={v}\n" for n, v in sorted(chosen.items())))
        locked = Path(tmp, "locked.txt")
        locked.write_text(_locked_constraints({_norm(t) for t in TEST_TOOLS}))
        project = f"{ROOT}[{','.join(EXTRAS)}]"
        python_bin = str(target / "bin" / "python")
        constrained = ["-c", str(ranged), "-c", str(locked)]
        subprocess.run(
            [UV, "pip", "install", "-q", "--python", python_bin, *constrained, "-e", project, *tools],
            check=True,
        )
    print(f"{target}: {end} ends:", " ".join(f"{n}=={v}" for n, v in sorted(chosen.items())))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("pins", "venv"))
    parser.add_argument("end", choices=("lowest", "latest"))
    parser.add_argument("target", nargs="?", type=Path, help="the venv to (re)create, for `venv`")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to resolve and install for")
    args = parser.parse_args(argv)
    if args.what == "pins":
        print("".join(f"{n}=={v}\n" for n, v in sorted(pins(args.end, args.python).items())), end="")
    elif args.target is None:
        parser.error("venv needs a target folder")
    else:
        venv(args.end, args.target, args.python)


if __name__ == "__main__":
    main(sys.argv[1:])
