"""Bulk queue benchmark: N small requests through the emulator's batch queue.

``python bench/_queue.py serve``: the emulator (one text model, queue answering at once) in this process;
prints ``EMULATOR {json}`` once it listens and stops when stdin closes.
``python bench/_queue.py client SPEC N MODE``: one run in this (fresh) process; prints one JSON object with
its CPU seconds, wall seconds and peak RSS. MODEs:

- ``floor``: the same JSON posted and polled with plain urllib3 + msgspec (1000 requests per batch, all
  submitted, then each polled until done, its items decoded and kept): what any client must do.
- ``many``: ``handle.batch_many(requests)``; ``many_journal``: the same with ``journal=``.
- ``cli`` / ``cli_journal``: ``workers-ai batch`` on a JSON Lines file (run in this process through its
  ``main``), with and without ``--journal``.

The emulator is another process, so its CPU never counts as the client's.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from typing import Any

MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
PER_BATCH = 1000
POLL = 0.05


def serve() -> None:
    from workers_ai.testing import Emulator

    settings: dict[str, Any] = {"batch_polls": (0, 0), "models": [MODEL], "check_outputs": False, "keep_requests": 10}
    with Emulator(**settings) as emu:
        spec = {"base_url": emu.base_url, "account_id": emu.account_id, "api_token": emu.api_token}
        print("EMULATOR " + json.dumps(spec), flush=True)
        sys.stdin.read()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _requests(n: int) -> list[dict[str, Any]]:
    return [{"prompt": f"question {i}: what is {i % 97} plus {i % 13}?", "max_tokens": 16} for i in range(n)]


def floor(spec: dict[str, Any], n: int) -> int:
    import msgspec
    import urllib3

    pool = urllib3.PoolManager()
    url = f"{spec['base_url'].rstrip('/')}/accounts/{spec['account_id']}/ai/run/{MODEL}?queueRequest=true"
    headers = {"authorization": f"Bearer {spec['api_token']}", "content-type": "application/json"}
    reqs = _requests(n)
    ids: list[str] = []
    for start in range(0, n, PER_BATCH):
        chunk = [{**r, "external_reference": str(start + i)} for i, r in enumerate(reqs[start : start + PER_BATCH])]
        body = msgspec.json.encode({"requests": chunk})
        ids.append(
            msgspec.json.decode(pool.request("POST", url, body=body, headers=headers).data)["result"]["request_id"]
        )
    results: list[Any] = [None] * n
    for b, rid in enumerate(ids):
        while True:
            reply = msgspec.json.decode(
                pool.request("POST", url, body=msgspec.json.encode({"request_id": rid}), headers=headers).data
            )["result"]
            if "responses" in reply:
                for item in reply["responses"]:
                    results[b * PER_BATCH + item["id"]] = item.get("result")
                break
            time.sleep(POLL)
    return sum(r is not None for r in results)


def many(spec: dict[str, Any], n: int, journal: bool) -> int:
    from workers_ai import WorkersAI

    ai = WorkersAI(account_id=spec["account_id"], api_token=spec["api_token"], base_url=spec["base_url"])
    h = ai.model(MODEL)
    with tempfile.TemporaryDirectory() as tmp:
        options: dict[str, Any] = {"poll_interval": POLL, "batch_size": PER_BATCH}
        if journal:
            options["journal"] = os.path.join(tmp, "journal")
        items = h.batch_many(_requests(n), **options)
    return sum(i.success for i in items)


def cli(spec: dict[str, Any], n: int, journal: bool, tmp: str) -> int:
    from workers_ai._cli.main import main

    path = os.path.join(tmp, "requests.jsonl")
    os.environ.update(
        CLOUDFLARE_ACCOUNT_ID=spec["account_id"],
        CLOUDFLARE_API_TOKEN=spec["api_token"],
        CLOUDFLARE_BASE_URL=spec["base_url"],
    )
    out = os.path.join(tmp, "results.jsonl")
    argv = ["batch", MODEL, "--input", path, "-o", out, "--poll-interval", str(POLL), "--batch-size", str(PER_BATCH)]
    if journal:
        argv += ["--journal", os.path.join(tmp, "journal")]
    code = main(argv)
    if code != 0:
        raise SystemExit(f"workers-ai batch exited {code}")
    with open(out, "rb") as fh:
        return sum(1 for _ in fh)


def _load(mode: str) -> None:
    """What each mode imports; ``make bench``'s cold start measures import time on its own."""
    import msgspec  # noqa: F401
    import urllib3  # noqa: F401

    if mode != "floor":
        import workers_ai._cli.main
        import workers_ai.models.cf.meta.llama_3_3_70b_instruct_fp8_fast  # noqa: F401  (MODEL's module)


def client(spec_text: str, n: int, mode: str) -> None:
    spec = json.loads(spec_text)
    with tempfile.TemporaryDirectory() as tmp:
        if mode.startswith("cli"):  # the input file is written before the clock starts, without holding it
            import msgspec

            with open(os.path.join(tmp, "requests.jsonl"), "wb") as fh:
                for i in range(n):
                    fh.write(
                        msgspec.json.encode(
                            {"prompt": f"question {i}: what is {i % 97} plus {i % 13}?", "max_tokens": 16}
                        )
                        + b"\n"
                    )
        _load(mode)  # imports before the clock, on every side: the measure is CPU per item, not start-up
        base = _rss_mb()
        c0 = time.process_time()
        w0 = time.perf_counter()
        if mode == "floor":
            done = floor(spec, n)
        elif mode in ("many", "many_journal"):
            done = many(spec, n, mode == "many_journal")
        else:
            done = cli(spec, n, mode == "cli_journal", tmp)
        wall = time.perf_counter() - w0
        cpu = time.process_time() - c0
    print(
        json.dumps(
            {
                "mode": mode,
                "n": n,
                "done": done,
                "cpu_s": cpu,
                "wall_s": wall,
                "peak_rss_mb": _rss_mb(),
                "base_rss_mb": base,
            }
        )
    )


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else "serve"
    if command == "serve":
        serve()
    elif command == "client":
        client(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
