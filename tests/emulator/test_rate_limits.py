"""The emulator as the account's limits: ``rate_limits=`` (429/3021 with ``Retry-After``) and ``latency=``
ranges, in Python and on ``workers-ai serve``; a client paced at the same limit (sync or async) gets no 429."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
import urllib3
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.testing import Emulator
from workers_ai.testing.__main__ import build_parser, emulator_options

BGE = "@cf/baai/bge-m3"
SMALL = "@cf/baai/bge-small-en-v1.5"
QWEN = "@cf/qwen/qwen1.5-14b-chat-awq"  # a published limit of its own: 150/min


def _post(emu: Emulator, model: str = BGE, body: bytes = b'{"text": "x"}') -> tuple[int, dict[str, str], Any, float]:
    """One request straight at the emulator (no client pacing): status, headers, envelope, seconds taken."""
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{model}"
    headers = {"authorization": f"Bearer {emu.api_token}", "content-type": "application/json"}
    start = time.monotonic()
    reply = urllib3.request("POST", url, body=body, headers=headers, retries=False)
    return (
        reply.status,
        {k.lower(): v for k, v in reply.headers.items()},
        json.loads(reply.data),
        time.monotonic() - start,
    )


def test_a_model_over_its_limit_gets_429_3021_with_retry_after_and_takes_a_token_once_one_is_there() -> None:
    with Emulator(models=[BGE], rate_limits={BGE: 60}) as emu:  # 1/s, up to 2 at once
        first = time.monotonic()
        statuses = [_post(emu)[0] for _ in range(2)]
        status, headers, env, _ = _post(emu)
        elapsed = time.monotonic() - first
        assert statuses == [200, 200] and elapsed < 0.9
        assert status == 429
        assert env["success"] is False and env["errors"][0]["code"] == 3021
        assert "per min" in env["errors"][0]["message"]
        wait_ms = int(headers["retry-after-ms"])
        assert 1000 * (1 - elapsed) - 50 <= wait_ms <= 1000
        assert headers["retry-after"] == "1"  # whole seconds, rounded up
        assert emu.rate_limited == {BGE: 1}
        time.sleep(wait_ms / 1000 + 0.05)
        assert _post(emu)[0] == 200  # the refusal took nothing: the next token is this request's
        assert _post(emu)[0] == 429


def test_published_limits_task_keys_and_unlimited_models() -> None:
    with Emulator(models=[QWEN, BGE], rate_limits="published") as emu:
        start = time.monotonic()
        got = [_post(emu, QWEN, b'{"prompt": "hi", "max_tokens": 4}')[0] for _ in range(6)]
        elapsed = time.monotonic() - start
        passed = got.count(200)
        assert 429 in got and got[0] == 200
        assert passed <= 3 + int(elapsed * 150 / 60) + 1  # 150/min: 3.5 tokens at once, 2.5 a second
        assert [_post(emu)[0] for _ in range(20)].count(429) == 0  # bge-m3: 3000/min holds 51 at once
    with Emulator(models=[BGE, SMALL, QWEN], rate_limits={"Text Embeddings": 60}) as emu:
        assert [_post(emu, BGE)[0] for _ in range(3)] == [200, 200, 429]
        assert [_post(emu, SMALL)[0] for _ in range(3)] == [200, 200, 429]  # the same number, its own bucket
        assert {_post(emu, QWEN, b'{"prompt": "hi", "max_tokens": 4}')[0] for _ in range(5)} == {200}
        emu.reset()
        assert emu.rate_limited == {} and _post(emu, BGE)[0] == 200


def test_a_limit_can_be_changed_on_a_running_emulator_and_bad_ones_are_refused() -> None:
    with Emulator(models=[BGE]) as emu:
        assert {_post(emu)[0] for _ in range(5)} == {200}
        emu.rate_limits = 60
        assert [_post(emu)[0] for _ in range(3)] == [200, 200, 429]
        emu.rate_limits = None
        assert _post(emu)[0] == 200
    for bad in ({"rate_limits": 0}, {"rate_limits": "fast"}, {"rate_limits": {BGE: -1}}, {"latency": (0.2, 0.1)},
                {"latency": -1}, {"latency": (0.1, 0.2, 0.3)}, {"latency": "slow"}):  # fmt: skip
        with pytest.raises(ValueError, match="Emulator"):
            Emulator(start=False, **bad)


def test_latency_holds_each_model_reply_a_random_time_in_its_range_but_not_a_refusal() -> None:
    with Emulator(models=[BGE], latency=(0.1, 0.3)) as emu:
        times = [_post(emu)[3] for _ in range(8)]
        assert all(0.095 <= t <= 0.6 for t in times), times
        assert max(times) - min(times) > 0.01  # a range, not one fixed delay
        emu.latency = 0.2
        assert emu.latency == (0.2, 0.2)
        assert 0.195 <= _post(emu)[3] <= 0.5
        emu.rate_limits = 60
        _post(emu)
        _post(emu)
        status, _, _, taken = _post(emu)
        assert status == 429 and taken < 0.15
        search = urllib3.request(
            "GET",
            f"{emu.base_url}/accounts/{emu.account_id}/ai/models/search",
            headers={"authorization": f"Bearer {emu.api_token}"},
        )
        assert search.status == 200  # not a model: neither held nor counted


def test_serve_takes_the_same_options() -> None:
    parser = build_parser()
    opts = emulator_options(parser.parse_args(["--rate-limits", "published", "--latency", "0.05", "0.2"]), parser)
    assert (opts["rate_limits"], opts["latency"]) == ("published", (0.05, 0.2))
    one = emulator_options(parser.parse_args(["--rate-limits", "600", "--latency", "0.1"]), parser)
    assert (one["rate_limits"], one["latency"]) == (600.0, 0.1)
    table = emulator_options(parser.parse_args(["--rate-limits", f"{BGE}=60", "Text Generation=120"]), parser)
    assert table["rate_limits"] == {BGE: 60.0, "Text Generation": 120.0}
    with Emulator(**{**table, "port": 0, "quiet": True, "models": [BGE]}) as emu:
        assert [_post(emu)[0] for _ in range(3)] == [200, 200, 429]
    bad_lines = [
        ["--rate-limits", "fast"],
        ["--rate-limits", f"{BGE}=x"],
        ["--rate-limits", "=5"],
        ["--latency", "1", "2", "3"],
    ]
    for bad in bad_lines:
        with pytest.raises(SystemExit):
            emulator_options(parser.parse_args(bad), parser)


def test_clients_paced_at_the_emulators_limit_get_no_429_sync_and_async() -> None:
    rpm = 1200.0  # 20/s
    with Emulator(models=[BGE], rate_limits={BGE: rpm}, latency=(0.01, 0.05)) as emu:
        ai = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, rate_limit=rpm)
        handle = ai.model(BGE)

        def work() -> None:
            for _ in range(8):
                handle.embed(text="paced")

        threads = [threading.Thread(target=work) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        async def tasks() -> None:
            async with AsyncWorkersAI(
                account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, rate_limit=rpm
            ) as aai:
                bge = aai.model(BGE)
                await asyncio.gather(*(bge.embed(text="paced") for _ in range(48)))

        time.sleep(1.2)  # the server's bucket fills again: the next client starts afresh too
        asyncio.run(tasks())
        assert emu.rate_limited == {}
        times = sorted(r.at for r in emu.requests)
        assert len(times) == 96
        # 48 requests at 20/s after half a second's burst (10): at least 1.9 s each run.
        assert times[47] - times[0] >= 1.8
