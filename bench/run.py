"""Benchmarks side by side: this SDK, the official ``cloudflare`` SDK, the ``openai`` SDK and the floor.

``make bench`` (or ``.venv/bin/python bench/run.py``) runs everything in one go and writes
``bench/results/latest.md`` and ``bench/results/latest.json``. It never asserts: a goal that is missed
shows as missed, and a comparison that cannot run says why while the rest goes on.

Where things run:

- the comparison SDKs live in ``bench/.venv-peers`` (created here, gitignored), never in the
  project's own environment;
- our SDK is measured as a user gets it: a wheel built from this tree and installed into a fresh
  venv holding only msgspec and urllib3 (the floor runs there too);
- every client talks to ``bench/_server.py`` (or, for batches, the project's emulator) in another
  process on 127.0.0.1, so the server's CPU never counts as the client's.

Options: ``--quick`` (fewer repeats, for trying the harness), ``--only NAME ...`` (sections: cold,
calls, batch, sse, load, async, emulator, generator, footprint, typing), ``--skip-peers`` (no comparison SDKs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PEERS_VENV = BENCH / ".venv-peers"
CATALOG = Path(os.environ.get("WORKERS_AI_CATALOG") or ROOT.parent / "shared" / "catalog")  # as the tests find it
PY = sys.executable

# The comparison SDKs, pinned so reruns compare like with like (the versions studied in the notes).
PEERS = {"cloudflare": "cloudflare==5.9.0", "openai": "openai==3.54.0"}
OURS_COLD = (
    "from workers_ai import WorkersAI; ai = WorkersAI(account_id='a' * 32, api_token='t'); ai.model('@cf/baai/bge-m3')"
)
COLD_CASES = {
    "python": "pass",
    "floor": "import urllib3, msgspec",
    "ours": OURS_COLD,
    "cloudflare": "from cloudflare import Cloudflare; c = Cloudflare(api_token='t'); c.ai.run",
    "openai": "from openai import OpenAI; c = OpenAI(api_key='t'); c.embeddings.create",
}
MYPY_FILES = {
    "floor": '''"""A small user program, type-checked cold by the benchmark."""

import msgspec
import urllib3


class Embedding(msgspec.Struct):
    data: list[list[float]]


resp = urllib3.request("POST", "http://127.0.0.1/ai/run/@cf/baai/bge-m3", json={"text": ["hello"]})
print(msgspec.json.decode(resp.data, type=Embedding).data[0][:3])
''',
    "ours": '''"""A small user program, type-checked cold by the benchmark."""

from workers_ai import WorkersAI
from workers_ai.models.cf.baai.bge_m3 import Context

ai = WorkersAI(account_id="a" * 32, api_token="t")
bge = ai.model("@cf/baai/bge-m3")
emb = bge.embed(text=["hello", "world"])
ranked = bge.rank(query="which one?", contexts=[Context(text="a"), Context(text="b")])
print(emb.shape, ranked.response)
''',
    "ours-3-models": '''"""A small user program using three models, type-checked cold in the dev environment."""

from workers_ai import WorkersAI

ai = WorkersAI(account_id="a", api_token="t")
emb = ai.model("@cf/baai/bge-m3").embed(text=["hello"])
llama = ai.model("@cf/meta/llama-3.1-8b-instruct")
out = llama.chat(messages=[{"role": "user", "content": "hi"}])
heard = ai.model("@cf/openai/whisper").transcribe(b"\\x00\\x01")
print(emb.shape, out.response, heard.text)
''',
    "cloudflare": '''"""A small user program, type-checked cold by the benchmark."""

from cloudflare import Cloudflare

client = Cloudflare(api_token="t")
emb = client.ai.run("@cf/baai/bge-m3", account_id="a", text=["hello", "world"])
print(emb)
''',
    "openai": '''"""A small user program, type-checked cold by the benchmark."""

from openai import OpenAI

client = OpenAI(api_key="t", base_url="http://127.0.0.1/client/v4/accounts/a/ai/v1")
emb = client.embeddings.create(model="@cf/baai/bge-m3", input=["hello", "world"])
print(emb.data[0].embedding[:3])
''',
}


# --------------------------------------------------------------------------- helpers


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def child_env() -> dict[str, str]:
    """The environment for measured processes: no bytecode switch-off (users have .pyc files), no
    path tweaks, no Cloudflare credentials."""
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME"):
        env.pop(name, None)
    for name in list(env):
        if name.startswith(("CLOUDFLARE_", "OPENAI_")):
            env.pop(name)
    return env


def run(cmd: list[str], *, timeout: float = 600, cwd: Path | None = None, check: bool = True) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=child_env(), check=False)
    if check and proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).strip().splitlines() if not line.startswith("WARNING:")]
        tail = " / ".join(line.strip() for line in lines[-4:])
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {proc.returncode}: {tail}")
    return proc.stdout


def run_json(cmd: list[str], **kw: Any) -> Any:
    out = run(cmd, **kw)
    return json.loads(out.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def pip_install(python: Path, *specs: str, timeout: float = 300) -> None:
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *specs], timeout=timeout)


@contextmanager
def background(cmd: list[str], ready_prefix: str, timeout: float = 30.0) -> Iterator[str]:
    """Start a helper process and yield the rest of its first stdout line that starts with
    ``ready_prefix``; it is stopped (stdin closed, then terminated) when the block ends."""
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith(ready_prefix):
                break
        if not line.startswith(ready_prefix):
            err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
            raise RuntimeError(f"{cmd[1]} did not start: {err.strip()[-500:]}")
        yield line[len(ready_prefix) :].strip()
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# --------------------------------------------------------------------------- environments


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
    floor_specs = [f"{name}=={version}" for name, version in _own_versions().items() if name in ("msgspec", "urllib3")]
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


# --------------------------------------------------------------------------- sections


def bench_cold(envs: Envs, repeats: int, work: Path) -> dict[str, Any]:
    """Fresh ``python -c`` processes, interleaved case by case so drift hits every case alike."""
    cases: dict[str, tuple[Path, str]] = {}
    skipped: dict[str, str] = {}
    for name, code in COLD_CASES.items():
        python = envs.python_for(name) if name != "python" else envs.ours
        if python is None:
            skipped[name] = envs.missing(name)
        else:
            cases[name] = (python, code)
    if envs.peers is not None and envs.peer_ok:
        cases["python (peers venv)"] = (envs.peers, "pass")
    cwd = work / "cold"
    cwd.mkdir(exist_ok=True)
    modules: dict[str, int] = {}
    for name, (python, code) in cases.items():  # warm the OS cache and write any missing .pyc
        out = run([str(python), "-c", f"{code}\nimport sys; print(len(sys.modules))"], cwd=cwd)
        modules[name] = int(out.strip().splitlines()[-1])
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (python, code) in cases.items():
            child = _measure_child([str(python), "-c", code], cwd)
            if child.code != 0:
                raise RuntimeError(f"{name}: exited {child.code}: {_last_line(child.output)}")
            times[name].append(child.wall)
            cpu[name].append(child.cpu)
    rows: dict[str, Any] = {}
    for name, values in times.items():
        rows[name] = {
            "ms": round(median(values) * 1000, 1),
            "min_ms": round(min(values) * 1000, 1),
            "cpu_ms": round(median(cpu[name]) * 1000, 1),
            "modules": modules[name],
            "samples_ms": [round(v * 1000, 1) for v in values],
            "cpu_samples_ms": [round(v * 1000, 1) for v in cpu[name]],
        }
        # Paired per-round ratios: the samples of one round were taken back to back.
        for ref, key in (("floor", "vs_floor"), ("cloudflare", "vs_official")):
            if ref in times:
                paired = [v / r for v, r in zip(values, times[ref], strict=True)]
                rows[name][key] = round(median(paired), 3)
                rows[name][key + "_iqr"] = _iqr(paired)  # the spread: the middle half of the paired ratios
                rows[name][key + "_cpu"] = round(
                    median([v / r for v, r in zip(cpu[name], cpu[ref], strict=True) if r > 0]), 3
                )
    for name, why in skipped.items():
        rows[name] = {"error": why}
    return {
        "repeats": repeats,
        "ours_env": envs.ours_kind,
        "rows": rows,
        "code": COLD_CASES,
        "ours_beyond_floor": _import_profile(envs.ours, cwd),
    }


def _import_profile(python: Path, cwd: Path) -> list[dict[str, Any]]:
    """``-X importtime`` of ours after the floor's imports: what our SDK adds, largest self time first."""
    code = f"import urllib3, msgspec\n{OURS_COLD}"
    proc = subprocess.run(
        [str(python), "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=cwd, env=child_env()
    )
    rows: list[dict[str, Any]] = []
    seen_floor = False
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[0].startswith("import time:"):
            continue
        name = parts[2].strip()
        if not seen_floor:
            seen_floor = name == "msgspec"
            continue
        try:
            rows.append({"module": name, "self_us": int(parts[0].split(":")[1]), "cumulative_us": int(parts[1])})
        except ValueError:
            continue
    return sorted(rows, key=lambda r: -r["self_us"])[:12]


CALL_IMPLS = ["floor", "floor-json", "ours", "cloudflare", "openai"]


def bench_calls(envs: Envs, passes: int, rounds: int) -> dict[str, Any]:
    """Client CPU per call over keep-alive loopback, for a small reply and a 100 x 1024 one.

    One process per environment runs its clients in turns (the floor in each, when it can), and
    ``passes`` such processes per environment alternate. Absolute figures are medians of all samples;
    ratios to the floor are medians of per-round ratios against the floor of the same process, which
    cancels most of the noise a busy machine adds.
    """
    import _server  # bench/ is on sys.path: this file runs as a script

    out: dict[str, Any] = {
        "reply_bytes": {
            "small": len(_server.rank_reply(3)),
            "big": len(_server.embed_reply(100)),
            "openai_big": len(_server.openai_reply(100, _server.DIMS, "@cf/baai/bge-m3")),
        },
        "passes": passes,
        "rounds": rounds,
    }
    groups: list[tuple[Path, list[str]]] = [(envs.ours, ["floor", "floor-json", "ours"])]
    if envs.peers is not None and envs.peer_ok:
        peers = [name for name in PEERS if name in envs.peer_ok]
        groups.append((envs.peers, (["floor"] if envs.peers_have_floor else []) + peers))
    with background([PY, str(BENCH / "_server.py")], "PORT ") as port:
        for case in ("small", "big"):
            samples: dict[str, dict[str, Any]] = {}
            for _ in range(passes):
                for python, impls in groups:
                    cmd = [str(python), str(BENCH / "_calls.py"), ",".join(impls), case, port, str(rounds)]
                    try:
                        res = run_json(cmd)
                    except Exception as exc:
                        for impl in impls:
                            samples.setdefault(impl, {"error": str(exc)[-400:]})
                        continue
                    floor = res.get("floor", {}).get("cpu")
                    for impl, got in res.items():
                        if "error" in got:
                            samples.setdefault(impl, {"error": got["error"]})
                            continue
                        entry = samples.setdefault(impl, {"cpu": [], "wall": [], "calls": [], "vs_floor": []})
                        if "error" in entry:
                            continue
                        entry["cpu"] += got["cpu"]
                        entry["wall"] += got["wall"]
                        entry["calls"].append(got["calls"])
                        entry["check"] = got["check"]
                        if floor:
                            entry["vs_floor"] += [c / f for c, f in zip(got["cpu"], floor, strict=False) if f > 0]
            rows: dict[str, Any] = {}
            for impl in CALL_IMPLS:
                entry = samples.get(impl)
                if entry is None:
                    rows[impl] = {"error": envs.missing(impl)}
                    continue
                if "error" in entry:
                    rows[impl] = {"error": entry["error"]}
                    continue
                rows[impl] = {
                    "cpu_us": round(median(entry["cpu"]) * 1e6, 1),
                    "wall_us": round(median(entry["wall"]) * 1e6, 1),
                    "vs_floor": round(median(entry["vs_floor"]), 3) if entry["vs_floor"] else None,
                    # The spread of the per-round ratios: their middle half (25th to 75th percentile).
                    "vs_floor_iqr": _iqr(entry["vs_floor"]),
                    "samples": len(entry["cpu"]),
                    "calls_per_sample": entry["calls"],
                    "result": entry["check"],
                    "cpu_us_samples": [round(v * 1e6, 1) for v in entry["cpu"]],
                }
            _relative_to_official(rows)
            out[case] = rows
            log(
                f"calls/{case}: "
                + ", ".join(f"{k} {v.get('cpu_us', 'n/a')}us ({v.get('vs_floor')}x)" for k, v in rows.items())
            )
    return out


def _iqr(values: list[float]) -> list[float] | None:
    """The 25th and 75th percentiles of ``values`` (None for fewer than 4)."""
    if len(values) < 4:
        return None
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 3), round(q[2], 3)]


