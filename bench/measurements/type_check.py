"""Type checking: mypy on a ~10-line user program, cold (a fresh ``--cache-dir`` each run, no config file),
pointed at the environment each package is installed in."""

from __future__ import annotations

import collections
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.envs import PEERS
from bench.paths import PY, ROOT
from bench.processes import last_line, log, measure_child, run
from bench.stats import median

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


def measure(ctx: Context) -> dict[str, Any]:
    """mypy on a 10-line user file, cold: a fresh --cache-dir each run, no config file."""
    envs, work, repeats = ctx.envs, ctx.work, ctx.pick(quick=1, full=3)
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
            child = measure_child([*cmd, user_file.name], folder)
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
            "mypy_says": last_line(output)[:200],
        }
        log(f"typing/{name}: {rows[name]['wall_s']} s, {rows[name]['peak_rss_mb']} MB")
    return {"mypy": version, "rows": rows}


def _cached_modules(cache: Path) -> dict[str, int]:
    """Modules mypy analysed, by top-level package (read from its cache: JSON files or its SQLite store)."""
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
