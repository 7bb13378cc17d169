"""Per call: client CPU per call over keep-alive loopback against ``bench/_server.py``, for a small reply
(bge-m3 rank, 3 contexts) and a 100 x 1024 embeddings reply; each client's process runs ``bench/_calls.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import _server
from bench.context import Context
from bench.envs import PEERS
from bench.paths import BENCH, PY
from bench.processes import background, log, run_json
from bench.stats import iqr, median

CALL_IMPLS = ["floor", "floor-json", "ours", "cloudflare", "openai"]


def measure(ctx: Context) -> dict[str, Any]:
    """Client CPU per call over keep-alive loopback, for a small reply and a 100 x 1024 one.

    One process per environment runs its clients in turns (the floor in each, when it can), and
    ``passes`` such processes per environment alternate. Absolute figures are medians of all samples;
    ratios to the floor are medians of per-round ratios against the floor of the same process, which
    cancels most of the noise a busy machine adds.
    """
    envs, passes, rounds = ctx.envs, ctx.pick(quick=1, full=2), ctx.pick(quick=5, full=20)
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
                    "vs_floor_iqr": iqr(entry["vs_floor"]),
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
