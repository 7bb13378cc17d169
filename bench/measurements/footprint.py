"""Install footprint: the files of the runtime dependency closure as pip installed them (``bench/_footprint.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.envs import PEERS
from bench.paths import BENCH
from bench.processes import run_json


def measure(ctx: Context) -> dict[str, Any]:
    envs = ctx.envs
    out: dict[str, Any] = {"wheel": ctx.wheel_info}
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
