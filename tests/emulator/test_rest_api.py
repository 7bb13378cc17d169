"""The emulator's REST surface, spoken to with plain urllib3 (no SDK in between): routes, auth, envelope,
validation, discovery, binary bodies, streaming framing, keep-alive, concurrency and the command line."""

from __future__ import annotations

import inspect
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from workers_ai.testing import Emulator

ROOT = Path(__file__).resolve().parents[2]
BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3-8b-instruct"


@pytest.fixture
def http() -> Iterator[urllib3.PoolManager]:
    pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=30))
    yield pool
    pool.clear()


def _auth(emu: Emulator, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {emu.api_token}", **extra}


def _post(
    http: urllib3.PoolManager,
    emu: Emulator,
    model: str,
    body: Any,
    *,
    raw: bytes | None = None,
    query: str = "",
    timeout: urllib3.Timeout | None = None,
    **headers: str,
) -> urllib3.BaseHTTPResponse:
    data = raw if raw is not None else json.dumps(body).encode()
    hdrs = _auth(emu, **({"Content-Type": "application/json"} if raw is None else {}), **headers)
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{model}{query}"
    if timeout is not None:
        return http.request("POST", url, body=data, headers=hdrs, timeout=timeout)
    return http.request("POST", url, body=data, headers=hdrs)


def _errors(resp: urllib3.BaseHTTPResponse) -> list[dict[str, Any]]:
    env = json.loads(resp.data)
    assert env["success"] is False and env["result"] is None and env["messages"] == []
    errors: list[dict[str, Any]] = env["errors"]
    return errors


# --------------------------------------------------------------------------- routing, auth, envelope


def test_run_returns_the_cloudflare_envelope_with_a_cf_ray(
    workers_ai_emulator: Emulator, http: urllib3.PoolManager
) -> None:
    resp = _post(http, workers_ai_emulator, BGE, {"text": "hello"})
    assert resp.status == 200 and resp.headers["content-type"] == "application/json"
    assert re.fullmatch(r"[0-9a-f]{16}-EMU", resp.headers["cf-ray"])
    env = json.loads(resp.data)
    assert set(env) == {"result", "success", "errors", "messages"} and env["success"] is True
    assert env["result"]["shape"] == [1, 1024]


def test_percent_encoded_model_slashes_get_no_route(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    resp = _post(http, workers_ai_emulator, "@cf%2Fbaai%2Fbge-m3", {"text": "hello"})
    assert resp.status == 400 and _errors(resp) == [{"code": 7000, "message": "No route for that URI"}]
    ok = _post(http, workers_ai_emulator, "%40cf/baai/bge-m3", {"text": "hello"})  # an encoded "@" is fine
    assert ok.status == 200


@pytest.mark.parametrize("path", ["/client/v4/accounts/x/ai/v1/nothing", "/nope", "/client/v4/accounts/x/ai/v2/run"])
def test_unknown_routes_get_7000(workers_ai_emulator: Emulator, http: urllib3.PoolManager, path: str) -> None:
    resp = http.request("GET", workers_ai_emulator.url + path, headers=_auth(workers_ai_emulator))
    assert resp.status == 400 and _errors(resp)[0]["code"] == 7000


def test_openai_model_list_is_not_an_endpoint(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    url = workers_ai_emulator.openai_base_url + "/models"  # the API answers every method with 405/7001
    for method in ("GET", "POST"):
        resp = http.request(method, url, headers=_auth(workers_ai_emulator))
        assert resp.status == 405 and _errors(resp)[0]["code"] == 7001


def test_get_on_run_is_405_7001(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    resp = http.request("GET", f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{BGE}", headers=_auth(emu))
    assert resp.status == 405
    assert _errors(resp) == [{"code": 7001, "message": "GET not supported for requested URI."}]


def test_unknown_model_is_400_5007(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    resp = _post(http, workers_ai_emulator, "@cf/nobody/no-such-model", {"prompt": "x"})
    assert resp.status == 400
    (err,) = _errors(resp)
    assert err["code"] == 5007 and err["message"].startswith("No such model @cf/nobody/no-such-model")


@pytest.mark.parametrize("auth", [None, "Bearer wrong", "Basic abc", "Bearer"])
def test_missing_or_wrong_token_is_401_10000(
    workers_ai_emulator: Emulator, http: urllib3.PoolManager, auth: str | None
) -> None:
    emu = workers_ai_emulator
    headers = {"Authorization": auth} if auth else {}
    resp = http.request(
        "POST", f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{BGE}", body=b'{"text":"a"}', headers=headers
    )
    assert resp.status == 401 and _errors(resp) == [{"code": 10000, "message": "Authentication error"}]


def test_wrong_account_is_404_7003(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    url = f"{emu.base_url}/accounts/not-mine/ai/run/{BGE}"
    resp = http.request("POST", url, body=b'{"text":"a"}', headers=_auth(emu))
    assert resp.status == 404
    (err,) = _errors(resp)
    assert err["code"] == 7003 and "not-mine" in err["message"]


# --------------------------------------------------------------------------- validation and bodies


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"text": ""}', "AiError: Bad input: /text: '' should be non-empty"),
        (b'{"text": ["fine", 7]}', "AiError: Bad input: /text/1: 7 is not of type 'string'"),
        (b'{"contexts": [{"text": ""}], "query": "q"}', "AiError: Bad input: /contexts/0/text: '' should be non-empty"),
        (b"[1, 2]", "AiError: Bad input: /: [1, 2] is not of type 'object'"),
        (b"{not json", "AiError: Bad input: /: the body is not JSON, and @cf/baai/bge-m3 takes no binary input"),
    ],
)
def test_invalid_input_is_400_5006_naming_the_path(
    workers_ai_emulator: Emulator, http: urllib3.PoolManager, body: bytes, message: str
) -> None:
    resp = _post(http, workers_ai_emulator, BGE, None, raw=body, **{"Content-Type": "application/json"})
    assert resp.status == 400 and _errors(resp) == [{"code": 5006, "message": message}]


def test_raw_binary_bodies_go_to_models_with_a_binary_input(
    workers_ai_emulator: Emulator, http: urllib3.PoolManager
) -> None:
    audio = bytes(range(256)) * 200
    resp = _post(http, workers_ai_emulator, "@cf/openai/whisper", None, raw=audio)
    assert resp.status == 200
    result = json.loads(resp.data)["result"]
    assert result["text"] and result["word_count"] == len(result["words"])
    typed = _post(
        http, workers_ai_emulator, "@cf/microsoft/resnet-50", None, raw=b"\x89PNG...", **{"Content-Type": "image/png"}
    )
    assert typed.status == 200 and isinstance(json.loads(typed.data)["result"], list)
    refused = _post(
        http, workers_ai_emulator, LLAMA, None, raw=b"\x00\x01", **{"Content-Type": "application/octet-stream"}
    )
    assert refused.status == 400 and _errors(refused)[0]["code"] == 5006


def test_binary_outputs_are_raw_bytes_of_the_declared_type(
    workers_ai_emulator: Emulator, http: urllib3.PoolManager
) -> None:
    png = _post(http, workers_ai_emulator, "@cf/stabilityai/stable-diffusion-xl-base-1.0", {"prompt": "a cat"})
    assert png.status == 200 and png.headers["content-type"] == "image/png" and png.data[:4] == b"\x89PNG"
    mp3 = _post(http, workers_ai_emulator, "@cf/deepgram/aura-1", {"text": "hello there"})
    assert mp3.headers["content-type"] == "audio/mpeg" and mp3.data[:2] == b"\xff\xfb"
    melo = _post(http, workers_ai_emulator, "@cf/myshell-ai/melotts", {"prompt": "hello"})
    audio = json.loads(melo.data)["result"]["audio"]
    import base64

    assert base64.b64decode(audio)[:2] == b"\xff\xfb"


def test_replies_are_deterministic_per_input(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    one = json.loads(_post(http, workers_ai_emulator, LLAMA, {"prompt": "same question"}).data)
    two = json.loads(_post(http, workers_ai_emulator, LLAMA, {"prompt": "same question"}).data)
    other = json.loads(_post(http, workers_ai_emulator, LLAMA, {"prompt": "another question"}).data)
    assert one == two and one != other and "same question" in one["result"]["response"]


# --------------------------------------------------------------------------- discovery


def test_models_search_filters_and_pages(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/models/search"
    env = json.loads(http.request("GET", url, fields={"per_page": "5", "page": "2"}, headers=_auth(emu)).data)
    total = len(emu.models())
    assert env["result_info"] == {"count": 5, "page": 2, "per_page": 5, "total_count": total}
    model = env["result"][0]
    assert set(model) == {"id", "source", "name", "description", "task", "tags", "properties"}
    assert set(model["task"]) == {"id", "name", "description"}
    embeddings = json.loads(
        http.request("GET", url, fields={"task": "Text Embeddings", "author": "baai"}, headers=_auth(emu)).data
    )
    names = [m["name"] for m in embeddings["result"]]
    assert BGE in names and all(n.startswith("@cf/baai/") for n in names)
    again = json.loads(http.request("GET", url, fields={"search": "bge-m3"}, headers=_auth(emu)).data)
    assert [m["name"] for m in again["result"]] == [BGE]
    assert again["result"][0]["id"] == next(m["id"] for m in embeddings["result"] if m["name"] == BGE)  # stable


def test_models_schema_returns_input_and_output(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/models/schema?model=%40cf%2Fbaai%2Fbge-m3"
    env = json.loads(http.request("GET", url, headers=_auth(emu)).data)
    stored = json.loads((ROOT / "schemas/@cf/baai/bge-m3.json").read_text())["schema"]
    assert env["success"] is True and env["result"] == {"input": stored["input"], "output": stored["output"]}
    missing = http.request("GET", url.replace("bge-m3", "nothing"), headers=_auth(emu))
    assert missing.status == 400 and _errors(missing)[0]["code"] == 5007


# --------------------------------------------------------------------------- streaming framing


def test_stream_is_chunked_sse_with_usage_and_done(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    url = f"{emu.base_url}/accounts/{emu.account_id}/ai/run/{LLAMA}"
    body = json.dumps({"prompt": "stream me something", "stream": True}).encode()
    resp = http.request("POST", url, body=body, headers=_auth(emu), preload_content=False)
    assert resp.headers["content-type"] == "text/event-stream"
    assert resp.headers.get("transfer-encoding") == "chunked"
    reads = list(resp.read_chunked())
    assert len(reads) > 3  # written as several chunks, not one body
    events = [e for e in b"".join(reads).decode().split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert all("p" in p for p in payloads[:-1])
    assert payloads[-1]["response"] == "" and payloads[-1]["usage"]["total_tokens"] > 0
    whole = json.loads(_post(http, emu, LLAMA, {"prompt": "stream me something"}).data)["result"]["response"]
    assert "".join(p["response"] for p in payloads) == whole


def test_chat_completion_models_stream_chunks(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    body = {"messages": [{"role": "user", "content": "hello"}], "stream": True}
    resp = _post(http, workers_ai_emulator, "@cf/qwen/qwen3-30b-a3b-fp8", body)
    events = [json.loads(e[6:]) for e in resp.data.decode().split("\n\n") if e and e != "data: [DONE]"]
    assert events[0]["object"] == "chat.completion.chunk" and events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert events[-2]["choices"][0]["finish_reason"] == "stop" and "usage" in events[-1]


# --------------------------------------------------------------------------- connection behaviour


def test_keep_alive_reuses_one_connection(workers_ai_emulator: Emulator) -> None:
    pool = urllib3.HTTPConnectionPool("127.0.0.1", workers_ai_emulator.port, maxsize=1, retries=False)
    path = f"/client/v4/accounts/{workers_ai_emulator.account_id}/ai/run/{BGE}"
    for _ in range(5):
        resp = pool.request("POST", path, body=b'{"text":"a"}', headers=_auth(workers_ai_emulator))
        assert resp.status == 200
    assert pool.num_connections == 1 and pool.num_requests == 5
    pool.close()


def test_concurrent_clients_are_served(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        resp = _post(http, workers_ai_emulator, BGE, {"text": f"text number {i}"})
        with lock:
            results.append(resp.status)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [200] * 16
    assert len(workers_ai_emulator.requests) == 16


def test_requests_are_recorded(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    _post(http, workers_ai_emulator, BGE, {"text": "recorded"}, **{"x-trace": "7"})
    (rec,) = workers_ai_emulator.requests
    assert rec.method == "POST" and rec.path.endswith("/ai/run/@cf/baai/bge-m3") and rec.model == BGE
    assert rec.headers["x-trace"] == "7" and rec.json() == {"text": "recorded"} and rec.status == 200
    workers_ai_emulator.reset()
    assert workers_ai_emulator.requests == []


def test_gateway_routes_answer_like_run(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    for path in (f"/v1/{emu.account_id}/gw/workers-ai/{BGE}", f"/v1/{emu.account_id}/gw/workers-ai/run/{BGE}"):
        resp = http.request("POST", emu.url + path, body=b'{"text":"a"}', headers=_auth(emu))
        assert resp.status == 200 and resp.headers["cf-aig-cache-status"] == "MISS"


# --------------------------------------------------------------------------- faults on the wire


def test_fault_header_and_injected_faults(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    limited = _post(http, emu, BGE, {"text": "a"}, **{"x-emulator-fault": "rate_limit; retry_after=3"})
    assert limited.status == 429 and limited.headers["retry-after"] == "3" and _errors(limited)[0]["code"] == 3021
    html = _post(http, emu, BGE, {"text": "a"}, **{"x-emulator-fault": "html_502"})
    assert html.status == 502 and html.headers["content-type"].startswith("text/html") and b"<title>" in html.data
    bad = _post(http, emu, BGE, {"text": "a"}, **{"x-emulator-fault": "no_such_fault"})
    assert bad.status == 400 and "known faults" in _errors(bad)[0]["message"]
    fault = emu.inject("capacity", times=2, model=BGE)
    statuses = [_post(http, emu, BGE, {"text": "a"}).status for _ in range(3)]
    other = _post(http, emu, "@cf/baai/bge-small-en-v1.5", {"text": "a"})
    assert statuses == [429, 429, 200] and fault.hits == 2 and other.status == 200
    with pytest.raises(ValueError, match="unknown fault"):
        emu.inject("meltdown")


def test_a_match_predicate_may_call_back_into_the_emulator(http: urllib3.PoolManager) -> None:
    emu = Emulator()
    try:
        # The predicate reads the emulator's own records: it must not run under the emulator's lock.
        fault = emu.inject("capacity", match=lambda r: len(emu.requests_for(BGE)) > 1)
        timeout = urllib3.Timeout(connect=5, read=10)
        statuses = [_post(http, emu, BGE, {"text": "a"}, timeout=timeout).status for _ in range(3)]
        assert statuses == [200, 429, 200] and fault.hits == 1
        assert [r.fault for r in emu.requests] == [None, "capacity", None]
    finally:
        closer = threading.Thread(target=emu.close, daemon=True)
        closer.start()
        closer.join(30)
    assert not closer.is_alive(), "Emulator.close() hung"


def test_recorded_requests_never_show_the_token(http: urllib3.PoolManager) -> None:
    with Emulator(api_token="s3cr3t-token-value") as emu:
        _post(http, emu, BGE, {"text": "a"}, **{"cf-aig-authorization": "Bearer gw-s3cr3t"})
        (rec,) = emu.requests
    assert rec.headers["authorization"] == "Bearer s3cr3t-token-value"  # kept for tests that check it
    text = repr(rec)
    assert "s3cr3t" not in text and "'authorization': 'Bearer ***'" in text
    assert "'cf-aig-authorization': 'Bearer ***'" in text and "bge-m3" in text


def test_finished_batch_jobs_are_dropped_beyond_keep_jobs(http: urllib3.PoolManager) -> None:
    with Emulator(keep_jobs=2, batch_polls=(0, 0)) as emu:

        def submit() -> str:
            resp = _post(http, emu, BGE, {"requests": [{"text": "a"}]}, query="?queueRequest=true")
            request_id: str = json.loads(resp.data)["result"]["request_id"]
            return request_id

        def poll(request_id: str) -> urllib3.BaseHTTPResponse:
            return _post(http, emu, BGE, {"request_id": request_id})

        first = submit()
        assert poll(first).status == 200  # finished
        second, third = submit(), submit()  # three jobs, two kept: the finished one goes
        gone = poll(first)
        assert gone.status == 400 and "unknown or expired" in _errors(gone)[0]["message"]
        assert poll(second).status == 200 and poll(third).status == 200
        fourth = submit()  # all finished now: the oldest goes
        assert poll(second).status == 400
        assert poll(third).status == 200 and poll(fourth).status == 200


def test_truncated_reply_breaks_the_read(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    workers_ai_emulator.inject("truncated")
    with pytest.raises(urllib3.exceptions.ProtocolError):
        _post(http, workers_ai_emulator, BGE, {"text": "a"})


# --------------------------------------------------------------------------- the command line


def _serve(args: list[str]) -> tuple[subprocess.Popen[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    seen: dict[str, str] = {}
    for line in proc.stdout:
        match = re.match(r"\s*export (\w+)=(\S+)", line)
        if match:
            seen[match.group(1)] = match.group(2)
        if line.startswith("Press Ctrl-C"):
            break
    return proc, seen


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "workers_ai.testing", "--port", "0", "--quiet"],
        [str(Path(sys.executable).parent / "workers-ai"), "serve", "--port", "0"],
    ],
    ids=["python-m", "workers-ai-serve"],
)
def test_command_line_prints_credentials_and_stops_on_ctrl_c(command: list[str], http: urllib3.PoolManager) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed")
    proc, env = _serve(command)
    try:
        assert set(env) == {"CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_BASE_URL"}
        url = f"{env['CLOUDFLARE_BASE_URL']}/accounts/{env['CLOUDFLARE_ACCOUNT_ID']}/ai/run/{BGE}"
        resp = http.request(
            "POST", url, body=b'{"text":"cli"}', headers={"Authorization": f"Bearer {env['CLOUDFLARE_API_TOKEN']}"}
        )
        assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            proc.stderr.close()
    assert proc.returncode == 0


def test_workers_ai_serve_takes_every_emulator_option(http: urllib3.PoolManager) -> None:
    """One definition: every ``Emulator(...)`` keyword is an option of ``python -m workers_ai.testing``,
    and ``workers-ai serve`` hands its arguments there (checked by running it with several)."""
    from workers_ai.testing.__main__ import build_parser, emulator_options

    keywords = set(inspect.signature(Emulator).parameters) - {"start", "log"}  # Python-only: a stream, start()
    assert set(emulator_options(build_parser().parse_args([]))) == keywords
    command = str(Path(sys.executable).parent / "workers-ai")
    if not Path(command).exists():
        pytest.skip(f"{command} is not installed")
    args = ["--port", "0", "--token", "t0k", "--account-id", "9" * 32, "--models", BGE, "--batch-polls", "0", "0"]
    proc, env = _serve([command, "serve", *args, "--workers", "2", "--no-shuffle-batches", "--check-outputs"])
    try:
        assert env["CLOUDFLARE_ACCOUNT_ID"] == "9" * 32 and env["CLOUDFLARE_API_TOKEN"] == "t0k"
        base = f"{env['CLOUDFLARE_BASE_URL']}/accounts/{'9' * 32}/ai/run/"
        auth = {"Authorization": "Bearer t0k"}
        assert http.request("POST", base + BGE, body=b'{"text":"cli"}', headers=auth).status == 200
        other = http.request("POST", base + "@cf/baai/bge-small-en-v1.5", body=b'{"text":"x"}', headers=auth)
        assert other.status == 400  # --models: only bge-m3 is served
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            proc.stderr.close()
    help_text = subprocess.run([command, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    assert help_text.startswith("usage: workers-ai serve") and "--batch-delay" in help_text


def test_importing_the_sdk_does_not_import_the_emulator_or_jsonschema() -> None:
    code = (
        "import sys, workers_ai; "
        "print(sorted(m for m in sys.modules if m.startswith(('jsonschema', 'workers_ai.testing'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_example_inputs_fit_and_run(workers_ai_emulator: Emulator, http: urllib3.PoolManager) -> None:
    emu = workers_ai_emulator
    example = emu.example_input(BGE, "Embedding")
    assert set(example) >= {"text"}
    assert _post(http, emu, BGE, example).status == 200
    with pytest.raises(ValueError, match="no input variant"):
        emu.example_input(BGE, "nope")
    with pytest.raises(KeyError):
        emu.example_input("@cf/nobody/missing")


def test_extra_schema_folders_and_model_subsets(tmp_path: Path, http: urllib3.PoolManager) -> None:
    folder = tmp_path / "@cf" / "acme"
    folder.mkdir(parents=True)
    schema = {
        "input": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "output": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
    }
    (folder / "tagger.json").write_text(json.dumps(schema))
    with Emulator(schemas=tmp_path, models=[BGE]) as emu:
        assert emu.models() == ["@cf/acme/tagger", BGE]
        ok = _post(http, emu, "@cf/acme/tagger", {"text": "hi"})
        assert ok.status == 200 and isinstance(json.loads(ok.data)["result"]["label"], str)
        assert _post(http, emu, "@cf/acme/tagger", {}).status == 400
        assert _post(http, emu, LLAMA, {"prompt": "hi"}).status == 400  # not in the subset: 5007
    with pytest.raises(ValueError, match="not a folder"):
        Emulator(schemas=tmp_path / "missing", start=False)
