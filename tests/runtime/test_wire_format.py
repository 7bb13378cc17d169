"""The client against a scripted server: exact request bytes and the decoded result types."""

from __future__ import annotations

import msgspec
import pytest
from workers_ai import BinaryOutput, Gateway, WorkersAI
from workers_ai._core.config import run_url
from workers_ai.errors import ConfigurationError
from workers_ai.models.cf.baai import bge_m3
from workers_ai.models.cf.meta import llama_3_8b_instruct as llama

from tests._server import Reply, ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN


def client(server: ScriptedServer, **kw: object) -> WorkersAI:
    return WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, **kw)  # type: ignore[arg-type]


EMBED = {"shape": [2, 3], "data": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], "pooling": "mean"}


def test_embed_sends_exact_bytes_and_returns_embedding_struct(server: ScriptedServer) -> None:
    server.script(ok(EMBED))
    out = client(server).model("@cf/baai/bge-m3").embed(text=["a", "b"])
    assert type(out) is bge_m3.EmbeddingOutput
    assert out.data == [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    assert out.shape == [2, 3]
    (req,) = server.requests
    assert req.method == "POST"
    # The model id keeps literal slashes: %2F gets "No route for that URI" from the real API.
    assert req.target == f"/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-m3"
    assert req.raw.startswith(f"POST /client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-m3 HTTP/1.1\r\n".encode())
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert req.headers["content-type"] == "application/json"
    assert req.body == b'{"text":["a","b"]}'  # unset and default-valued fields stay off the wire


def test_rank_returns_query_scores(server: ScriptedServer) -> None:
    server.script(ok({"response": [{"id": 0, "score": 0.73}, {"id": 1, "score": 0.64}]}))
    out = (
        client(server)
        .model("@cf/baai/bge-m3")
        .rank(
            query="story about Cloudflare", contexts=[bge_m3.Context(text="orange cloud"), bge_m3.Context(text="llama")]
        )
    )
    assert type(out) is bge_m3.QueryOutput
    assert [(r.id, r.score) for r in out.response] == [(0, 0.73), (1, 0.64)]  # type: ignore[union-attr]
    assert server.requests[0].json() == {
        "contexts": [{"text": "orange cloud"}, {"text": "llama"}],
        "query": "story about Cloudflare",
    }


def test_rank_sends_a_given_value_even_the_default_and_nothing_when_left_out(server: ScriptedServer) -> None:
    server.script(ok({"response": []}))
    handle = client(server).model("@cf/baai/bge-m3")
    handle.rank(query="q", contexts=[bge_m3.Context(text="x")], truncate_inputs=False)
    handle.rank(query="q", contexts=[bge_m3.Context(text="x")], truncate_inputs=True)
    handle.rank(query="q", contexts=[bge_m3.Context(text="x")])
    assert server.requests[0].json() == {"query": "q", "contexts": [{"text": "x"}], "truncate_inputs": False}
    assert server.requests[1].json() == {"query": "q", "contexts": [{"text": "x"}], "truncate_inputs": True}
    assert server.requests[2].json() == {"query": "q", "contexts": [{"text": "x"}]}


def test_embed_contexts_without_a_query_returns_context_embeddings(server: ScriptedServer) -> None:
    server.script(ok({"response": [[0.1, 0.2]], "shape": [1, 2], "pooling": "cls"}))
    out = client(server).model("@cf/baai/bge-m3").embed_contexts(contexts=[bge_m3.Context(text="x")])
    assert type(out) is bge_m3.EmbeddingForContextsOutput
    assert out.response == [[0.1, 0.2]]
    assert server.requests[0].json() == {"contexts": [{"text": "x"}]}


@pytest.mark.parametrize(
    ("result", "variant"),
    [
        ({"response": [{"id": 0, "score": 0.5}]}, bge_m3.QueryOutput),
        ({"response": [[0.1, 0.2]], "shape": [1, 2], "pooling": "cls"}, bge_m3.EmbeddingForContextsOutput),
        (EMBED, bge_m3.EmbeddingOutput),
        ({"request_id": "768f15b7-4fd6-4498-906e-ad94ffc7f8d2"}, bge_m3.AsyncResponse),
        # A field the API may add later does not change the pick or break decoding.
        ({**EMBED, "new_field": {"x": 1}}, bge_m3.EmbeddingOutput),
    ],
)
def test_generic_run_decodes_every_bge_m3_output_variant(
    server: ScriptedServer, result: dict[str, object], variant: type
) -> None:
    server.script(ok(result))
    out = client(server).run("@cf/baai/bge-m3", {"text": "hello"})
    assert type(out) is variant


def test_run_with_mapping_sends_mapping_as_is(server: ScriptedServer) -> None:
    server.script(ok(EMBED))
    client(server).run("@cf/baai/bge-m3", {"text": ["a"], "truncate_inputs": True})
    assert server.requests[0].body == b'{"text":["a"],"truncate_inputs":true}'


def test_batch_method_queues_with_query_flag(server: ScriptedServer) -> None:
    queued = {"status": "queued", "request_id": "rid-1", "model": "@cf/baai/bge-m3"}
    server.script(ok(queued))
    job = (
        client(server)
        .model("@cf/baai/bge-m3")
        .batch(
            [
                bge_m3.EmbeddingInput(text=["a"]),
                bge_m3.QueryAndContextsInput(query="q", contexts=[bge_m3.Context(text="c")]),
            ]
        )
    )
    assert job.request_id == "rid-1"
    (req,) = server.requests
    assert req.target == f"/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-m3?queueRequest=true"
    assert req.json() == {"requests": [{"text": ["a"]}, {"contexts": [{"text": "c"}], "query": "q"}]}


def test_text_generation_prompt_and_messages(server: ScriptedServer) -> None:
    reply = {"response": "Hi there", "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    server.script(ok(reply))
    handle = client(server).model("@cf/meta/llama-3-8b-instruct")
    out = handle.generate(prompt="hello", max_tokens=16, temperature=0.2)
    assert type(out) is llama.TextGenerationOutput
    assert out.response == "Hi there"
    assert out.usage.total_tokens == 5  # type: ignore[union-attr]
    assert server.requests[0].json() == {"prompt": "hello", "max_tokens": 16, "temperature": 0.2}
    handle.chat(messages=[llama.Message(role="user", content="hi")])
    assert server.requests[1].json() == {"messages": [{"role": "user", "content": "hi"}]}


def test_binary_reply_comes_back_as_bytes_with_content_type(server: ScriptedServer) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    server.script(Reply(200, png, content_type="image/png"))
    out = client(server).model("@cf/stabilityai/stable-diffusion-xl-base-1.0").generate_image(prompt="a cat")
    assert isinstance(out, BinaryOutput)
    assert bytes(out) == png
    assert out.content_type == "image/png"


def test_raw_binary_input_is_sent_as_octet_stream(server: ScriptedServer, tmp_path: object) -> None:
    server.script(ok({"text": "hello world", "word_count": 2}))
    audio = b"ID3\x03\x00fake-mp3-bytes"
    out = client(server).model("@cf/openai/whisper").transcribe(audio)
    assert out.text == "hello world"
    (req,) = server.requests
    assert req.headers["content-type"] == "application/octet-stream"
    assert req.body == audio


def test_messages_envelope_field_is_reachable(server: ScriptedServer) -> None:
    server.script(
        Reply(
            200,
            msgspec.json.encode({"result": EMBED, "success": True, "errors": [], "messages": ["note"]}),
            {"cf-ray": "abc123-SJC"},
        )
    )
    ai = client(server)
    ai.model("@cf/baai/bge-m3").embed(text="a")
    assert ai.last_response is not None
    assert ai.last_response.messages == ["note"]
    assert ai.last_response.cf_ray == "abc123-SJC"


def test_unknown_model_returns_plain_dict(server: ScriptedServer) -> None:
    server.script(ok({"anything": [1, 2]}))
    out = client(server).run("@cf/someone/new-model", {"x": 1})
    assert out == {"anything": [1, 2]}
    assert server.requests[0].target.endswith("/ai/run/@cf/someone/new-model")


def test_gateway_url_form_routes_through_gateway_url_with_headers(server: ScriptedServer) -> None:
    server.script(ok(EMBED))
    gw = Gateway(
        id="my-gw",
        account_id="acc9",
        base_url=server.url + "/v1",
        cache_ttl=3600,
        skip_cache=True,
        metadata={"user": "u1", "n": 2},
        token="gw-token",
        url_form=True,
    )
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, gateway=gw)
    ai.model("@cf/baai/bge-m3").embed(text="a")
    (req,) = server.requests
    assert req.target == "/v1/acc9/my-gw/workers-ai/@cf/baai/bge-m3"
    assert req.headers["cf-aig-cache-ttl"] == "3600"
    assert req.headers["cf-aig-skip-cache"] == "true"
    assert msgspec.json.decode(req.headers["cf-aig-metadata"]) == {"user": "u1", "n": 2}
    assert req.headers["cf-aig-authorization"] == "Bearer gw-token"
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert "cf-aig-gateway-id" not in req.headers  # the URL names the gateway
    assert "gw-token" not in repr(gw) and TOKEN not in repr(ai)


def test_gateway_by_default_is_a_header_on_the_standard_host(server: ScriptedServer) -> None:
    server.script(ok(EMBED))
    gw = Gateway(id="my-gw", cache_ttl=60, collect_log=False, token="gw-token")
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.url + "/client/v4", gateway=gw)
    ai.model("@cf/baai/bge-m3").embed(text="a")
    (req,) = server.requests
    assert req.target == f"/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-m3"
    assert req.headers["cf-aig-gateway-id"] == "my-gw"
    assert req.headers["cf-aig-cache-ttl"] == "60"
    assert req.headers["cf-aig-collect-log"] == "false"
    assert req.headers["cf-aig-authorization"] == "Bearer gw-token"
    assert req.headers["authorization"] == f"Bearer {TOKEN}"