def _relative_to_official(rows: dict[str, Any]) -> None:
    """``vs_official``: each client's CPU over the official SDK's, through the floor ratios when both
    have one (each was measured against the floor of its own process), else from the raw medians."""
    official = rows.get("cloudflare", {})
    for row in rows.values():
        if "error" in row or "error" in official or not official:
            continue
        if row.get("vs_floor") and official.get("vs_floor"):
            row["vs_official"] = round(row["vs_floor"] / official["vs_floor"], 3)
        else:
            row["vs_official"] = round(row["cpu_us"] / official["cpu_us"], 3)


def bench_sse(megabytes: float, runs: int) -> dict[str, Any]:
    res = run_json([PY, str(BENCH / "_sse.py"), str(megabytes), str(runs)])
    return res  # type: ignore[no-any-return]


def bench_load(envs: Envs, stream_rounds: int, thread_seconds: float) -> dict[str, Any]:
    """The streaming row (5,000 typed events, client CPU vs floor) and the 64-thread row (calls/s
    against a server holding every reply 20 ms, vs floor), each in one process of the wheel's venv."""
    python = envs.python_for("ours") or Path(PY)
    out: dict[str, Any] = {}
    with background([str(python), str(BENCH / "_server.py"), "0", "0"], "PORT ") as port:
        out["stream"] = run_json([str(python), str(BENCH / "_load.py"), "stream", port, str(stream_rounds)])
    with background([str(python), str(BENCH / "_server.py"), "0", "20"], "PORT ") as port:
        out["threads"] = run_json([str(python), str(BENCH / "_load.py"), "threads", port, str(thread_seconds)])
    return out


def bench_async(seconds: float, rounds: int) -> dict[str, Any]:
    """``AsyncWorkersAI`` vs aiohttp and httpx used directly and vs the sync client on threads: calls/s
    and CPU per call at concurrency 1, 16 and 64 against a server holding every reply 20 ms. Runs in
    the project's .venv (it has the ``async`` extra and httpx; the wheel venv has only the core deps)."""
    rows = "aiohttp,httpx,ours_async,ours_threads"
    with background([PY, str(BENCH / "_server.py"), "0", "20"], "PORT ") as port:
        out: dict[str, Any] = run_json([PY, str(BENCH / "_async.py"), port, str(seconds), rows, str(rounds)])
    for level in ("1", "16", "64"):
        base = out["aiohttp"][level]["calls_per_s"]
        out.setdefault("ratio_vs_aiohttp", {})[level] = out["ours_async"][level]["calls_per_s"] / base
        out.setdefault("ratio_vs_threads", {})[level] = (
            out["ours_async"][level]["calls_per_s"] / out["ours_threads"][level]["calls_per_s"]
        )
    return out


