"""Issue 14: the new error codes (from real-shaped envelopes) and ``ai.usage`` (tokens and cost across
threads, unknown prices staying unknown, batch items)."""

from __future__ import annotations

import threading

import msgspec
import pytest
from workers_ai import WorkersAI, errors
from workers_ai._core import error_replies
from workers_ai.testing import Emulator

from tests._server import Reply, Request, ScriptedServer, envelope, fail, ok
from tests.conftest import ACCOUNT, TOKEN

PRICED = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # 0.29 USD per M input tokens, 2.25 per M output
UNPRICED = "@cf/meta/llama-3-8b-instruct"  # the catalog gives no price


def client(server: ScriptedServer) -> WorkersAI:
    return WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=0)


@pytest.mark.parametrize(
    ("status", "code", "message", "cls"),
    [
        (
            410,
            5028,
            "Model @cf/x/y is deprecated and reached its planned end of service on 2026-01-01",
            errors.ModelDeprecatedError,
        ),
        (403, 5016, "User has not agreed to Llama3.2 model terms", errors.ModelAgreementError),
        (400, 5023, "JSON Mode does not support streaming", errors.JsonModeError),
        (400, 3030, "JSON Mode couldn't be met", errors.JsonModeError),
        (405, 5005, "The model `@cf/x/y` does not support LoRa inference", errors.LoraUnsupportedError),
        (
            400,
            3039,
            "Finetune is missing required files (model.safetensors and config.json)",
            errors.LoraFilesMissingError,
        ),
        (402, 2021, "Insufficient Unified Billing credits", errors.PaymentRequiredError),
    ],
)
def test_new_codes_map_to_their_classes(
    server: ScriptedServer, status: int, code: int, message: str, cls: type[errors.APIError]
) -> None:
    server.script(fail(status, code, message, cf_ray="ray-1"))
    with pytest.raises(cls) as info:
        client(server).run("@cf/meta/llama-3-8b-instruct", {"prompt": "x"})
    exc = info.value
    assert type(exc) is cls and exc.status == status and exc.code == code and exc.cf_ray == "ray-1"
    assert message in str(exc) and "@cf/meta/llama-3-8b-instruct" in str(exc)
    assert len(server.requests) == 1  # 4xx: never retried
    assert error_replies.error_for(status, []) is not errors.APIError


def test_deprecation_carries_the_planned_end_and_the_agreement_error_says_how(server: ScriptedServer) -> None:
    server.script(
        fail(410, 5028, "Model @cf/x/y is deprecated and reached its planned end of service on 2026-01-01"),
        fail(410, 5028, "Model @cf/x/y is deprecated"),
    )
    ai = client(server)
    with pytest.raises(errors.ModelDeprecatedError) as dated:
        ai.run("@cf/x/y", {"prompt": "x"})
    assert dated.value.planned_end == "2026-01-01"
    with pytest.raises(errors.ModelDeprecatedError) as undated:
        ai.run("@cf/x/y", {"prompt": "x"})
    assert undated.value.planned_end is None
    server.script(fail(410, 5028, "Model is deprecated"))
    with pytest.raises(errors.ModelDeprecatedError) as from_catalog:  # the catalog's planned_deprecation_date
        ai.model("@cf/meta/llama-2-7b-chat-int8").generate(prompt="x")
    assert from_catalog.value.planned_end == "2026-05-30"
    server.script(fail(403, 5016, "User has not agreed to Llama3.2 model terms"))
    with pytest.raises(errors.ModelAgreementError, match=r'send \{"prompt": "agree"\} to @cf/meta/llama-3.2-11b'):
        ai.run("@cf/meta/llama-3.2-11b-vision-instruct", {"prompt": "x"})


def test_status_alone_maps_too(server: ScriptedServer) -> None:
    server.script(Reply(410, b"gone"), Reply(402, envelope(None, success=False)))
    with pytest.raises(errors.ModelDeprecatedError):
        client(server).run("@cf/x/y", {"prompt": "x"})
    with pytest.raises(errors.PaymentRequiredError):
        client(server).run("openai/gpt-4.1-mini", {"prompt": "x"})


