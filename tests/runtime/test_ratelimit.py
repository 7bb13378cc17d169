"""The rate budget: pacing rules on a fake clock, and a shared budget held at a real emulator."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from workers_ai import WorkersAI, errors
from workers_ai._core.ratelimit import MODEL_RPM, TASK_RPM, Pace, RateBudget
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def _client(emu: Emulator, **options: Any) -> WorkersAI:
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **options)


def test_pace_spaces_requests_after_half_a_second_of_burst() -> None:
    clock = Clock()
    pace = Pace("m", 600, clock=clock)  # 10/s: five go at once, then one every 0.1 s
    waits = [pace.reserve() for _ in range(8)]
    assert waits[:5] == [0.0] * 5
    assert waits[5:] == pytest.approx([0.1, 0.2, 0.3])
    clock.now += 5.0  # idle time refills the burst, but no more than half a second's worth
    assert [pace.reserve() for _ in range(6)][-1] == pytest.approx(0.1)


def test_slow_pace_has_no_burst() -> None:
    clock = Clock()
    pace = Pace("m", 30, clock=clock)  # one every 2 s
    assert [pace.reserve() for _ in range(3)] == pytest.approx([0.0, 2.0, 4.0])


def test_slow_down_halves_blocks_until_retry_after_and_recovers_slowly(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    pace = Pace("m", 600, clock=clock)
    with caplog.at_level(logging.INFO, logger="workers_ai"):
        pace.slow_down(2.0)
    assert pace.current == 300
    assert any("throttling" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
    assert pace.reserve() == pytest.approx(2.0)  # nothing before Retry-After has passed...
    assert pace.reserve() == pytest.approx(2.2)  # ...and then the halved, even pace: no burst
    for _ in range(5):
        pace.slow_down(None)
    assert pace.current == 60  # never below a tenth of the configured rate
    for _ in range(10):
        pace.succeeded()
    assert pace.current == pytest.approx(180)
    for _ in range(100):
        pace.succeeded()
    assert pace.current == 600


def test_budget_configuration() -> None:
    tasks = {"@cf/x/gen": "Text Generation", BGE: "Text Embeddings"}
    published = RateBudget(task_of=tasks.get)
    assert published.rpm("@cf/x/gen") == TASK_RPM["Text Generation"] == 300
    assert published.rpm(BGE) == 3000
    assert published.rpm("@cf/baai/bge-large-en-v1.5") == MODEL_RPM["@cf/baai/bge-large-en-v1.5"] == 1500
    assert published.rpm("@cf/unknown/model") is None and published.pace("@cf/unknown/model") is None
    assert RateBudget(None).pace(BGE) is None
    assert RateBudget(90).rpm("@cf/anything") == 90
    mixed = RateBudget({BGE: 60, "@cf/x/gen": None}, task_of=tasks.get)
    assert (mixed.rpm(BGE), mixed.rpm("@cf/x/gen"), mixed.rpm("@cf/qwen/qwen1.5-14b-chat-awq")) == (60, None, 150)
    half = mixed.scaled(0.5)
    assert half.rpm(BGE) == 30 and half.scaled(0.5).rpm(BGE) == 15
    for bad in (0, -1, float("nan"), float("inf"), True, "fast", {BGE: 0}, {1: 5}):
        with pytest.raises(errors.ConfigurationError):
            RateBudget(bad)  # type: ignore[arg-type]


def test_client_defaults_come_from_the_model_task(emu: Emulator) -> None:
    ai = _client(emu)
    assert ai.rate_budget.rpm(BGE) == 3000
    assert ai.rate_budget.rpm("@cf/meta/llama-3-8b-instruct") == 300
    assert ai.rate_budget.rpm("@cf/facebook/bart-large-cnn") == 1500
    assert ai.rate_budget.rpm("@cf/deepgram/aura-1") is None  # text-to-speech: no published limit
    assert ai.rate_budget.rpm("@cf/someone/not-generated") is None
    with pytest.raises(errors.ConfigurationError):
        _client(emu, rate_limit=-5)


def test_threads_share_one_budget_held_at_the_server(emu: Emulator) -> None:
    ai = _client(emu, rate_limit=1200)  # 20/s, bursts of 20
    handle = ai.model(BGE)
    before = len(emu.requests)

    def work() -> None:
        for _ in range(10):
            handle.embed(text="paced")

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times = sorted(r.at for r in emu.requests[before:])
    assert len(times) == 60
    # In any one-second window: the burst (20) plus one second of pace (20), plus one for clock edges.
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest <= 41, busiest


def test_capacity_error_slows_every_thread_and_logs(emu: Emulator, caplog: pytest.LogCaptureFixture) -> None:
    ai = _client(emu, rate_limit=6000)
    handle = ai.model(BGE)
    handle.embed(text="warm")
    emu.inject("capacity", times=1, model=BGE, retry_after=0.5)
    before = len(emu.requests)
    pace = ai.rate_budget.pace(BGE)
    assert pace is not None
    with caplog.at_level(logging.INFO, logger="workers_ai"):
        first = threading.Thread(target=handle.embed, kwargs={"text": "first"})
        first.start()
        for _ in range(2000):  # until the refusal has reached the budget (the first thread then waits)
            if pace.current < 6000:
                break
            time.sleep(0.005)
        others = [threading.Thread(target=handle.embed, kwargs={"text": "x"}) for _ in range(4)]
        for t in [*others]:
            t.start()
        for t in [first, *others]:
            t.join()
    pace = ai.rate_budget.pace(BGE)
    assert pace is not None and pace.current < 6000
    recs = emu.requests[before:]
    refused = [r for r in recs if r.status == 429]
    assert len(refused) == 1 and len(recs) == 6
    later = [r.at for r in recs if r.at > refused[0].at]
    assert later and min(later) >= refused[0].at + 0.45  # no thread sent before Retry-After had passed
    assert any("throttling" in r.getMessage() for r in caplog.records)
    assert emu.api_token not in caplog.text


def test_no_budget_means_no_pacing(emu: Emulator) -> None:
    ai = _client(emu, rate_limit=None)
    emu.inject("capacity", times=1, model=BGE, retry_after=0.05)
    ai.model(BGE).embed(text="y")
    assert ai.rate_budget.pace(BGE) is None
