"""Per-call client cost of client libraries, measured in one process against bench/_server.py.

``python bench/_calls.py IMPL[,IMPL...] CASE PORT ROUNDS`` prints one JSON object keyed by IMPL:
client CPU seconds per call for each sample (``time.process_time`` in this process; the server is
another process), wall seconds per call, the calls per sample and a short check of the decoded
result. The clients take turns, one sample each per round, so the ratios between clients measured in
the same process are robust against a busy machine.

IMPL: floor | floor-json | ours | cloudflare | openai. CASE: small (bge-m3 rank, 3 contexts) | big
(100 x 1024 float embeddings). Only the libraries an IMPL needs are imported, so it runs in the
comparison venv as well as in the project's.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

MODEL = "@cf/baai/bge-m3"
ACCOUNT = "a" * 32  # the SDK checks the account id is 32 hex characters
TOKEN = "t"
QUERY = "Which passage talks about loopback benchmarks?"
CONTEXTS = [
    "Loopback calls measure the client, not the network.",
    "A keep-alive pool reuses one TCP connection for every call.",
    "Typed structs come straight out of the JSON decoder.",
]
TEXTS = [f"passage number {i}: the quick brown fox jumps over the lazy dog" for i in range(100)]
# Seconds of client CPU one sample aims for; the call count per sample is derived from a warm-up.
TARGET_SAMPLE_CPU = 0.05


def build(impl: str, case: str, port: int) -> tuple[Callable[[], Any], Callable[[Any], str]]:
    """The call to time, and a function describing its result (checked once, outside the timing)."""
    root = f"http://127.0.0.1:{port}/client/v4"
    if impl in ("floor", "floor-json"):
        return _floor_call(impl, case, root)
    if impl == "ours":
        from workers_ai import WorkersAI
        from workers_ai.models.cf.baai.bge_m3 import Context

        ai = WorkersAI(
            account_id=ACCOUNT, api_token=TOKEN, base_url=root, rate_limit=None
        )  # unpaced: measures the client
        bge = ai.model(MODEL)
        if case == "small":
            contexts = [Context(text=t) for t in CONTEXTS]
            return (lambda: bge.rank(query=QUERY, contexts=contexts)), (
                lambda r: f"{type(r).__name__} with {len(r.response)} scores"
            )
        return (lambda: bge.embed(text=TEXTS)), (lambda r: f"{type(r).__name__} {len(r.data)}x{len(r.data[0])}")
    if impl == "cloudflare":
        from cloudflare import Cloudflare, omit

        cf = Cloudflare(api_token=TOKEN, base_url=root)
        if case == "small":
            # ai.run has no query/contexts kwargs: they go in extra_body, and `text=omit` satisfies
            # its required-argument check without sending anything.
            body = {"query": QUERY, "contexts": [{"text": t} for t in CONTEXTS]}

            def small() -> Any:
                return cf.ai.run(MODEL, account_id=ACCOUNT, text=omit, extra_body=body)

            return small, (lambda r: f"{type(r).__name__} with {len(r['response'])} scores")
        return (lambda: cf.ai.run(MODEL, account_id=ACCOUNT, text=TEXTS)), (
            lambda r: f"{type(r).__name__} {len(r['data'])}x{len(r['data'][0])}"
        )
    if impl == "openai":
        from openai import OpenAI

        oa = OpenAI(api_key=TOKEN, base_url=f"{root}/accounts/{ACCOUNT}/ai/v1")
        if case == "small":
            # The OpenAI route has no rank mode; the nearest small reply is 3 inputs x 4 dimensions.
            def small_oa() -> Any:
                return oa.embeddings.create(model=MODEL, input=CONTEXTS, dimensions=4, encoding_format="float")

            return small_oa, (lambda r: f"{type(r).__name__} {len(r.data)}x{len(r.data[0].embedding)}")

        def big_oa() -> Any:
            return oa.embeddings.create(model=MODEL, input=TEXTS, encoding_format="float")

        return big_oa, (lambda r: f"{type(r).__name__} {len(r.data)}x{len(r.data[0].embedding)}")
    raise SystemExit(f"unknown impl {impl!r}")


def _floor_call(impl: str, case: str, root: str) -> tuple[Callable[[], Any], Callable[[Any], str]]:
    """No SDK: a urllib3 pool, msgspec encoding, and a typed msgspec decode (or json.loads)."""
    import json as stdjson

    import msgspec
    import urllib3
    from _floor import Embedding, Envelope, Rank

    pool = urllib3.PoolManager(retries=False)
    url = f"{root}/accounts/{ACCOUNT}/ai/run/{MODEL}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    encode = msgspec.json.encode
    if case == "small":
        payload: dict[str, Any] = {"query": QUERY, "contexts": [{"text": t} for t in CONTEXTS]}
        decoder: Any = msgspec.json.Decoder(Envelope[Rank])

        def describe(r: Any) -> str:
            result = r["result"] if isinstance(r, dict) else r.result
            scores = result["response"] if isinstance(result, dict) else result.response
            return f"{type(result).__name__} with {len(scores)} scores"
    else:
        payload = {"text": TEXTS}
        decoder = msgspec.json.Decoder(Envelope[Embedding])

        def describe(r: Any) -> str:
            result = r["result"] if isinstance(r, dict) else r.result
            data = result["data"] if isinstance(result, dict) else result.data
            return f"{type(result).__name__} {len(data)}x{len(data[0])}"

    decode = stdjson.loads if impl == "floor-json" else decoder.decode

    def call() -> Any:
        resp = pool.request("POST", url, body=encode(payload), headers=headers)
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
        return decode(resp.data)

    return call, describe


def calibrate(call: Callable[[], Any]) -> int:
    """Calls per sample so that one sample takes about ``TARGET_SAMPLE_CPU`` of CPU."""
    for _ in range(3):
        call()
    t0 = time.process_time()
    warm = 0
    while warm < 2 or (time.process_time() - t0 < 0.1 and warm < 200):
        call()
        warm += 1
    per_call = max((time.process_time() - t0) / warm, 1e-6)
    return int(min(400, max(2, TARGET_SAMPLE_CPU / per_call)))


def measure(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, dict[str, Any]]:
    """Round-robin over the clients, one sample each per round, so drift and noise from the rest
    of the machine hit every client of this process alike."""
    sizes = {impl: calibrate(call) for impl, call in calls.items()}
    out: dict[str, dict[str, Any]] = {impl: {"cpu": [], "wall": [], "calls": n} for impl, n in sizes.items()}
    for _ in range(rounds):
        for impl, call in calls.items():
            n = sizes[impl]
            gc.collect()
            c0 = time.process_time()
            w0 = time.perf_counter()
            for _ in range(n):
                call()
            out[impl]["wall"].append((time.perf_counter() - w0) / n)
            out[impl]["cpu"].append((time.process_time() - c0) / n)
    return out


def main() -> None:
    impls, case, port, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    calls: dict[str, Callable[[], Any]] = {}
    checks: dict[str, str] = {}
    errors: dict[str, str] = {}
    for impl in impls:
        try:
            call, describe = build(impl, case, port)
            checks[impl] = describe(call())
        except Exception as exc:
            errors[impl] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        calls[impl] = call
    out: dict[str, Any] = measure(calls, rounds)
    for impl, check in checks.items():
        out[impl]["check"] = check
    for impl, error in errors.items():
        out[impl] = {"error": error}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
