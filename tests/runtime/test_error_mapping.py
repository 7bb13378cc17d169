"""Replies and transport failures map to ``workers_ai.errors`` classes: envelope errors, HTML pages,
truncated bodies, cut and refused connections.
"""

from __future__ import annotations

import pytest
from workers_ai import WorkersAI, errors

from tests._server import Reply, ScriptedServer, closed_port, envelope, fail
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import EMBED, assert_token_absent, client, embed


def test_400_with_code_5007_is_model_not_found(server: ScriptedServer) -> None:
    server.script(fail(400, 5007, "No such model @cf/baai/bge-m3 or task", cf_ray="8f00-LHR"))
    with pytest.raises(errors.ModelNotFoundError) as info:
        embed(client(server))
    err = info.value
    assert isinstance(err, errors.APIError) and isinstance(err, errors.WorkersAIError)
    assert err.status == 400
    assert err.codes == [5007]
    assert err.errors[0].message == "No such model @cf/baai/bge-m3 or task"
    assert err.cf_ray == "8f00-LHR"
    assert "5007" in str(err) and "@cf/baai/bge-m3" in str(err)
    assert len(server.requests) == 1  # 4xx is never retried
    assert_token_absent(err)


def test_401_is_authentication_error_and_not_retried(server: ScriptedServer) -> None:
    server.script(fail(401, 10000, "Authentication error"))
    with pytest.raises(errors.AuthenticationError) as info:
        embed(client(server))
    assert info.value.status == 401
    assert len(server.requests) == 1
    assert_token_absent(info.value)


def test_capacity_error_is_a_rate_limit_error(server: ScriptedServer) -> None:
    server.script(fail(429, 3040, "No more data centers to forward the request to"))
    ai = client(server, max_retries=0)
    with pytest.raises(errors.CapacityError) as info:
        embed(ai)
    assert isinstance(info.value, errors.RateLimitError)


def test_200_with_success_false_raises(server: ScriptedServer) -> None:
    server.script(Reply(200, envelope({}, success=False, errors=[{"code": 5006, "message": "oneOf at '/' not met"}])))
    with pytest.raises(errors.InvalidInputError) as info:
        embed(client(server))
    assert info.value.status == 200
    assert info.value.codes == [5006]
    assert len(server.requests) == 1


def test_html_502_page(server: ScriptedServer) -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body><center>cloudflare</center></body></html>"
    server.script(Reply(502, page, {"cf-ray": "77aa-AMS"}, content_type="text/html"))
    ai = client(server, max_retries=1)
    ai._sleep = lambda s: None
    with pytest.raises(errors.InternalServerError) as info:
        embed(ai)
    assert "502 Bad Gateway" in str(info.value)
    assert info.value.cf_ray == "77aa-AMS"
    assert len(server.requests) == 2
    assert_token_absent(info.value)


def test_truncated_json_body(server: ScriptedServer) -> None:
    body = envelope(EMBED)
    server.script(Reply(200, body[: len(body) // 2]))
    with pytest.raises(errors.ResponseDecodeError) as info:
        embed(client(server))
    assert "not valid JSON" in str(info.value)
    assert_token_absent(info.value)


def test_connection_cut_mid_body_is_a_connection_error(server: ScriptedServer) -> None:
    body = envelope(EMBED)
    server.script(Reply(200, body, truncate_to=10))
    ai = client(server, max_retries=0)
    with pytest.raises(errors.APIConnectionError) as info:
        embed(ai)
    assert "IncompleteRead" in str(info.value) or "connection" in str(info.value)
    assert_token_absent(info.value)


def test_client_timeout_is_always_on(server: ScriptedServer) -> None:
    server.script(Reply(200, envelope(EMBED), delay=1.5))
    ai = client(server, max_retries=0, timeout=0.3)
    with pytest.raises(errors.APITimeoutError) as info:
        embed(ai)
    assert "0.3" in str(info.value)
    assert_token_absent(info.value)
    with pytest.raises(errors.ConfigurationError):
        WorkersAI(account_id=ACCOUNT, api_token=TOKEN, timeout=0)


def test_envelope_with_null_errors_and_messages_still_decodes(server: ScriptedServer) -> None:
    body = b'{"result": {"shape": [1, 2], "data": [[0.1, 0.2]]}, "success": true, "errors": null, "messages": null}'
    server.script(Reply(200, body))
    assert embed(client(server)).data == [[0.1, 0.2]]
    server.script(Reply(200, b'{"result": null, "success": false, "errors": [{"code": 3040, "message": null}]}'))
    with pytest.raises(errors.CapacityError):
        embed(client(server, max_retries=0))


def test_html_page_with_status_200_is_not_returned_as_a_result(server: ScriptedServer) -> None:
    server.script(Reply(200, b"<html><title>Just a moment...</title></html>", content_type="text/html"))
    with pytest.raises(errors.ResponseDecodeError) as info:
        embed(client(server))
    assert "Just a moment" in str(info.value)


def test_connection_refused_names_the_cause() -> None:
    port = closed_port()  # nothing listens there now
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=f"http://127.0.0.1:{port}/client/v4", max_retries=1)
    ai._sleep = lambda s: None
    with pytest.raises(errors.APIConnectionError) as info:
        embed(ai)
    assert "refused" in str(info.value).lower()
    assert_token_absent(info.value)
