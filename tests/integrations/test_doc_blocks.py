"""Every ```python block of README.md and docs/*.md works as a reader would paste it: alone, in a fresh file.

Each block, exactly as the page shows it and nothing prepended:

- **type-checks alone** under ``mypy --strict`` (one mypy process checks every block, each its own file);
- **runs alone**: written to ``<block>.py`` in a folder of its own and run there with this project's
  interpreter, ``CLOUDFLARE_ACCOUNT_ID`` / ``CLOUDFLARE_API_TOKEN`` / ``CLOUDFLARE_BASE_URL`` pointing at one
  emulator for the whole module (as ``workers-ai serve`` prints them), within :data:`BOUND` seconds
  (:data:`RAY_BOUND` for a block that starts Ray). It must exit 0, warn nothing at the reader's lines or
  from this package, and print exactly the ```text block that follows it, where one does.

A block may name a file of the reader's own (a company CA bundle, a recording). :data:`STAND_INS` declares,
per block, the real file the test writes in its place: at that relative path in the block's folder, or, for
an absolute path, in the folder with the path in the code replaced by it. Nothing is skipped: a block that
cannot run here is not a python block.

The runs go three at a time beside mypy, and the Ray blocks one after the other in a lane of their own;
each test waits for its own block. Measured: about 90 s of CPU in all, 40 s of it mypy's (openai's and
anthropic's types are most of that) and half the rest the two Ray blocks; so about a minute on two idle
cores (as long as mypy or the Ray lane), 4-5 minutes on the shared 2-core machine at a load of 15-20.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trustme
from workers_ai.testing import Emulator
from workers_ai.testing._media import jpeg, mp3, wav

from tests._docs import PAGES, Block, python_blocks

BLOCKS = python_blocks()
BOUND = 120.0  # seconds for one block, start to exit, with the others (and mypy) running beside it
RAY_BOUND = 300.0  # a block that starts a local Ray cluster
PARALLEL = 4  # mypy and three blocks at a time (and the Ray lane)


def _ca_bundle(path: Path) -> None:
    trustme.CA().cert_pem.write_to_path(str(path))


def _safetensors(path: Path) -> None:
    """A LoRA adapter's weights: one float32 tensor in the safetensors layout (length, JSON header, data)."""
    header = json.dumps({"lora_A": {"dtype": "F32", "shape": [1, 1], "data_offsets": [0, 4]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + struct.pack("<f", 0.5))


def _adapter_config(path: Path) -> None:
    path.write_text(json.dumps({"r": 8, "lora_alpha": 16, "model_type": "mistral", "target_modules": ["q_proj"]}))


def _writes(data: bytes | str) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data.encode() if isinstance(data, str) else data)


@dataclass(frozen=True)
class StandIn:
    """The files of the reader's own that one block names (``phrase`` picks the block on ``page``), each with
    what the test writes in its place."""

    page: str
    phrase: str
    files: Mapping[str, Callable[[Path], None]] = field(default_factory=dict)

    def names(self, block: Block) -> bool:
        return block.page == self.page and self.phrase in block.code


STAND_INS = [
    StandIn("README.md", 'verify="/etc/ssl/corp-ca.pem"', {"/etc/ssl/corp-ca.pem": _ca_bundle}),
    StandIn("docs/networks.md", 'verify="/etc/ssl/corp-ca.pem"', {"/etc/ssl/corp-ca.pem": _ca_bundle}),
    StandIn(
        "docs/families.md",
        'Path("talk.mp3")',
        {"talk.mp3": _writes(mp3(2.0)), "street.jpg": _writes(jpeg(320, 240, "street"))},
    ),
    StandIn("docs/library.md", 'Path("talk.mp3")', {"talk.mp3": _writes(mp3(2.0))}),
    StandIn(
        "docs/library.md",
        "ai.to_markdown(",
        {
            "report.html": _writes("<h1>Q3</h1><p>Revenue grew.</p>"),
            "data.csv": _writes("region,revenue\nnorth,12\nsouth,9\n"),
            "adapter_model.safetensors": _safetensors,
            "adapter_config.json": _adapter_config,
        },
    ),
    StandIn("docs/realtime.md", '"talk.wav"', {"talk.wav": _writes(wav(1.0))}),
]


def _stand_ins(block: Block) -> dict[str, Callable[[Path], None]]:
    return {path: make for s in STAND_INS if s.names(block) for path, make in s.files.items()}


def _starts_ray(block: Block) -> bool:
    tree = ast.parse(block.code)
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    return any(name == "ray" or name.startswith(("ray.", "workers_ai.ray")) for name in names)


@dataclass
class Ran:
    returncode: int | None  # None: killed at the bound
    seconds: float
    stdout: str
    stderr: str


def _run(block: Block, folder: Path, env: Mapping[str, str]) -> Ran:
    folder.mkdir(parents=True)
    code = block.code
    for path, make in _stand_ins(block).items():
        target = folder / Path(path).name if path.startswith("/") else folder / path
        make(target)
        code = code.replace(path, str(target)) if path.startswith("/") else code
    script = folder / f"{block.slug}.py"
    script.write_text(code)
    bound = RAY_BOUND if _starts_ray(block) else BOUND
    start = time.monotonic()
    # A session of its own: at the bound the block and whatever it started (Ray's daemons) are stopped.
    proc = subprocess.Popen(
        [sys.executable, script.name],
        cwd=folder,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    returncode: int | None
    try:
        out, err = proc.communicate(timeout=bound)
        returncode = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        returncode = None
    return Ran(returncode, time.monotonic() - start, out, err)


def _mypy(blocks: list[Block], folder: Path) -> dict[str, list[str]]:
    """mypy --strict on every block, each alone in its own file: the error lines per block slug."""
    if not blocks:
        return {}
    folder.mkdir(parents=True)
    for block in blocks:
        (folder / f"{block.slug}.py").write_text(block.code)
    (folder / "none.ini").write_text("[mypy]\n")
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(folder / ".cache")]
    # pyarrow ships no type information: a reader's mypy needs the same switch for it.
    cmd += ["--config-file", "none.ini", "--disable-error-code", "import-untyped"]
    done = subprocess.run(
        [*cmd, *(f"{b.slug}.py" for b in blocks)], capture_output=True, text=True, cwd=folder, timeout=900
    )
    errors: dict[str, list[str]] = {b.slug: [] for b in blocks}
    for line in done.stdout.splitlines():
        m = re.match(r"(\w+)\.py:\d+: (error|note)", line)
        if m and m[1] in errors:
            errors[m[1]].append(line)
    if done.returncode != 0 and not any(errors.values()):  # mypy itself failed: every block says so
        errors = {slug: [done.stdout[-3000:] + done.stderr[-3000:]] for slug in errors}
    return errors


@dataclass
class Runs:
    """Futures of the blocks' runs and of the mypy pass, for the blocks this pytest session selected."""

    ran: dict[str, Future[Ran]]
    typed: Future[dict[str, list[str]]]


def _selected(request: pytest.FixtureRequest, test: Callable[..., None]) -> list[Block]:
    """The blocks this pytest session runs ``test`` for (all of them, unless ``-k`` or ids chose some)."""
    chosen: set[str] = set()
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if getattr(item, "function", None) is test and isinstance(params.get("block"), Block):
            chosen.add(params["block"].slug)
    return [b for b in BLOCKS if b.slug in chosen]


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("doc_blocks")
    # Ray blocks go one at a time in a lane of their own: two local clusters starting at once on a busy
    # machine can miss Ray's own 30 s startup wait.
    with Emulator() as emu, ThreadPoolExecutor(PARALLEL) as pool, ThreadPoolExecutor(1) as ray_lane:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDFLARE_", "WORKERS_AI_"))}
        env.update(
            CLOUDFLARE_ACCOUNT_ID=emu.account_id,
            CLOUDFLARE_API_TOKEN=emu.api_token,
            CLOUDFLARE_BASE_URL=emu.base_url,
            RAY_USAGE_STATS_ENABLED="0",  # Ray reports nothing anywhere
        )
        typed = pool.submit(_mypy, _selected(request, test_a_block_type_checks_alone), root / "mypy")
        ran: dict[str, Future[Ran]] = {}
        for block in _selected(request, test_a_block_runs_alone):
            lane = ray_lane if _starts_ray(block) else pool
            ran[block.slug] = lane.submit(_run, block, root / "run" / block.slug, env)
        yield Runs(ran, typed)
        for future in ran.values():
            future.cancel()


def test_the_pages_have_python_blocks_all_run_here() -> None:
    assert len(BLOCKS) >= 20
    assert {b.page for b in BLOCKS} >= {"README.md", "docs/library.md", "docs/realtime.md", "docs/bulk.md"}
    assert len(PAGES) > 10
    assert any(b.output is not None and b.page == "README.md" for b in BLOCKS), "README shows no output"


@pytest.mark.parametrize("stand_in", STAND_INS, ids=[f"{s.page}:{s.phrase}" for s in STAND_INS])
def test_a_stand_in_names_one_block_and_files_it_names(stand_in: StandIn) -> None:
    named = [b for b in BLOCKS if stand_in.names(b)]
    assert len(named) == 1, f"{stand_in.page}: {stand_in.phrase!r} names {len(named)} blocks"
    assert [p for p in stand_in.files if p not in named[0].code] == []


@pytest.mark.parametrize("block", BLOCKS, ids=[b.slug for b in BLOCKS])
def test_a_block_type_checks_alone(runs: Runs, block: Block) -> None:
    errors = runs.typed.result()[block.slug]
    assert errors == [], f"{block.page}, line {block.line}, under mypy --strict alone:\n" + "\n".join(errors)


# A warning pointed at the reader's own line, or raised inside this package: "file:line: SomeWarning: ..."
_WARNED = re.compile(r"^(\S+):\d+: \w*Warning: .*$", re.M)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.slug for b in BLOCKS])
def test_a_block_runs_alone(runs: Runs, block: Block) -> None:
    ran = runs.ran[block.slug].result()
    where = f"{block.page}, line {block.line}"
    bound = RAY_BOUND if _starts_ray(block) else BOUND
    assert ran.returncode is not None, f"{where}: still running after {bound:g} s\n{ran.stderr[-3000:]}"
    assert ran.returncode == 0, f"{where}: exit {ran.returncode}\n{ran.stderr[-3000:]}"
    warned = [m[0] for m in _WARNED.finditer(ran.stderr) if m[1].endswith(f"{block.slug}.py") or "workers_ai" in m[1]]
    assert warned == [], f"{where} warns:\n" + "\n".join(warned)
    if block.output is not None:
        assert ran.stdout == block.output, f"{where}: prints other than the page shows"