def test_gateway_of_another_account_needs_the_url_form() -> None:
    with pytest.raises(ConfigurationError, match="url_form=True"):
        WorkersAI(account_id=ACCOUNT, api_token=TOKEN, gateway="acc7/gw1")
    with pytest.raises(ConfigurationError, match="line break"):
        WorkersAI(account_id=ACCOUNT, api_token=TOKEN, gateway=Gateway(id="gw\r\nx: y"))


def test_gateway_short_form() -> None:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, gateway=f"{ACCOUNT}/gw1")
    assert (
        run_url(ai, "@cf/baai/bge-m3")
        == f"https://api.cloudflare.com/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-m3"
    )
    assert ai._base_headers["cf-aig-gateway-id"] == "gw1"  # pyright: ignore[reportPrivateUsage]
    old = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, gateway=Gateway(id="gw1", account_id="acc7", url_form=True))
    assert run_url(old, "@cf/baai/bge-m3") == "https://gateway.ai.cloudflare.com/v1/acc7/gw1/workers-ai/@cf/baai/bge-m3"
    assert old.openai_base_url == "https://gateway.ai.cloudflare.com/v1/acc7/gw1/workers-ai/v1"


def test_environment_configuration(monkeypatch: pytest.MonkeyPatch, server: ScriptedServer) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "e" * 32)
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", "env-token")
    monkeypatch.setenv("CLOUDFLARE_BASE_URL", server.base_url)
    server.script(ok(EMBED))
    WorkersAI().model("@cf/baai/bge-m3").embed(text="a")
    assert server.requests[0].target == f"/client/v4/accounts/{'e' * 32}/ai/run/@cf/baai/bge-m3"
    assert server.requests[0].headers["authorization"] == "Bearer env-token"


def test_keep_alive_reuses_one_connection(server: ScriptedServer) -> None:
    server.script(ok(EMBED))
    handle = client(server).model("@cf/baai/bge-m3")
    for _ in range(5):
        handle.embed(text="a")
    assert len(server.requests) == 5
    assert server.connections == 1