def test_usage_and_cost_summed_across_threads(server: ScriptedServer) -> None:
    def answer(req: Request) -> Reply:
        prompt = len(req.json()["prompt"])
        return ok(
            {"response": "ok", "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}}
        )

    server.script(answer)
    ai = client(server)
    prompts = ["x" * n for n in range(1, 41)]

    def work(chunk: list[str]) -> None:
        for prompt in chunk:
            ai.run(PRICED, {"prompt": prompt})
            ai.run(UNPRICED, {"prompt": prompt})

    threads = [threading.Thread(target=work, args=(prompts[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prompt_sum = sum(range(1, 41))
    priced = ai.usage.by_model[PRICED]
    assert (priced.calls, priced.prompt_tokens, priced.completion_tokens) == (40, prompt_sum, 280)
    assert priced.total_tokens == prompt_sum + 280
    assert priced.cost_usd == pytest.approx((prompt_sum * 0.29 + 280 * 2.25) / 1e6)
    unpriced = ai.usage.by_model[UNPRICED]
    assert unpriced.calls == 40 and unpriced.total_tokens == prompt_sum + 280 and unpriced.cost_usd is None
    assert ai.usage.calls == 80 and ai.usage.total_tokens == 2 * (prompt_sum + 280)
    assert ai.usage.total_cost_usd is None  # one model's price is unknown: the total is too, not a guess
    assert ai.usage.known_cost_usd == pytest.approx(priced.cost_usd) and ai.usage.unpriced == [UNPRICED]
    assert ai.usage.summary().endswith(f"no published price for {UNPRICED}; ${priced.cost_usd:.6f} for the rest")
    ai.usage.reset()
    assert ai.usage.calls == 0 and ai.usage.by_model == {} and ai.usage.total_cost_usd == 0.0


def test_a_priced_model_without_reported_tokens_has_an_unknown_cost(server: ScriptedServer) -> None:
    # Embeddings are priced per input token but their replies report no usage (text replies always do).
    priced = "@cf/baai/bge-small-en-v1.5"
    server.script(ok({"shape": [1, 2], "data": [[0.5, 0.5]]}))
    ai = client(server)
    ai.run(priced, {"text": "x"})
    assert ai.usage.by_model[priced].cost_usd is None and ai.usage.total_tokens == 0


def test_streams_and_batches_are_counted_against_the_emulator() -> None:
    with Emulator(batch_polls=(0, 0)) as emu:
        ai = emu.client()
        with ai.model(PRICED).chat_stream(messages=[{"role": "user", "content": "tell me"}]) as events:
            text = "".join(e.text for e in events)
        assert text
        streamed = ai.usage.by_model[PRICED]
        assert streamed.calls == 1 and streamed.completion_tokens > 0 and streamed.cost_usd is not None
        job = ai.model("@cf/baai/bge-m3").batch([{"text": "a"}, {"text": "b"}, {"text": "c"}])
        job.wait(timeout=30, poll_interval=0)
        job.wait(timeout=30, poll_interval=0)  # a second wait on a finished job adds nothing
        batch = ai.usage.by_model["@cf/baai/bge-m3"]
        assert (batch.calls, batch.items) == (1, 3)
        assert msgspec.to_builtins(ai.usage.total)["items"] == 3


def test_a_model_this_client_never_called_reads_as_nothing_used_sync_and_async() -> None:
    """docs/library.md: a model called through the openai SDK is not in ``ai.usage``; looking it up is no
    ``KeyError`` but nothing used, while the models ``ai`` called keep their counts."""
    import asyncio

    from openai import OpenAI
    from workers_ai import ModelUsage

    with Emulator() as emu:
        ai = emu.client()
        OpenAI(base_url=ai.openai_base_url, api_key=emu.api_token).chat.completions.create(
            model=PRICED, messages=[{"role": "user", "content": "hi"}]
        )
        ai.model(UNPRICED).chat(messages=[{"role": "user", "content": "hi"}])
        by_model = ai.usage.by_model
        assert by_model[PRICED] == ModelUsage() and by_model[PRICED].cost_usd == 0.0  # nothing used, no KeyError
        assert PRICED not in by_model and list(by_model) == [UNPRICED] and by_model.get(PRICED) is None
        assert by_model[UNPRICED].calls == 1

        async def on_async() -> None:
            async with emu.async_client() as aio:
                await aio.model(UNPRICED).chat(messages=[{"role": "user", "content": "hi"}])
                assert aio.usage.by_model["@cf/baai/bge-m3"].calls == 0
                assert aio.usage.by_model[UNPRICED].calls == 1 and list(aio.usage.by_model) == [UNPRICED]

        asyncio.run(on_async())


def test_call_cost_units_cached_tokens_and_unknowns() -> None:
    from workers_ai._core.accounting import call_cost
    from workers_ai._core.usage import Usage

    tokens = [
        {"unit": "per M input tokens", "price": 1.0, "currency": "USD"},
        {"unit": "per M output tokens", "price": 2.0, "currency": "USD"},
        {"unit": "per M cached input tokens", "price": 0.1, "currency": "USD"},
    ]
    used = Usage(
        prompt_tokens=1000, completion_tokens=500, total_tokens=1500, prompt_tokens_details={"cached_tokens": 400}
    )
    assert call_cost(tokens, used) == pytest.approx((600 * 1.0 + 400 * 0.1 + 500 * 2.0) / 1e6)
    assert call_cost(tokens, None) is None  # token-priced but no counts reported
    per_request = [{"unit": "per inference request", "price": 0.002, "currency": "USD"}]
    assert call_cost(per_request, None, calls=3) == pytest.approx(0.006)
    assert call_cost([{"unit": "per step", "price": 0.0001, "currency": "USD"}], used) is None
    assert call_cost([{"unit": "per M input tokens", "price": 1.0, "currency": "EUR"}], used) is None
    assert call_cost((), used) is None


def test_the_meter_costs_a_call_by_call_cost() -> None:
    """UsageMeter.record and call_cost are one rule: every price list and usage costs the same in both."""
    from workers_ai._core.accounting import UsageMeter, call_cost
    from workers_ai._core.usage import Usage

    prices: list[list[dict[str, object]]] = [
        [{"unit": "per M input tokens", "price": 1.0}, {"unit": "per M cached input tokens", "price": 0.1}],
        [{"unit": "per inference request", "price": 0.002}, {"unit": "per M output tokens", "price": 2.0}],
        [{"unit": "per inference request", "price": 0.002}],
        [{"unit": "per step", "price": 0.0001}],
        [],
    ]
    used = Usage(prompt_tokens=1000, completion_tokens=500, prompt_tokens_details={"cached_tokens": 400})
    for price in prices:
        for usage in (used, None):
            meter = UsageMeter()
            meter.record("m", usage, price, calls=3)
            assert meter.total_cost_usd == call_cost(price, usage, calls=3), (price, usage)
