"""Errors that name the real cause, on both clients: a wrong account id (7003) is a ``RouteNotFoundError``
naming the account id and where it came from, not a missing model; a refused token (401 / 10000, 403) says
where the token came from (never its value) and what to check; an unknown model (5007) names the known ids
nearest it. Servers on 127.0.0.1 answer with the real API's envelopes, byte for byte; the emulator too.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI, errors
from workers_ai.testing import Emulator

from tests._server import Reply, ScriptedServer
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import assert_token_absent

BGE = "@cf/baai/bge-m3"
WRONG = "ffffffffffffffffffffffffffffffff"


def _real(status: int, code: int, message: str) -> Reply:
    """An error reply as the API writes it (key order and all)."""
    body = b'{"result":null,"success":false,"errors":[{"code":%d,"message":"%s"}],"messages":[]}' % (
        code,
        message.encode(),
    )
    return Reply(status, body, {"cf-ray": "8f1e2d3c4b5a6978-SJC"})


def _route(account: str, model: str = BGE) -> Reply:
    path = f"/client/v4/accounts/{account}/ai/run/{model}"
    return _real(404, 7003, f"Could not route to {path}, perhaps your object identifier is invalid?")


Call = Callable[..., Any]


def _sync(model: str = BGE, payload: Any = None, **client: Any) -> BaseException:
    ai = WorkersAI(**client)
    try:
        ai.run(model, payload or {"text": ["a"]})
    except errors.WorkersAIError as exc:
        return exc
    finally:
        ai.close()
    raise AssertionError("no error")


def _async(model: str = BGE, payload: Any = None, **client: Any) -> BaseException:
    async def main() -> BaseException:
        async with AsyncWorkersAI(**client) as ai:
            try:
                await ai.run(model, payload or {"text": ["a"]})
            except errors.WorkersAIError as exc:
                return exc
        raise AssertionError("no error")

    return asyncio.run(main())


BOTH = pytest.mark.parametrize("call", [_sync, _async], ids=["sync", "async"])


@BOTH
def test_a_wrong_account_id_is_a_route_error_naming_it_and_its_source(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, call: Call
) -> None:
    server.script(_route(WRONG))
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", WRONG)
    exc = call(api_token=TOKEN, base_url=server.base_url)
    assert isinstance(exc, errors.RouteNotFoundError) and isinstance(exc, errors.BadRequestError)
    assert not isinstance(exc, errors.ModelNotFoundError)  # the model is not what is wrong
    text = str(exc)
    assert f"account id {WRONG} (from CLOUDFLARE_ACCOUNT_ID)" in text
    assert "the account id is most likely wrong, not the model" in text
    assert exc.status == 404 and exc.code == 7003 and exc.cf_ray == "8f1e2d3c4b5a6978-SJC"
    assert len(server.requests) == 1  # never retried
    assert_token_absent(exc)
    server.script(_route(WRONG))
    monkeypatch.delenv("CLOUDFLARE_ACCOUNT_ID")
    given = call(account_id=WRONG, api_token=TOKEN, base_url=server.base_url)
    assert f"account id {WRONG} (from the account_id argument)" in str(given)


@BOTH
def test_a_refused_token_says_where_it_came_from_and_what_to_check(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, call: Call
) -> None:
    server.script(_real(401, 10000, "Authentication error"))
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", TOKEN)
    exc = call(account_id=ACCOUNT, base_url=server.base_url)
    assert isinstance(exc, errors.AuthenticationError)
    text = str(exc)
    assert "the API token from CLOUDFLARE_API_TOKEN was refused" in text
    for check in ("Workers AI permission", f"made for account {ACCOUNT} (from the account_id argument)", "expired"):
        assert check in text
    assert_token_absent(exc)
    monkeypatch.delenv("CLOUDFLARE_API_TOKEN")
    given = call(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    assert "the API token from the api_token argument was refused" in str(given)
    assert_token_absent(given)


@BOTH
def test_a_403_names_the_token_unless_the_model_or_account_is_the_cause(server: ScriptedServer, call: Call) -> None:
    server.script(_real(403, 9109, "Unauthorized to access requested resource"))
    exc = call(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    assert isinstance(exc, errors.PermissionDeniedError)
    assert "the API token from the api_token argument may not do this" in str(exc)
    assert f"for account {ACCOUNT}" in str(exc)
    assert_token_absent(exc)
    server.script(_real(403, 10000, "Authentication error"))  # the code decides: a refused token
    assert "was refused" in str(call(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url))
    server.script(_real(403, 5018, "The account is not allowed to access this model"))
    private = call(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    assert isinstance(private, errors.PermissionDeniedError) and "API token" not in str(private)


@BOTH
def test_an_unknown_model_names_the_nearest_known_ids(
    server: ScriptedServer, call: Call, recwarn: pytest.WarningsRecorder
) -> None:
    typo = "@cf/meta/llama-3-8b-instruk"
    server.script(_real(400, 5007, f"No such model {typo} or task"))
    exc = call(typo, {"prompt": "hi"}, account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    assert isinstance(exc, errors.ModelNotFoundError) and exc.code == 5007
    assert "(did you mean '@cf/meta/llama-3-8b-instruct'?)" in str(exc)
    assert [w.category for w in recwarn] == [errors.UnknownModelWarning]  # and a warning at run()
    server.script(_real(400, 5007, "No such model @cf/nobody/nothing-at-all or task"))
    far = call("@cf/nobody/nothing-at-all", {"prompt": "hi"}, account_id=ACCOUNT, api_token=TOKEN,
               base_url=server.base_url)  # fmt: skip
    assert isinstance(far, errors.ModelNotFoundError) and "did you mean" not in str(far)


@BOTH
def test_the_emulator_gives_the_same_errors(workers_ai_emulator: Emulator, call: Call) -> None:
    emu = workers_ai_emulator
    route = call(account_id=WRONG, api_token=emu.api_token, base_url=emu.base_url)
    assert isinstance(route, errors.RouteNotFoundError) and f"account id {WRONG}" in str(route)
    auth = call(account_id=emu.account_id, api_token="wrong-token-value", base_url=emu.base_url)
    assert isinstance(auth, errors.AuthenticationError) and "was refused" in str(auth)
    assert "wrong-token-value" not in str(auth)


def test_copies_and_pickles_keep_where_the_credentials_came_from(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", WRONG)
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", TOKEN)
    ai = WorkersAI(base_url=server.base_url)
    monkeypatch.delenv("CLOUDFLARE_ACCOUNT_ID")  # a worker elsewhere: the values travel, and where they came from
    monkeypatch.delenv("CLOUDFLARE_API_TOKEN")
    for copy in (
        ai.with_options(timeout=5),
        pickle.loads(pickle.dumps(ai)),
        pickle.loads(pickle.dumps(ai.model(BGE))).client,
    ):
        server.script(_route(WRONG))
        with pytest.raises(errors.RouteNotFoundError, match="from CLOUDFLARE_ACCOUNT_ID"):
            copy.run(BGE, {"text": ["a"]})
        server.script(_real(401, 10000, "Authentication error"))
        with pytest.raises(errors.AuthenticationError, match="from CLOUDFLARE_API_TOKEN"):
            copy.run(BGE, {"text": ["a"]})
    other = ai.with_options(account_id=ACCOUNT)  # a copy given its own account id says so
    server.script(_route(ACCOUNT))
    with pytest.raises(errors.RouteNotFoundError, match="from the account_id argument"):
        other.run(BGE, {"text": ["a"]})


def test_a_malformed_account_id_names_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "my-account")
    with pytest.raises(errors.ConfigurationError, match=r"'my-account' \(from CLOUDFLARE_ACCOUNT_ID\)"):
        WorkersAI(api_token=TOKEN)
