"""A tour of the SDK: embeddings, query/contexts ranking, text generation (plain and streamed), a batch.

Runs against the real API when CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN are set, and against the
local emulator (``workers_ai.testing.Emulator``) otherwise, so ``make demo`` needs no account.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Generator, Sequence
from contextlib import contextmanager

from workers_ai import WorkersAI

STORIES = [
    "This is a story about an orange cloud",
    "This is a story about a llama",
    "This is a story about a hugging emoji",
]


@contextmanager
def connect() -> Generator[WorkersAI, None, None]:
    if os.environ.get("CLOUDFLARE_ACCOUNT_ID") and os.environ.get("CLOUDFLARE_API_TOKEN"):
        print("Using the real Workers AI API (CLOUDFLARE_ACCOUNT_ID is set).\n")
        with WorkersAI() as ai:
            yield ai
        return
    from workers_ai.testing import Emulator

    with Emulator() as emu:
        print(f"No credentials set: using the local emulator at {emu.url}\n")
        with WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
            yield ai


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)) or 1.0)


def main() -> int:
    with connect() as ai:
        bge = ai.model("@cf/baai/bge-m3")

        print("1. Embeddings: bge.embed(text=[...])")
        emb = bge.embed(text=STORIES)
        vectors = emb.data  # list[list[float]]: always returned, no narrowing needed
        print(f"   shape {emb.shape}, {len(vectors)} vectors of {len(vectors[0]) if vectors else 0} floats")
        if len(vectors) == 3:
            print(f"   similarity(story 1, story 2) = {cosine(vectors[0], vectors[1]):.3f}")

        print("\n2. Ranking: bge.rank(query=..., contexts=[...])")
        query = "Tell me about a llama"
        ranked = bge.rank(query=query, contexts=[{"text": s} for s in STORIES])  # dict literals, checked by mypy
        print(f"   query: {query!r}")
        for item in ranked.response:
            print(f"   {item.score:6.3f}  {STORIES[item.id]}")

        print("\n3. Text generation: llama.chat(messages=[...])")
        llama = ai.model("@cf/meta/llama-3-8b-instruct")
        reply = llama.chat(messages=[{"role": "user", "content": "Explain edge computing in one sentence."}])
        print(f"   response: {reply.response.strip()!r}")
        print(f"   usage: {reply.usage}")

        print("\n4. Streaming: llama.generate_stream(prompt=...)")
        print("   ", end="")
        usage = None
        count = 0
        with llama.generate_stream(prompt="Write a haiku about clouds") as events:
            for event in events:  # typed StreamEvents, printed as they arrive
                print(event.text, end="", flush=True)
                usage = event.usage or usage
                count += 1
        print(f"\n   {count} events, final usage {usage}")
        print("\n5. Async batch: bge.batch([...]).wait()")
        job = bge.batch([{"text": s} for s in STORIES])
        print(f"   queued request_id={job.request_id}")
        batch = job.wait(timeout=120, poll_interval=0.2)
        for done in batch.items:
            print(f"   item {done.id}: success={done.success} -> {type(done.result).__name__}")
    print("\nDone.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
