"""Envelope errors, retries and client-side validation, against a scripted server."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest
from workers_ai import WorkersAI, errors
from workers_ai._retry import retry_after
from workers_ai.models.cf.baai import bge_m3

from tests._server import Reply, ScriptedServer, envelope, fail, ok
from tests.conftest import ACCOUNT, TOKEN

EMBED = {"shape": [1, 2], "data": [[0.1, 0.2]], "pooling": "mean"}


def client(server: ScriptedServer, *, max_retries: int = 2, timeout: float = 10.0) -> WorkersAI:
    ai = WorkersAI(
        account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=max_retries, timeout=timeout
    )
    return ai


def embed(ai: WorkersAI) -> bge_m3.EmbeddingOutput:
    return ai.model("@cf/baai/bge-m3").embed(text="hello")


def assert_token_absent(exc: BaseException) -> None:
    for text in (str(exc), repr(exc), repr(exc.args), repr(vars(exc))):
        assert TOKEN not in text


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


def test_429_with_retry_after_then_success(server: ScriptedServer) -> None:
    server.script(fail(429, 3021, "rate limited", retry_after="1"), ok(EMBED))
    ai = client(server)
    waits: list[float] = []
    ai._sleep = waits.append
    out = embed(ai)
    assert out.data == [[0.1, 0.2]]
    assert len(server.requests) == 2
    assert waits == [1.0]  # the server's Retry-After, not our own backoff


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert retry_after({"retry-after": "7"}, now=now) == 7.0
    assert retry_after({"retry-after": formatdate(now + 30, usegmt=True)}, now=now) == 30.0
    assert retry_after({"retry-after": formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}, now=now) == 0.25
    assert retry_after({"retry-after": "soon"}, now=now) is None
    assert retry_after({}, now=now) is None


def test_retry_after_http_date_is_honoured_on_the_wire(server: ScriptedServer) -> None:
    # A date far enough ahead that clock skew between formatting and parsing cannot matter.
    server.script(fail(429, 3040, "busy", retry_after=formatdate(time.time() + 40, usegmt=True)), ok(EMBED))
    ai = client(server)
    waits: list[float] = []
    ai._sleep = waits.append
    embed(ai)
    assert len(waits) == 1 and 30 <= waits[0] <= 40


def test_retry_after_beyond_the_cap_is_not_waited_for(server: ScriptedServer) -> None:
    server.script(fail(429, 3036, "daily allocation used up", retry_after="3600"), ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: pytest.fail(f"should not sleep {s}s")
    with pytest.raises(errors.RateLimitError) as info:
        embed(ai)
    assert info.value.retry_after == 3600
    assert len(server.requests) == 1


def test_503_then_success_uses_backoff(server: ScriptedServer) -> None:
    server.script(Reply(503, b"busy", content_type="text/plain"), ok(EMBED))
    ai = client(server)
    waits: list[float] = []
    ai._sleep = waits.append
    assert embed(ai).shape == [1, 2]
    assert len(server.requests) == 2
    assert len(waits) == 1 and 0.375 <= waits[0] <= 0.5  # 0.5 s with up to 25% jitter


def test_retries_exhausted_raise_with_status(server: ScriptedServer) -> None:
    server.script(fail(500, 0, "boom"))
    ai = client(server, max_retries=3)
    waits: list[float] = []
    ai._sleep = waits.append
    with pytest.raises(errors.InternalServerError) as info:
        embed(ai)
    assert info.value.status == 500
    assert len(server.requests) == 4
    assert len(waits) == 3 and waits[0] < waits[2]  # exponential


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


def test_reset_then_success_is_retried(server: ScriptedServer) -> None:
    server.script("reset", ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: None
    assert embed(ai).data == [[0.1, 0.2]]
    assert len(server.requests) == 2


def test_client_timeout_is_always_on(server: ScriptedServer) -> None:
    server.script(Reply(200, envelope(EMBED), delay=1.5))
    ai = client(server, max_retries=0, timeout=0.3)
    with pytest.raises(errors.APITimeoutError) as info:
        embed(ai)
    assert "0.3" in str(info.value)
    assert_token_absent(info.value)
    with pytest.raises(errors.ConfigurationError):
        WorkersAI(account_id=ACCOUNT, api_token=TOKEN, timeout=0)


def test_missing_credentials_are_a_configuration_error() -> None:
    with pytest.raises(errors.ConfigurationError, match="CLOUDFLARE_ACCOUNT_ID"):
        WorkersAI(api_token=TOKEN)
    with pytest.raises(errors.ConfigurationError, match="CLOUDFLARE_API_TOKEN"):
        WorkersAI(account_id=ACCOUNT)


def test_token_never_in_repr(server: ScriptedServer) -> None:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    assert TOKEN not in repr(ai) and TOKEN not in str(ai)
    assert TOKEN not in repr(ai.model("@cf/baai/bge-m3"))


# ---------------------------------------------------------------- client-side validation


@pytest.mark.parametrize(
    ("call", "path", "fragment"),
    [
        (lambda h: h.embed(text=""), "$.text", "length >= 1"),
        (lambda h: h.embed(text=[f"t{i}" for i in range(101)]), "$.text", "length <= 100"),
        (lambda h: h.embed(text=["ok", ""]), "$.text[1]", "length >= 1"),
        (lambda h: h.embed(text=5), "$.text", "got `int`"),
        (lambda h: h.rank(query="q", contexts=[bge_m3.Context(text="")]), "$.contexts[0].text", "length >= 1"),
        (lambda h: h.embed_contexts(contexts=[bge_m3.Context(text="")]), "$.contexts[0].text", "length >= 1"),
        (lambda h: h.rank(query="", contexts=[bge_m3.Context(text="c")]), "$.query", "length >= 1"),
    ],
)
def test_bad_typed_input_fails_before_sending(server: ScriptedServer, call: object, path: str, fragment: str) -> None:
    handle = client(server).model("@cf/baai/bge-m3")
    with pytest.raises(errors.InputValidationError) as info:
        call(handle)  # type: ignore[operator]
    err = info.value
    assert err.model_id == "@cf/baai/bge-m3"
    assert err.path == path
    assert fragment in str(err)
    assert server.requests == []


@pytest.mark.parametrize(
    ("payload", "path", "fragment"),
    [
        ({}, "$.", "missing required field"),
        ({"truncate_inputs": True}, "$.", "missing required field"),
        ({"text": ""}, "$.text", "length >= 1"),
        ({"text": ["a"] * 101}, "$.text", "length <= 100"),
        ({"text": 3.5}, "$.text", "got `float`"),
        ({"contexts": "not a list"}, "$.contexts", "Expected `array`"),
    ],
)
def test_bad_mapping_input_fails_before_sending(
    server: ScriptedServer, payload: dict[str, object], path: str, fragment: str
) -> None:
    with pytest.raises(errors.InputValidationError) as info:
        client(server).run("@cf/baai/bge-m3", payload)
    assert info.value.path.startswith(path)
    assert fragment in str(info.value)
    assert "@cf/baai/bge-m3" in str(info.value)
    assert server.requests == []


def test_missing_required_keyword_is_a_type_error(server: ScriptedServer) -> None:
    handle = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url).model("@cf/baai/bge-m3")
    with pytest.raises(TypeError, match="text"):
        handle.embed()  # type: ignore[call-arg]


def test_enum_and_range_constraints(server: ScriptedServer) -> None:
    ai = client(server)
    with pytest.raises(errors.InputValidationError, match="temperature"):
        ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "hi", "temperature": 9})
    with pytest.raises(errors.InputValidationError) as info:
        ai.model("@cf/meta/llama-3-8b-instruct").generate(prompt="hi", temperature=9.0)
    assert info.value.path == "$.temperature" and "<= 5" in str(info.value)
    with pytest.raises(errors.InputValidationError) as info2:
        ai.run("@cf/baai/bge-base-en-v1.5", {"text": "a", "pooling": "max"})
    assert info2.value.path == "$.pooling"
    assert server.requests == []


# ---------------------------------------------------------------- review follow-ups


def test_token_with_a_line_break_is_refused_without_echoing_it() -> None:
    with pytest.raises(errors.ConfigurationError) as info:
        WorkersAI(account_id=ACCOUNT, api_token=TOKEN + "\n")
    assert TOKEN not in str(info.value)


def test_bad_extra_header_never_echoes_the_token(server: ScriptedServer) -> None:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, headers={"x-note": "a\nb"})
    with pytest.raises(errors.ConfigurationError) as info:
        embed(ai)
    assert_token_absent(info.value)
    assert server.requests == []


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


def test_daily_quota_429_is_not_retried(server: ScriptedServer) -> None:
    server.script(fail(429, 3036, "daily free allocation used up"), ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: pytest.fail("quota errors must not be retried")
    with pytest.raises(errors.QuotaExceededError):
        embed(ai)
    assert len(server.requests) == 1


def test_connection_refused_names_the_cause() -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=f"http://127.0.0.1:{port}/client/v4", max_retries=1)
    ai._sleep = lambda s: None
    with pytest.raises(errors.APIConnectionError) as info:
        embed(ai)
    assert "refused" in str(info.value).lower()
    assert_token_absent(info.value)


def test_retries_are_logged_without_the_token(server: ScriptedServer, caplog: pytest.LogCaptureFixture) -> None:
    server.script(fail(503, 7009, "Upstream service unavailable"), ok(EMBED))
    ai = client(server)
    ai._sleep = lambda s: None
    with caplog.at_level("DEBUG", logger="workers_ai"):
        embed(ai)
    lines = [r.getMessage() for r in caplog.records if r.name == "workers_ai"]
    assert len(lines) == 1 and "HTTP 503" in lines[0] and "retry 1 of 2" in lines[0]
    assert all(TOKEN not in line for line in caplog.text.splitlines())