def bench_realtime(seconds: float, rounds: int) -> dict[str, Any]:
    """Realtime sessions (issue 21) against the emulator in another process: client CPU per audio
    second vs websockets and aiohttp used directly, 32 concurrent sessions, first interim latency."""
    with background([PY, str(BENCH / "_realtime.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        out: dict[str, Any] = run_json([PY, str(BENCH / "_realtime.py"), "client", spec, str(seconds), str(rounds)])
    return out


def bench_emulator(seconds: float) -> dict[str, Any]:
    """The emulator under a test suite's load: calls/s from 64 client threads (another process) for a
    rank, an embedding and a chat reply, and the rank against bench/_server.py (cached bytes) as the floor."""
    with background([PY, str(BENCH / "_emulator.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        base, account, token = spec.split()
        with background([PY, str(BENCH / "_server.py"), "0", "0"], "PORT ") as port:
            floor = f"http://127.0.0.1:{port}/client/v4"
            cmd = [PY, str(BENCH / "_emulator.py"), "client", base, account, token, str(seconds), floor]
            out: dict[str, Any] = run_json(cmd, timeout=300)
    return out


def bench_batch(texts: int) -> dict[str, Any]:
    """10,000 texts through the chunking helper and the batch API, against the emulator in another
    process with fast queue settings: client CPU, wall time and peak RSS of the client process."""
    python = PY  # the emulator needs the [testing] extra, which the footprint venv must not have
    probe = run([python, str(BENCH / "_batch.py"), "probe"], check=False).strip()
    if not probe.startswith("ok"):
        return {"error": probe or "the emulator is not available"}
    with background([python, str(BENCH / "_batch.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        out: dict[str, Any] = run_json([python, str(BENCH / "_batch.py"), "client", spec, str(texts)], timeout=400)
        # The same texts as one float32 array (a fresh process, so its peak RSS is its own), then on Ray.
        for key, cmd in (("numpy", ["client", spec, str(texts), "numpy"]), ("ray", ["ray", spec, str(texts)])):
            try:
                out[key] = run_json([python, str(BENCH / "_batch.py"), *cmd], timeout=600)
            except Exception as exc:  # numpy/Ray missing (the `ray` extra) or a failed run: say so, go on
                out[key] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        return out


OTEL_MODES = {
    "noapi": "without `opentelemetry-api` (import refused)",
    "api": "API installed, no SDK (no-op global providers)",
    "sdk": "SDK + `SimpleSpanProcessor` into `InMemorySpanExporter`, `InMemoryMetricReader`",
}


def _spread(values: list[float]) -> list[float]:
    """The 25th and 75th percentiles (the middle half of the samples)."""
    ordered = sorted(values)
    if not ordered:
        return []
    return [round(ordered[len(ordered) // 4], 3), round(ordered[(3 * len(ordered)) // 4], 3)]


def bench_otel(passes: int, rounds: int, imports: int) -> dict[str, Any]:
    """What telemetry costs (issue 29): client CPU per call with telemetry on vs ``telemetry=False`` in
    the same process (bge-m3 ``rank`` over keep-alive loopback, turns taken per round), in a process
    without ``opentelemetry-api``, with the API and no SDK, and with the SDK and in-memory exporters;
    and ``import workers_ai`` (``-X importtime``) with and without the API importable."""
    out: dict[str, Any] = {"passes": passes, "rounds": rounds}
    with background([PY, str(BENCH / "_server.py")], "PORT ") as port:
        for mode in OTEL_MODES:
            cpu: dict[str, list[float]] = {"floor": [], "off": [], "on": []}
            on_off: list[float] = []
            meta: dict[str, Any] = {}
            for _ in range(passes):
                res = run_json([PY, str(BENCH / "_otel.py"), mode, port, str(rounds)])
                meta = res.pop("meta")
                for key in cpu:
                    cpu[key] += res[key]["cpu"]
                on_off += [a / b for a, b in zip(res["on"]["cpu"], res["off"]["cpu"], strict=True) if b > 0]
            out[mode] = {
                "cpu_us": {k: round(median(v) * 1e6, 1) for k, v in cpu.items()},
                "on_vs_off": round(median(on_off), 3),
                "on_vs_off_p25_p75": _spread(on_off),
                "off_vs_floor": round(median(cpu["off"]) / median(cpu["floor"]), 3),
                "samples": len(on_off),
                **meta,
            }
            log(f"otel/{mode}: on/off {out[mode]['on_vs_off']} {out[mode]['on_vs_off_p25_p75']}")
    times: dict[str, list[float]] = {"noapi": [], "api": []}
    loaded = False
    for _ in range(imports):
        for mode in times:
            got = run_json([PY, str(BENCH / "_otel.py"), "import", mode], cwd=BENCH)
            times[mode].append(got["seconds"])
            loaded = loaded or got["otel_loaded"]
    ratios = [a / b for a, b in zip(times["noapi"], times["api"], strict=True) if b > 0]
    out["import"] = {
        "noapi_ms": round(median(times["noapi"]) * 1000, 2),
        "api_ms": round(median(times["api"]) * 1000, 2),
        "noapi_vs_api": round(median(ratios), 3),
        "noapi_vs_api_p25_p75": _spread(ratios),
        "repeats": imports,
        "otel_loaded_at_cold_start": loaded,
    }
    log(f"otel/import: {out['import']}")
    return out


def bench_queue(n: int) -> dict[str, Any]:
    """``n`` small requests through the emulator's batch queue (bench/_queue.py): client CPU per item and
    peak RSS of batch_many and ``workers-ai batch``, with and without a journal, as ratios to the same JSON
    posted and polled with plain urllib3 + msgspec; the CLI also at n/10, to show its memory does not grow
    with the number of requests. Each run is a fresh process; the emulator is another one."""
    with background([PY, str(BENCH / "_queue.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        runs: dict[str, Any] = {}
        for mode in ("floor", "many", "many_journal", "cli", "cli_journal"):
            runs[mode] = run_json([PY, str(BENCH / "_queue.py"), "client", spec, str(n), mode], timeout=1800)
        small = run_json([PY, str(BENCH / "_queue.py"), "client", spec, str(n // 10), "cli_journal"], timeout=600)
    floor = runs["floor"]
    out: dict[str, Any] = {"requests": n, "runs": runs, "cli_journal_at_n_over_10": small}
    for r in runs.values():
        r["cpu_us_per_item"] = round(r["cpu_s"] / n * 1e6, 2)
        r["cpu_vs_floor"] = round(r["cpu_s"] / floor["cpu_s"], 2)
        r["peak_rss_vs_floor"] = round(r["peak_rss_mb"] / floor["peak_rss_mb"], 2)
    out["journal_cpu_cost"] = round(runs["many_journal"]["cpu_s"] / runs["many"]["cpu_s"], 3)
    out["cli_journal_cpu_cost"] = round(runs["cli_journal"]["cpu_s"] / runs["cli"]["cpu_s"], 3)
    out["cli_peak_rss_n_vs_n_over_10"] = round(runs["cli_journal"]["peak_rss_mb"] / small["peak_rss_mb"], 2)
    return out


def catalog_copy(dest: Path) -> tuple[int, list[str]]:
    """Copy the catalog files that have both schema halves (the others are left out on purpose)."""
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    count = 0
    for path in sorted(CATALOG.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            skipped.append(path.name)
            continue
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(schema, dict) or not schema.get("input") or not schema.get("output"):
            skipped.append(path.name)
            continue
        shutil.copy2(path, dest / path.name)
        count += 1
    return count, skipped


def bench_generator(work: Path) -> dict[str, Any]:
    if not CATALOG.is_dir():
        return {"error": f"catalog not found at {CATALOG}"}
    schemas = work / "gen-schemas"
    out_dir = work / "gen-out"
    count, skipped = catalog_copy(schemas)
    cmd = [PY, "-m", "codegen", "--schemas", str(schemas), "--out", str(out_dir), "--package", "bench_pkg"]
    full = _measure_child(cmd, ROOT)
    if full.code != 0:
        raise RuntimeError(f"codegen exited {full.code}: {_last_line(full.output)}")
    target = schemas / "bge-m3.json"
    if not target.exists():
        target = sorted(schemas.glob("*.json"))[0]
    doc = json.loads(target.read_text())
    doc["description"] = str(doc.get("description", "")) + " (edited by the benchmark)"
    target.write_text(json.dumps(doc, indent=2))
    one = _measure_child(cmd, ROOT)
    if one.code != 0:
        raise RuntimeError(f"codegen exited {one.code}: {_last_line(one.output)}")
    files = sum(1 for p in (out_dir / "bench_pkg").rglob("*") if p.is_file())
    return {
        "models": count,
        "left_out": skipped,
        "files": files,
        "full_s": round(full.wall, 2),
        "full_cpu_s": round(full.cpu, 2),
        "full_summary": _last_line(full.output).replace(str(out_dir), "TMP2"),
        "one_changed_s": round(one.wall, 2),
        "one_changed_cpu_s": round(one.cpu, 2),
        "one_changed_file": target.name,
        "one_changed_summary": _last_line(one.output).replace(str(out_dir), "TMP2"),
    }


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def bench_footprint(envs: Envs, wheel_info: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"wheel": wheel_info}
    if envs.wheel is not None:
        res = run_json([str(envs.wheel), str(BENCH / "_footprint.py"), "workers-ai"])
        out["ours"] = res["workers-ai"]
    else:
        out["ours"] = {"error": envs.wheel_error or "no wheel venv"}
    for name in PEERS:
        if name in envs.peer_ok and envs.peers is not None:
            out[name] = run_json([str(envs.peers), str(BENCH / "_footprint.py"), name])[name]
        else:
            out[name] = {"error": envs.missing(name)}
    return out


def bench_typing(envs: Envs, work: Path, repeats: int) -> dict[str, Any]:
    """mypy on a 10-line user file, cold: a fresh --cache-dir each run, no config file."""
    mypy = ROOT / ".venv" / "bin" / "mypy"
    if not mypy.exists():
        found = shutil.which("mypy")
        if found is None:
            return {"error": "mypy not found"}
        mypy = Path(found)
    folder = work / "typing"
    folder.mkdir(exist_ok=True)
    version = run([str(mypy), "--version"]).strip()
    rows: dict[str, Any] = {}
    for name, source in MYPY_FILES.items():
        # The 3-model row runs where numpy, aiohttp and pydantic are installed (the project .venv), as in
        # most users' environments: mypy must not reach them through our imports.
        python = Path(PY) if name == "ours-3-models" else envs.python_for(name)
        if python is None:
            rows[name] = {"error": envs.missing(name)}
            continue
        user_file = folder / f"user_{name}.py"
        user_file.write_text(source)
        walls: list[float] = []
        rss: list[int] = []
        status = 0
        output = ""
        for i in range(1 if name in PEERS else repeats):
            cache = folder / f"cache-{name}-{i}"
            shutil.rmtree(cache, ignore_errors=True)
            cmd = [str(mypy), "--config-file=", "--cache-dir", str(cache), "--python-executable", str(python)]
            if name == "ours-3-models":
                cmd.append("--strict")
            child = _measure_child([*cmd, user_file.name], folder)
            walls.append(child.wall)
            rss.append(child.peak_kib)
            status, output = child.code, child.output
            modules = _cached_modules(cache)
            shutil.rmtree(cache, ignore_errors=True)
        rows[name] = {
            "wall_s": round(median(walls), 2),
            "peak_rss_mb": round(max(rss) / 1024, 1),
            "modules": modules,
            "runs": len(walls),
            "exit": status,
            "mypy_says": _last_line(output)[:200],
        }
        log(f"typing/{name}: {rows[name]['wall_s']} s, {rows[name]['peak_rss_mb']} MB")
    return {"mypy": version, "rows": rows}


def _cached_modules(cache: Path) -> dict[str, int]:
    """Modules mypy analysed, by top-level package (read from its cache: JSON files or its SQLite store)."""
    import collections
    import sqlite3

    counts: collections.Counter[str] = collections.Counter()
    names = [str(p.relative_to(cache)) for p in cache.rglob("*.meta.json")]
    for db in cache.rglob("*.db"):
        try:
            with sqlite3.connect(db) as conn:
                names += [row[0] for row in conn.execute("select path from files2") if ".meta." in row[0]]
        except sqlite3.Error:
            continue
    for name in names:
        parts = Path(name).parts
        counts[(parts[1] if parts and parts[0].startswith("3.") else parts[0]).split(".")[0]] += 1
    return {"total": sum(counts.values()), **dict(counts.most_common(5))}


def bench_size() -> dict[str, Any]:
    """The generated package: lines (all, model modules), and repeated blocks across model modules."""
    pkg = ROOT / "generated" / "workers_ai"
    py = [p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts]
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in py}
    models = pkg / "models"
    out: dict[str, Any] = {
        "lines": sum(lines.values()),
        "model_lines": sum(n for p, n in lines.items() if models in p.parents),
        "runtime_lines": sum(n for p, n in lines.items() if models not in p.parents and "testing" not in p.parts),
        "files": len(py),
    }
    tool = shutil.which("duplicates")  # the team's duplicate-block scanner, where installed
    if tool is not None:
        text = run([tool, "--repo", str(models), "--most", "1", "--seconds", "120"], check=False)
        first = text.strip().splitlines()[0] if text.strip() else ""
        out["model_duplicate_pairs"] = int(first.split()[0]) if first[:1].isdigit() else None
        out["duplicates_says"] = first[:200]
    return out


class Child:
    """What one measured child process did: wall and CPU seconds, peak RSS (KiB), exit code, output."""

    def __init__(self, wall: float, cpu: float, peak_kib: int, code: int, output: str) -> None:
        self.wall = wall
        self.cpu = cpu
        self.peak_kib = peak_kib
        self.code = code
        self.output = output


def _measure_child(cmd: list[str], cwd: Path) -> Child:
    """Run ``cmd`` and read the resource use of exactly that child with ``wait4``."""
    with tempfile.TemporaryFile(mode="w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=child_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return Child(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode, out.read())


# --------------------------------------------------------------------------- goals and report


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal: what it is, the target, the measured value, and whether it is met (None: not measured)."""
    out: list[dict[str, Any]] = []

    def add(name: str, target: str, value: float | None, ok: Callable[[float], bool], fmt: str) -> None:
        out.append(
            {
                "goal": name,
                "target": target,
                "measured": None if value is None else fmt.format(value),
                "value": value,
                "met": None if value is None else bool(ok(value)),
            }
        )

    otel = results.get("otel", {})
    add(
        "Telemetry, no opentelemetry-api: CPU per call vs telemetry=False",
        "<= 1.02x",
        otel.get("noapi", {}).get("on_vs_off"),
        lambda v: v <= 1.02,
        "{:.3f}x",
    )
    add(
        "Telemetry, API without SDK: CPU per call vs telemetry=False",
        "<= 1.05x",
        otel.get("api", {}).get("on_vs_off"),
        lambda v: v <= 1.05,
        "{:.3f}x",
    )
    add(
        "Cold start without vs with opentelemetry-api importable",
        "<= 1.02x",
        otel.get("import", {}).get("noapi_vs_api"),
        lambda v: v <= 1.02,
        "{:.3f}x",
    )

    cold = results.get("cold", {}).get("rows", {})
    add(
        "Cold start (import + client + model handle) vs floor (issue 28)",
        "<= 1.10x",
        _get(cold, "ours", "vs_floor"),
        lambda v: v <= 1.10,
        "{:.2f}x",
    )
    calls = results.get("calls", {})
    small = calls.get("small", {})
    big = calls.get("big", {})
    add(
        "Per-call client CPU, small reply, vs floor (issue 28)",
        "<= 1.10x",
        _get(small, "ours", "vs_floor"),
        lambda v: v <= 1.10,
        "{:.2f}x",
    )
    add(
        "Per-call client CPU, small reply: official SDK / ours",
        ">= 2.5x",
        _inverse(_get(small, "ours", "vs_official")),
        lambda v: v >= 2.5,
        "{:.2f}x",
    )
    add(
        "Per-call client CPU, small reply (notes: peers 1.0-1.1 ms)",
        "<= 0.5 ms",
        _scale(_get(small, "ours", "cpu_us"), 1e-3),
        lambda v: v <= 0.5,
        "{:.3f} ms",
    )
    add(
        "100x1024 typed embeddings decode, client CPU vs floor (typed msgspec; issue 28)",
        "<= 1.15x",
        _get(big, "ours", "vs_floor"),
        lambda v: v <= 1.15,
        "{:.2f}x",
    )
    add(
        "100x1024 typed embeddings, client CPU per call (notes)",
        "<= 5 ms",
        _scale(_get(big, "ours", "cpu_us"), 1e-3),
        lambda v: v <= 5.0,
        "{:.2f} ms",
    )
    num = (results.get("batch") or {}).get("numpy") or {}
    over = num["peak_rss_mb"] - num["base_rss_mb"] if "peak_rss_mb" in num else None
    add(
        "10k x 1024 via embed_many(as_numpy=True): peak RSS above the interpreter's (numpy loaded)",
        "<= 60 MB (1.5x the 40 MB of float32)",
        over,
        lambda v: v <= 60,
        "{:.0f} MB",
    )
    load = results.get("load", {})
    add(
        "5,000 typed SSE events, client CPU vs floor (urllib3 + split + msgspec)",
        "<= 1.25x",
        load.get("stream", {}).get("ratio"),
        lambda v: v <= 1.25,
        "{:.2f}x",
    )
    add(
        "64 threads, 20 ms server, calls/s vs floor (PoolManager(maxsize=64) + msgspec; issue 28)",
        ">= 0.97x",
        load.get("threads", {}).get("ratio"),
        lambda v: v >= 0.97,
        "{:.2f}x",
    )
    full = load.get("threads", {}).get("pool_full_warnings")
    add(
        "'Connection pool is full' warnings at 64 threads, default client",
        "0",
        None if full is None else float(full),
        lambda v: v == 0,
        "{:.0f}",
    )
    aio = results.get("async", {})
    add(
        "AsyncWorkersAI at 64 tasks, 20 ms server, calls/s vs aiohttp used directly (issue 12)",
        ">= 0.9x",
        aio.get("ratio_vs_aiohttp", {}).get("64"),
        lambda v: v >= 0.9,
        "{:.2f}x",
    )
    live = results.get("realtime", {})
    for driver in ("ours_async", "ours_sync"):
        add(
            f"Realtime {driver.split('_')[1]} session: client CPU per audio second vs bare websockets "
            "+ msgspec (issue 21)",
            "<= 1.2x",
            live.get("ratio_vs_bare", {}).get(driver),
            lambda v: v <= 1.2,
            "{:.2f}x",
        )
    lost = live.get("concurrent", {}).get("lost")
    add("Realtime: 32 concurrent async sessions, events lost", "0", lost, lambda v: v == 0, "{:.0f}")
    add(
        "Realtime: first interim result after the chunk that produced it, in chunks (100 ms)",
        "<= 1",
        live.get("first_interim", {}).get("fraction_of_chunk"),
        lambda v: v <= 1.0,
        "{:.3f}",
    )
    gen = results.get("generator", {})
    add("Regenerate the whole catalog (issue #5)", "<= 10 s", gen.get("full_s"), lambda v: v <= 10.0, "{:.1f} s")
    foot = results.get("footprint", {}).get("ours", {})
    add(
        "Installed size of workers_ai + runtime deps",
        "< 3 MB",
        _scale(foot.get("bytes"), 1e-6),
        lambda v: v < 3.0,
        "{:.2f} MB",
    )
    deps = foot.get("deps")
    add("Runtime dependencies", "2", None if deps is None else float(len(deps)), lambda v: v <= 2, "{:.0f}")
    typing_rows = results.get("typing", {}).get("rows", {})
    add(
        "mypy on a small user file, cold cache (notes)",
        "<= 3 s",
        _get(typing_rows, "ours", "wall_s"),
        lambda v: v <= 3.0,
        "{:.2f} s",
    )
    add(
        "mypy --strict, cold, 10-line user file using 3 models, numpy/aiohttp/pydantic installed (issue 18)",
        "<= 2.0 s",
        _get(typing_rows, "ours-3-models", "wall_s"),
        lambda v: v <= 2.0,
        "{:.2f} s",
    )
    add(
        "... its peak RSS (issue 18)",
        "<= 250 MB",
        _get(typing_rows, "ours-3-models", "peak_rss_mb"),
        lambda v: v <= 250,
        "{:.0f} MB",
    )
    size = results.get("size", {})
    lines = size.get("lines")
    add(
        "Generated package, lines of Python (issue 18)",
        "<= 40k",
        float(lines) if isinstance(lines, int) else None,
        lambda v: v <= 40_000,
        "{:,.0f}",
    )
    pairs = size.get("model_duplicate_pairs")
    add(
        "Repeated 6+ line blocks across generated model modules, pairs (issue 18)",
        "<= 50",
        float(pairs) if isinstance(pairs, int) else None,
        lambda v: v <= 50,
        "{:.0f}",
    )
    return out


def _get(rows: dict[str, Any], impl: str, key: str) -> float | None:
    row = rows.get(impl)
    if not isinstance(row, dict):
        return None
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) else None


def _inverse(value: float | None) -> float | None:
    return None if not value else 1.0 / value


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _fmt(value: float | None, spec: str = "{:.2f}", missing: str = "n/a") -> str:
    return missing if value is None else spec.format(value)


LABELS = {
    "python": "bare `python -c pass`",
    "python (peers venv)": "bare `python -c pass` (comparison venv)",
    "floor": "floor: urllib3 + msgspec",
    "floor-json": "urllib3 + json.loads (untyped)",
    "ours": "**workers-ai (ours)**",
    "ours-3-models": "**workers-ai, 3 models, `--strict`, dev venv (numpy, aiohttp, pydantic)**",
    "cloudflare": "cloudflare (official)",
    "openai": "openai",
}


def _label(impl: str, envs_meta: dict[str, Any]) -> str:
    label = LABELS.get(impl, impl)
    version = envs_meta.get("versions", {}).get(impl)
    return f"{label} {version}" if version and impl in PEERS else label


def render_markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines: list[str] = []
    w = lines.append
    w("# Benchmarks")
    w("")
    w(
        f"Measured {meta['date']} on {meta['machine']} ({meta['cores']} cores), Python {meta['python']}; "
        f"total run {meta['total_s']:.0f} s; 1-minute load average {meta['load_average'][0]} at the start and "
        f"{meta['load_average'][1]} at the end (other work on the machine makes single samples noisy, hence "
        "interleaved rounds and paired ratios). Produced by `make bench` (bench/run.py); raw numbers in "
        "`latest.json`. Client CPU is `time.process_time()` in the client process; the server always runs "
        "in another process. Medians throughout."
    )
    w("")
    w("## Goals")
    w("")
    w("| Goal | Target | Measured | Met |")
    w("|---|---|---|---|")
    for g in results["goals"]:
        met = "n/a" if g["met"] is None else ("yes" if g["met"] else "**no**")
        w(f"| {g['goal']} | {g['target']} | {g['measured'] or 'not measured'} | {met} |")
    w("")

    cold = results.get("cold")
    if cold:
        rows = cold["rows"]
        w("## Cold start")
        w("")
        w(
            f"A fresh `python -c` per sample, {cold['repeats']} rounds with one sample per case each; wall time "
            "of the whole process and its CPU time (user + system, from `wait4`); ratios are medians of the "
            "per-round ratios (in brackets: their middle half, 25th-75th percentile). Ours: "
            f"`{OURS_COLD}`, installed as {cold['ours_env']}. Official SDK: `Cloudflare(...)` and "
            "`c.ai.run` resolved; openai: `OpenAI(...)` and `c.embeddings.create` resolved."
        )
        w("")
        beyond = cold.get("ours_beyond_floor") or []
        if beyond:
            top = ", ".join(f"`{r['module']}` {r['self_us'] / 1000:.1f}" for r in beyond[:6])
            w(f"What ours imports beyond the floor, largest self time first (`-X importtime`, ms, one run): {top}.")
            w("")
        w(
            "| Case | Wall ms (median) | Wall ms (min) | CPU ms (median) | Modules loaded | vs floor (wall) | "
            "vs floor (CPU) | vs official SDK (wall) |"
        )
        w("|---|---|---|---|---|---|---|---|")
        for impl in ["python", "python (peers venv)", "floor", "ours", "cloudflare", "openai"]:
            row = rows.get(impl)
            if row is None:
                continue
            if "error" in row:
                w(f"| {_label(impl, meta)} | not run: {row['error']} | | | | | | |")
                continue
            vs_floor = row.get("vs_floor")
            vs_cf = row.get("vs_official")
            iqr = row.get("vs_floor_iqr")
            shown = _fmt(vs_floor, "{:.2f}x") + (f" ({iqr[0]:.2f}-{iqr[1]:.2f})" if iqr else "")
            w(
                f"| {_label(impl, meta)} | {row['ms']:.1f} | {row['min_ms']:.1f} | {row['cpu_ms']:.1f} | "
                f"{row['modules']} | {shown} | {_fmt(row.get('vs_floor_cpu'), '{:.2f}x')} | "
                f"{_fmt(vs_cf, '{:.2f}x')} |"
            )
        w("")

    calls = results.get("calls")
    if calls:
        sizes = calls.get("reply_bytes", {})
        titles = {
            "small": (
                "Per call, small reply",
                f"bge-m3 rank (query + 3 contexts; a {sizes.get('small', 0)}-byte reply) over keep-alive loopback. "
                "The openai SDK has no rank route; its row is `embeddings.create` on `/ai/v1/embeddings` for "
                "3 inputs x 4 dimensions, the nearest small reply. The official SDK needs `extra_body` for "
                "query/contexts (and `text=omit` to pass its required-argument check).",
            ),
            "big": (
                "Per call, 100 x 1024 float embeddings",
                f"A {sizes.get('big', 0) / 1e6:.1f} MB reply decoded per call. Floor: urllib3 + "
                "`msgspec.json.decode(type=Envelope[Embedding])`. Ours: `bge.embed(text=[...100])` -> "
                "`EmbeddingOutput`. Official SDK: untyped `dict`. openai: `embeddings.create` -> pydantic "
                f"`CreateEmbeddingResponse` (OpenAI-shaped reply with the same floats, "
                f"{sizes.get('openai_big', 0) / 1e6:.1f} MB).",
            ),
        }
        for case, (title, blurb) in titles.items():
            rows = calls.get(case, {})
            w(f"## {title}")
            w("")
            w(blurb)
            w("")
            w(
                "Ratios are medians of per-round ratios to the floor measured in the same process "
                f"({calls.get('passes', 1)} processes per environment, {calls.get('rounds', 0)} rounds each); "
                "the spread is the middle half of those per-round ratios (25th-75th percentile)."
            )
            w("")
            w("| Client | Client CPU per call | Wall per call | vs floor | spread | vs official SDK | Result |")
            w("|---|---|---|---|---|---|---|")
            for impl in CALL_IMPLS:
                row = rows.get(impl)
                if row is None:
                    continue
                if "error" in row:
                    w(f"| {_label(impl, meta)} | not run: {row['error'][:160]} | | | | | |")
                    continue
                vs_floor = row.get("vs_floor")
                vs_cf = row.get("vs_official")
                iqr = row.get("vs_floor_iqr")
                spread = f"{iqr[0]:.2f}-{iqr[1]:.2f}x" if iqr else "n/a"
                w(
                    f"| {_label(impl, meta)} | {_us(row['cpu_us'])} | {_us(row['wall_us'])} | "
                    f"{_fmt(vs_floor, '{:.2f}x')} | {spread} | {_fmt(vs_cf, '{:.2f}x')} | {row['result']} |"
                )
            w("")

    queue = results.get("queue")
    if queue:
        w(f"## Bulk queue: {queue.get('requests', 100_000):,} small requests")
        w("")
        if "error" in queue:
            w(f"Not run: {queue['error']}")
        else:
            w(
                "Text-generation requests through the emulator's batch queue (another process, answering at once), "
                "1000 per batch. Floor: the same JSON posted and polled with plain urllib3 + msgspec."
            )
            w("")
            w("| Run | Client CPU | CPU per item | vs floor | Peak RSS | vs floor | Wall |")
            w("|---|---|---|---|---|---|---|")
            for mode, r in queue["runs"].items():
                w(
                    f"| {mode} | {r['cpu_s']:.2f} s | {r['cpu_us_per_item']:.1f} us | {r['cpu_vs_floor']:.2f}x | "
                    f"{r['peak_rss_mb']:.0f} MB | {r['peak_rss_vs_floor']:.2f}x | {r['wall_s']:.1f} s |"
                )
            small = queue["cli_journal_at_n_over_10"]
            w("")
            w(
                f"Journal CPU cost: {queue['journal_cpu_cost']:.3f}x (batch_many), "
                f"{queue['cli_journal_cpu_cost']:.3f}x (CLI). CLI peak RSS at {small['n']:,} requests: "
                f"{small['peak_rss_mb']:.0f} MB; at "
                f"{queue['requests']:,}: {queue['cli_peak_rss_n_vs_n_over_10']:.2f}x that."
            )
        w("")

    batch = results.get("batch")
    if batch:
        w(f"## Batch: {batch.get('texts', 10_000):,} texts")
        w("")
        if "error" in batch:
            w(f"Not run: {batch['error']}")
        else:
            w(
                f"{batch['texts']:,} texts through `{batch['api']}` against `workers_ai.testing.Emulator` in "
                f"another process ({batch.get('emulator_settings', '')}). {batch.get('note', '')}"
            )
            w("")
            w(
                "| Client CPU | Wall | CPU per text | Peak RSS (client) | RSS before the run | "
                "Vectors | Vectors alone as Python lists |"
            )
            w("|---|---|---|---|---|---|---|")
            w(
                f"| {batch['cpu_s']:.2f} s | {batch['wall_s']:.2f} s | "
                f"{batch['cpu_s'] / batch['texts'] * 1e6:.0f} us | "
                f"{batch['peak_rss_mb']:.0f} MB | {batch['base_rss_mb']:.0f} MB | "
                f"{batch['vectors']:,} x {batch['dims']} | "
                f"{batch.get('vectors_mb', 0):.0f} MB |"
            )
            num = batch.get("numpy") or {}
            if "peak_rss_mb" in num:
                w(
                    f"| {num['cpu_s']:.2f} s | {num['wall_s']:.2f} s | "
                    f"{num['cpu_s'] / num['texts'] * 1e6:.0f} us | "
                    f"{num['peak_rss_mb']:.0f} MB | {num['base_rss_mb']:.0f} MB | "
                    f"{num['vectors']:,} x {num['dims']} (`as_numpy=True`) | "
                    f"{num.get('vectors_mb', 0):.0f} MB as float32 |"
                )
            elif num:
                w(f"\n`as_numpy=True` not run: {num.get('error')}")
            ray_row = batch.get("ray") or {}
            w("")
            if "ray_wall_s" in ray_row:
                w("| Path | Wall | Vectors/s |")
                w("|---|---|---|")
                w(f"| {ray_row['single_api']} | {ray_row['single_wall_s']:.2f} s | {ray_row['single_vps']:.0f} |")
                w(f"| {ray_row['ray_api']} | {ray_row['ray_wall_s']:.2f} s | {ray_row['ray_vps']:.0f} |")
                w("")
                w(
                    f"Ray start-up ({ray_row['ray_init_s']:.1f} s for `ray.init`) is not in the Ray wall time; "
                    f"actor start-up is. Same vectors: {ray_row['same_vectors']}. Both paths are bound by the "
                    "emulator computing the vectors on the same 2 cores."
                )
            elif ray_row:
                w(f"Ray not run: {ray_row.get('error')}")
        w("")

    sse = results.get("sse")
    if sse:
        w("## SSE parsing")
        w("")
        if "error" in sse:
            w(f"Not run: {sse['error']}")
        else:
            r = sse["results"]
            w(
                f"A seeded {sse['bytes'] / 1e6:.1f} MB text-generation stream ({r['ours_framing']['events']:,} "
                f"events) fed in {sse['chunks']:,} seeded random-size chunks (1 B to 8 KiB). CPU-bound, no socket."
            )
            w("")
            w("| Parser | MB/s | vs floor |")
            w("|---|---|---|")
            w(
                "| floor: `bytes.split(b'\\n')` + `startswith(b'data: ')` | "
                f"{r['floor_framing']['mb_per_s']:.0f} | 1.00x |"
            )
            w(
                f"| ours: `SSEDecoder` (full SSE framing: CR/LF/CRLF, comments, multi-line data, ids) | "
                f"{r['ours_framing']['mb_per_s']:.0f} | "
                f"{r['ours_framing']['mb_per_s'] / r['floor_framing']['mb_per_s']:.2f}x |"
            )
            w(f"| floor + `msgspec.json.decode` per event | {r['floor_events']['mb_per_s']:.0f} | 1.00x |")
            w(
                f"| ours: `EventStream` -> typed `StreamEvent`s | {r['ours_events']['mb_per_s']:.0f} | "
                f"{r['ours_events']['mb_per_s'] / r['floor_events']['mb_per_s']:.2f}x |"
            )
        w("")

    emulator = results.get("emulator")
    if emulator:
        w("## The emulator under a test suite's load")
        w("")
        if "error" in emulator:
            w(f"Not run: {emulator['error']}")
        else:
            w(
                f"{emulator['threads']} client threads in another process, one `urllib3.PoolManager(maxsize=64)`, "
                "against `workers_ai.testing.Emulator` (8 workers); floor: the same rank against "
                "`bench/_server.py`, which only returns cached bytes (`bench/_emulator.py`)."
            )
            w("")
            w("| Workload | calls/s | errors |")
            w("|---|---|---|")
            for key, label in (
                ("rank", "bge-m3 rank, 3 contexts"),
                ("embed", "bge-m3 embeddings, 2 x 1024"),
                ("chat", "llama-3.1-8b chat reply"),
                ("floor_rank", "floor: the rank as cached bytes"),
            ):
                row = emulator[key]
                w(f"| {label} | {row['calls_per_s']:,.0f} | {row['errors']:.0f} |")
            w("")
            w(f"Rank vs floor: {emulator['rank_vs_floor']:.2f}x.")
        w("")

    load = results.get("load")
    if load:
        w("## Streaming and many threads")
        w("")
        if "error" in load:
            w(f"Not run: {load['error']}")
        else:
            st, th = load["stream"], load["threads"]
            w(
                "Over HTTP against `bench/_server.py` in another process; each row is a ratio to the floor "
                "measured in the same process, samples interleaved (`bench/_load.py`)."
            )
            w("")
            w("| Row | Floor | Ours | Ours / floor |")
            w("|---|---|---|---|")
            w(
                f"| {st['events']['ours'] - 1:,} typed SSE events + usage: client CPU "
                f"(floor: urllib3 `read1` + split on blank lines + msgspec typed decode) | "
                f"{st['floor_s'] * 1e3:.2f} ms | {st['ours_s'] * 1e3:.2f} ms | {st['ratio']:.2f}x |"
            )
            w(
                f"| {th['threads']} threads, 20 ms per reply: calls/s (floor: `PoolManager(maxsize=64)` + msgspec; "
                f"ours: default `WorkersAI`, {th['pool_full_warnings']} pool-full warnings) | "
                f"{th['floor']:.0f} | {th['ours']:.0f} | {th['ratio']:.2f}x |"
            )
            if "floor_timeout" in th:
                w(
                    f"| the same, floor with a 60 s read timeout (as every SDK call has) | "
                    f"{th['floor_timeout']:.0f} | {th['ours']:.0f} | {th['ratio_vs_floor_timeout']:.2f}x |"
                )
        w("")

    live = results.get("realtime")
    if live:
        w("## Realtime sessions")
        w("")
        if "error" in live:
            w(f"Not run: {live['error']}")
        else:
            w(
                f"Live transcription of {live['audio_seconds']:.0f} s of 16 kHz linear16 in 100 ms chunks, "
                "sent as fast as "
                "the emulator (another process) takes it, interim results on; client CPU per second of audio "
                "(`bench/_realtime.py`; the bare clients decode each event with msgspec into the same structs)."
            )
            w("")
            w("| Client | CPU µs per audio second | vs bare websockets (asyncio) |")
            w("|---|---|---|")
            labels = {
                "bare_websockets": "websockets asyncio client used directly",
                "bare_websockets_sync": "websockets threading client used directly",
                "bare_aiohttp": "aiohttp `ws_connect` used directly",
                "ours_async": "ours: `AsyncListenSession.transcribe`",
                "ours_sync": "ours: `ListenSession.transcribe`",
            }
            per = live["cpu_us_per_audio_s"]
            for key, label in labels.items():
                w(f"| {label} | {per[key]:.0f} | {live['ratio_vs_bare_websockets'][key]:.2f}x |")
            rb, conc, first = live["ratio_vs_bare"], live["concurrent"], live["first_interim"]
            w("")
            w(
                f"Each driver vs the same library's bare client: async {rb['ours_async']:.2f}x, "
                f"sync {rb['ours_sync']:.2f}x. "
                f"{conc['sessions']} concurrent async sessions: {conc['lost']} events lost "
                f"({conc['events_each']} each, {conc['wall_s']:.2f} s). First interim result "
                f"{first['ms']:.2f} ms after its 100 ms chunk went out ({first['fraction_of_chunk']:.3f} of a chunk)."
            )
        w("")

    aio = results.get("async")
    if aio:
        w("## Async client")
        w("")
        if "error" in aio:
            w(f"Not run: {aio['error']}")
        else:
            w(
                "Calls/s (wall) and client CPU per call at concurrency 1/16/64 against `bench/_server.py` "
                "holding every reply 20 ms (`bench/_async.py`; bge-m3 `rank`, reply decoded into a typed struct)."
            )
            w("")
            w("| Client | 1: calls/s | 16: calls/s | 64: calls/s | CPU µs/call at 1 / 16 / 64 |")
            w("|---|---|---|---|---|")
            labels = {
                "aiohttp": "aiohttp used directly + msgspec",
                "httpx": "httpx `AsyncClient` used directly + msgspec",
                "ours_async": "ours: `AsyncWorkersAI` (aiohttp)",
                "ours_threads": "ours: sync `WorkersAI`, one thread per concurrent call",
            }
            for key, label in labels.items():
                row = aio[key]
                calls = " | ".join(f"{row[lv]['calls_per_s']:.0f}" for lv in ("1", "16", "64"))
                cpu = " / ".join(f"{row[lv]['cpu_us_per_call']:.0f}" for lv in ("1", "16", "64"))
                w(f"| {label} | {calls} | {cpu} |")
            r = aio["ratio_vs_aiohttp"]
            t = aio["ratio_vs_threads"]
            w("")
            w(
                f"Ours / aiohttp: {r['1']:.2f}x, {r['16']:.2f}x, {r['64']:.2f}x; "
                f"ours async / ours on threads: {t['1']:.2f}x, {t['16']:.2f}x, {t['64']:.2f}x."
            )
        w("")

    otel = results.get("otel")
    if otel:
        w("## Telemetry cost")
        w("")
        if "error" in otel:
            w(f"Not run: {otel['error']}")
        else:
            w(
                "Client CPU per call (bge-m3 `rank`, loopback) with telemetry on (the default) vs "
                "`telemetry=False` in the same process, turns taken per round (`bench/_otel.py`); "
                "p25-p75 of the per-round ratios in brackets."
            )
            w("")
            w("| Process | floor µs | off µs | on µs | on / off | off / floor |")
            w("|---|---|---|---|---|---|")
            for mode, label in OTEL_MODES.items():
                row = otel[mode]
                c = row["cpu_us"]
                lo_hi = "-".join(f"{v:.3f}" for v in row["on_vs_off_p25_p75"])
                w(
                    f"| {label} | {c['floor']:.0f} | {c['off']:.0f} | {c['on']:.0f} | "
                    f"{row['on_vs_off']:.3f} [{lo_hi}] | {row['off_vs_floor']:.2f} |"
                )
            imp = otel["import"]
            w("")
            w(
                f"Cold start (`import workers_ai`, a client, a model handle; median of {imp['repeats']}): "
                f"{imp['noapi_ms']} ms without the API importable, {imp['api_ms']} ms with it "
                f"({imp['noapi_vs_api']}x); opentelemetry loaded at cold start: {imp['otel_loaded_at_cold_start']}."
            )
        w("")

    gen = results.get("generator")
    if gen:
        w("## Generator")
        w("")
        if "error" in gen:
            w(f"Not run: {gen['error']}")
        else:
            w(
                f"`python -m codegen --schemas TMP --out TMP2 --package bench_pkg` on the public catalog "
                f"({gen['models']} models with both schema halves; left out: {', '.join(gen['left_out'])}). "
                "Wall time, including interpreter start."
            )
            w("")
            w("| Run | Wall | CPU | Generator says |")
            w("|---|---|---|---|")
            w(
                f"| whole catalog into an empty folder | {gen['full_s']:.1f} s | {gen['full_cpu_s']:.1f} s | "
                f"{gen['full_summary']} |"
            )
            w(
                f"| one model's description changed ({gen['one_changed_file']}), same out folder | "
                f"{gen['one_changed_s']:.1f} s | {gen['one_changed_cpu_s']:.1f} s | {gen['one_changed_summary']} |"
            )
        w("")

    foot = results.get("footprint")
    if foot:
        w("## Install footprint")
        w("")
        w(
            "Files of the runtime dependency closure as installed by pip (RECORD, .pyc included). Ours: "
            "`pip wheel --no-deps .` installed into a fresh venv with only msgspec + urllib3."
        )
        w("")
        w("| Package | Installed size | Files | Runtime deps |")
        w("|---|---|---|---|")
        for impl in ["ours", *PEERS]:
            row = foot.get(impl, {})
            if "error" in row:
                w(f"| {_label(impl, meta)} | not measured: {row['error'][:120]} | | |")
                continue
            deps = ", ".join(row["deps"])
            w(
                f"| {_label(impl, meta)} | {row['bytes'] / 1e6:.2f} MB | {row['files']:,} | "
                f"{len(row['deps'])} ({deps}) |"
            )
        w("")

    typing_res = results.get("typing")
    if typing_res:
        w("## Type checking")
        w("")
        if "error" in typing_res:
            w(f"Not run: {typing_res['error']}")
        else:
            w(
                f"{typing_res['mypy']} on a ~10-line user file (default options, no config, fresh `--cache-dir`), "
                "pointed at the environment the package is installed in. Peak RSS of the mypy process."
            )
            w("")
            w("| Package | Wall | Peak RSS | Modules analysed (largest packages) | mypy says |")
            w("|---|---|---|---|---|")
            for impl, row in typing_res["rows"].items():
                if "error" in row:
                    w(f"| {_label(impl, meta)} | not run: {row['error'][:120]} | | | |")
                    continue
                mods = row.get("modules") or {}
                shown = ", ".join(f"{k} {v}" for k, v in mods.items() if k != "total")
                w(
                    f"| {_label(impl, meta)} | {row['wall_s']:.1f} s | {row['peak_rss_mb']:.0f} MB | "
                    f"{mods.get('total', 'n/a')} ({shown}) | {row['mypy_says']} |"
                )
        w("")
    size_res = results.get("size")
    if size_res and "error" not in size_res:
        w("## Size of the generated package")
        w("")
        w(
            f"{size_res['files']} Python files, {size_res['lines']:,} lines: model modules "
            f"{size_res['model_lines']:,}, runtime (emulator excluded) {size_res['runtime_lines']:,}. Repeated "
            "blocks across model modules (`duplicates`, 6+ lines): "
            f"{size_res.get('model_duplicate_pairs', 'n/a')} pairs."
        )
        w("")
    errors = results.get("errors")
    if errors:
        w("## Sections that failed")
        w("")
        for name, message in errors.items():
            w(f"- {name}: {message}")
        w("")
    return "\n".join(lines)


def _us(value: float) -> str:
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} us"


# --------------------------------------------------------------------------- main


SECTIONS = [
    "cold",
    "calls",
    "batch",
    "queue",
    "sse",
    "load",
    "async",
    "realtime",
    "emulator",
    "otel",
    "generator",
    "size",
    "footprint",
    "typing",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (to try the harness)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--skip-peers", action="store_true", help="do not install or run the comparison SDKs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default bench/results)")
    args = parser.parse_args(argv)
    wanted = args.only or SECTIONS
    quick = args.quick
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    envs = Envs()
    with tempfile.TemporaryDirectory(prefix="workers-ai-bench-") as tmp:
        work = Path(tmp)
        needs_peers = any(s in wanted for s in ("cold", "calls", "footprint", "typing"))
        setup_peers(envs, args.skip_peers or not needs_peers)
        wheel_info = setup_wheel(envs, work)
        log(f"ours: {envs.ours_kind}; peers: {envs.peer_ok or envs.peer_error}")
        steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("cold", lambda: bench_cold(envs, 5 if quick else 100, work)),
            ("calls", lambda: bench_calls(envs, 1 if quick else 2, 5 if quick else 20)),
            ("batch", lambda: bench_batch(1000 if quick else 10_000)),
            ("queue", lambda: bench_queue(5000 if quick else 100_000)),
            ("sse", lambda: bench_sse(2.0 if quick else 10.0, 2 if quick else 5)),
            ("load", lambda: bench_load(envs, 5 if quick else 15, 1.0 if quick else 3.0)),
            ("async", lambda: bench_async(1.0 if quick else 2.0, 1 if quick else 3)),
            ("realtime", lambda: bench_realtime(5.0 if quick else 10.0, 2 if quick else 5)),
            ("emulator", lambda: bench_emulator(1.0 if quick else 3.0)),
            ("otel", lambda: bench_otel(1 if quick else 3, 5 if quick else 15, 5 if quick else 20)),
            ("generator", lambda: bench_generator(work)),
            ("size", bench_size),
            ("footprint", lambda: bench_footprint(envs, wheel_info)),
            ("typing", lambda: bench_typing(envs, work, 1 if quick else 3)),
        ]
        for name, step in steps:
            if name not in wanted:
                continue
            log(f"{name} ...")
            t0 = time.perf_counter()
            try:
                results[name] = step()
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {str(exc)[-600:]}"
                results[name] = {"error": errors[name]}
            log(f"{name} done in {time.perf_counter() - t0:.1f} s")
    versions: dict[str, str] = dict(envs.peer_ok)
    versions.update(_own_versions())
    results["meta"] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "ours_env": envs.ours_kind,
        "quick": quick,
        "sections": wanted,
        "total_s": time.perf_counter() - started,
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
    }
    results["goals"] = goals(results)
    if errors:
        results["errors"] = errors
    args.out.mkdir(parents=True, exist_ok=True)
    ordered = {k: results[k] for k in ["meta", "goals", *SECTIONS, "errors"] if k in results}
    (args.out / "latest.json").write_text(json.dumps(ordered, indent=2) + "\n")
    markdown = render_markdown(results)
    (args.out / "latest.md").write_text(markdown + "\n")
    log(f"wrote {args.out / 'latest.md'} and latest.json in {results['meta']['total_s']:.0f} s")
    print()
    print(markdown)
    return 0


def _own_versions() -> dict[str, str]:
    from importlib import metadata

    out: dict[str, str] = {}
    for name in ("msgspec", "urllib3", "workers-ai", "mypy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    sys.exit(main())
