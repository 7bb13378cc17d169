"""What a user writes: dict literals for nested inputs, output fields read with no narrowing.

Type-checked with 0 errors under mypy --strict and pyright strict, and run against the emulator
(tests/typing/test_families.py runs ``main()`` with an emulator's address).
"""

from __future__ import annotations

from workers_ai import WorkersAI


def main(ai: WorkersAI) -> dict[str, object]:
    bge = ai.model("@cf/baai/bge-m3")
    emb = bge.embed(text=["a story about a llama", "a story about a cloud"])
    first: list[float] = emb.data[0]
    dims: int = emb.shape[1]
    ranked = bge.rank(query="llama?", contexts=[{"text": "a llama"}, {"text": "a cloud"}])
    best = max(ranked.response, key=lambda r: r.score)
    llama = ai.model("@cf/meta/llama-3-8b-instruct")
    reply = llama.chat(
        messages=[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Hi!"}],
        max_tokens=32,
    )
    words = reply.response.upper().split()
    job = bge.batch([{"text": "a"}, {"text": ["b", "c"]}])
    results = job.wait(timeout=30, poll_interval=0.05)
    return {
        "dims": dims,
        "first": len(first),
        "best": best.id,
        "words": len(words),
        "batch": [item.success for item in results.items],
    }
