"""AI Gateway on the emulator's port: the Universal Endpoint (steps tried in order, ``cf-aig-step`` naming
the one that answered), its ``workers-ai`` path, and the gateway headers (``cf-aig-log-id`` ULIDs,
``cf-aig-cache-status`` with a cache that ``cf-aig-cache-ttl`` turns on)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.1-8b-instruct"
ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_POOL = urllib3.PoolManager(retries=False)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as emulator:
        yield emulator


def _universal(emu: Emulator, steps: Any, **headers: str) -> urllib3.BaseHTTPResponse:
    url = f"{emu.gateway_url}/{emu.account_id}/my-gateway"
    body = json.dumps(steps).encode()
    return _POOL.request("POST", url, body=body, headers={"Content-Type": "application/json", **headers})


def _workers_ai_step(emu: Emulator, model: str = LLAMA, token: str | None = None) -> dict[str, Any]:
    return {
        "provider": "workers-ai",
        "endpoint": model,
        "headers": {"Authorization": f"Bearer {token or emu.api_token}", "Content-Type": "application/json"},
        "query": {"messages": [{"role": "user", "content": "What is Cloudflare?"}]},
    }


OPENAI_STEP = {
    "provider": "openai",
    "endpoint": "chat/completions",
    "headers": {"Authorization": "Bearer sk-test", "Content-Type": "application/json"},
    "query": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What is Cloudflare?"}]},
}


def test_the_first_step_that_works_answers(emu: Emulator) -> None:
    resp = _universal(emu, [_workers_ai_step(emu), OPENAI_STEP])
    assert resp.status == 200 and resp.headers["cf-aig-step"] == "0"
    assert json.loads(resp.data)["result"]["response"]
    assert ULID.match(resp.headers["cf-aig-log-id"]) and resp.headers["cf-aig-cache-status"] == "MISS"


def test_a_failing_step_falls_back_to_the_next_in_order(emu: Emulator) -> None:
    emu.reset()
    steps = [
        _workers_ai_step(emu, token="wrong"),  # 401
        _workers_ai_step(emu, model="@cf/acme/no-such-model"),  # 400/5007
        OPENAI_STEP,
        _workers_ai_step(emu),
    ]
    resp = _universal(emu, steps)
    assert resp.status == 200 and resp.headers["cf-aig-step"] == "2"
    reply = json.loads(resp.data)
    assert reply["object"] == "chat.completion" and reply["model"] == "openai/gpt-4o-mini"  # OpenAI's shape
    # the gateway request (recorded as it arrives), then each step tried; the fourth step never ran
    assert [r.status for r in emu.requests] == [200, 401, 400, 200]
    assert emu.requests[0].path == f"/v1/{emu.account_id}/my-gateway"


def test_an_injected_fault_on_the_primary_model_moves_to_the_fallback(emu: Emulator) -> None:
    emu.inject("unavailable", model=LLAMA)
    resp = _universal(emu, [_workers_ai_step(emu), _workers_ai_step(emu, model="@cf/meta/llama-3.1-8b-instruct-fast")])
    assert resp.status == 200 and resp.headers["cf-aig-step"] == "1"


def test_when_every_step_fails_the_last_failure_is_the_answer(emu: Emulator) -> None:
    resp = _universal(emu, [_workers_ai_step(emu, token="x"), _workers_ai_step(emu, model="@cf/acme/none")])
    assert resp.status == 400 and resp.headers["cf-aig-step"] == "1"
    assert json.loads(resp.data)["errors"][0]["code"] == 5007


@pytest.mark.parametrize("body", [{"not": "a list"}, [], "nonsense", [{"provider": "workers-ai"}]])
def test_a_malformed_request_is_refused(emu: Emulator, body: Any) -> None:
    resp = _universal(emu, body)
    assert resp.status == 400 and json.loads(resp.data)["success"] is False


def test_an_unknown_provider_step_is_skipped_as_a_failure(emu: Emulator) -> None:
    bogus = {**OPENAI_STEP, "provider": "nope"}
    resp = _universal(emu, [bogus, _workers_ai_step(emu)])
    assert resp.status == 200 and resp.headers["cf-aig-step"] == "1"


def test_the_workers_ai_path_caches_when_asked(emu: Emulator) -> None:
    url = f"{emu.gateway_url}/{emu.account_id}/my-gateway/workers-ai/{LLAMA}"
    headers = {"Authorization": f"Bearer {emu.api_token}", "Content-Type": "application/json"}
    body = json.dumps({"prompt": "cache me"}).encode()
    plain = [_POOL.request("POST", url, body=body, headers=headers) for _ in range(2)]
    assert [r.headers["cf-aig-cache-status"] for r in plain] == ["MISS", "MISS"]
    cached = [_POOL.request("POST", url, body=body, headers={**headers, "cf-aig-cache-ttl": "60"}) for _ in range(2)]
    assert [r.headers["cf-aig-cache-status"] for r in cached] == ["MISS", "HIT"]
    assert cached[0].data == cached[1].data
    assert cached[0].headers["cf-aig-log-id"] != cached[1].headers["cf-aig-log-id"]
    skipped = _POOL.request(
        "POST", url, body=body, headers={**headers, "cf-aig-cache-ttl": "60", "cf-aig-skip-cache": "true"}
    )
    assert skipped.headers["cf-aig-cache-status"] == "MISS"
    wrong = _POOL.request(
        "POST", url, body=body, headers={**headers, "cf-aig-cache-ttl": "60", "Authorization": "Bearer x"}
    )
    assert wrong.status == 401  # a cached reply never skips the token check


def test_the_universal_endpoint_checks_the_account(emu: Emulator) -> None:
    url = f"{emu.gateway_url}/someone-else/my-gateway"
    resp = _POOL.request("POST", url, body=json.dumps([_workers_ai_step(emu)]).encode())
    assert resp.status == 404
