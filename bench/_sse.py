"""SSE parsing throughput: ``python bench/_sse.py [MB] [RUNS]`` prints one JSON object.

A seeded ~10 MB text-generation stream (legacy ``{"response": ...}`` events, some non-ASCII, a usage
event, ``[DONE]``) is cut into seeded random-size chunks (1 byte to 8 KiB, as socket reads come)
and parsed four ways, each timed as CPU seconds and reported in MB/s:

- floor, framing: a plain line split (``bytes.split(b"\\n")`` plus ``startswith(b"data: ")``),
- ours, framing: ``workers_ai._core.sse.SSEDecoder`` (CR/LF/CRLF, comments, multi-line data, ids),
- floor, events: the same line split plus ``msgspec.json.decode`` of each payload,
- ours, events: ``workers_ai.EventStream`` fed the chunks as a response, yielding ``StreamEvent``s.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec
from workers_ai._core.sse import SSEDecoder
from workers_ai._sync.stream import EventStream

WORDS = ["the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog", "\n", " café", " naïve", " 日本", " 🚀"]


def make_stream(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    parts: list[bytes] = []
    total = 0
    while total < size:
        token = "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        event = b"data: " + json.dumps({"response": token, "p": "abcdefghij"[: rng.randint(0, 10)]}).encode() + b"\n\n"
        parts.append(event)
        total += len(event)
    usage = {"response": "", "usage": {"prompt_tokens": 12, "completion_tokens": len(parts), "total_tokens": 12}}
    parts.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def make_chunks(data: bytes, seed: int = 2, largest: int = 8192) -> list[bytes]:
    rng = random.Random(seed)
    chunks: list[bytes] = []
    pos = 0
    while pos < len(data):
        step = rng.randint(1, largest)
        chunks.append(data[pos : pos + step])
        pos += step
    return chunks


def floor_framing(chunks: list[bytes]) -> int:
    count = 0
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.startswith(b"data: "):
                count += 1
    return count


def floor_events(chunks: list[bytes]) -> int:
    decode = msgspec.json.decode
    count = 0
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.startswith(b"data: "):
                payload = line[6:]
                if payload == b"[DONE]":
                    return count
                decode(payload)
                count += 1
    return count


def ours_framing(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    return count + len(decoder.flush())


class _Headers(dict[str, str]):
    pass


class ChunkedResponse:
    """A ``workers_ai._sync.transport.Response`` that hands out the prepared chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)
        self.headers = _Headers({"content-type": "text/event-stream"})
        self.status = 200

    def read_chunk(self, deadline: float) -> bytes:
        return next(self._chunks, b"")

    def read_all(self, limit: int) -> bytes:
        return b"".join(self._chunks)

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


def ours_events(chunks: list[bytes]) -> int:
    stream = EventStream(ChunkedResponse(chunks), model_id="@cf/meta/llama-3-8b-instruct")
    count = 0
    for _ in stream:
        count += 1
    return count


def timed(fn: Callable[[list[bytes]], int], chunks: list[bytes], runs: int) -> tuple[list[float], int]:
    fn(chunks)
    times: list[float] = []
    count = 0
    for _ in range(runs):
        gc.collect()
        t0 = time.process_time()
        count = fn(chunks)
        times.append(time.process_time() - t0)
    return times, count


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    data = make_stream(int(megabytes * 1_000_000))
    chunks = make_chunks(data)
    out: dict[str, Any] = {"bytes": len(data), "chunks": len(chunks), "results": {}}
    cases = {
        "floor_framing": floor_framing,
        "ours_framing": ours_framing,
        "floor_events": floor_events,
        "ours_events": ours_events,
    }
    for name, fn in cases.items():
        times, count = timed(fn, chunks, runs)
        best = statistics.median(times)
        out["results"][name] = {"cpu": times, "events": count, "mb_per_s": len(data) / 1e6 / best}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
