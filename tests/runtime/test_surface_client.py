"""Issue 14, client side: toMarkdown, fine-tunes, the universal route, session affinity, the OpenAI base
URL. Wire bytes are checked at a scripted server; behaviour end to end against the emulator."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec
import openai
import pytest
from workers_ai import Finetune, MarkdownResult, WorkersAI, errors
from workers_ai._account.finetunes import MAX_ADAPTER_BYTES, MAX_RANK, AdapterError
from workers_ai.testing import Emulator

from tests._server import Request, ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN

LORA_MODEL = "@cf/mistral/mistral-7b-instruct-v0.2-lora"


def client(server: ScriptedServer, **kw: object) -> WorkersAI:
    return WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=0, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def boundary_of(req: Request) -> str:
    match = re.fullmatch(r"multipart/form-data; boundary=([0-9a-f]+)", req.headers["content-type"])
    assert match, req.headers["content-type"]
    return match.group(1)


def part(boundary: str, name: str, data: bytes, filename: str | None = None, content_type: str | None = None) -> bytes:
    """One form part as RFC 7578 frames it, written out here independently of the client."""
    disposition = f'Content-Disposition: form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    head = disposition + (f"\r\nContent-Type: {content_type}" if content_type else "")
    return f"--{boundary}\r\n{head}\r\n\r\n".encode() + data + b"\r\n"


# ---------------------------------------------------------------------------------------------- toMarkdown


def test_to_markdown_sends_each_file_as_a_files_part_byte_exact(server: ScriptedServer, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(b"<h1>Hi</h1>")
    server.script(
        ok(
            [
                {"name": "page.html", "mimeType": "text/html", "format": "markdown", "tokens": 2, "data": "# Hi"},
                {"name": "notes.csv", "mimeType": "text/csv", "format": "markdown", "tokens": 5, "data": "| a |"},
                {"name": "scan.pdf", "mimeType": "application/pdf", "format": "error", "tokens": 0, "error": "nope"},
            ]
        )
    )
    with io.BytesIO(b"a,b\n1,2\n") as csv_file:
        csv_file.name = "/somewhere/notes.csv"  # type: ignore[misc]
        results = client(server).to_markdown([page, csv_file, ("scan.pdf", b"%PDF-1.7\x00\xff")])
    (req,) = server.requests
    assert req.method == "POST" and req.target == f"/client/v4/accounts/{ACCOUNT}/ai/tomarkdown"
    b = boundary_of(req)
    expected = (
        part(b, "files", b"<h1>Hi</h1>", "page.html", "text/html")
        + part(b, "files", b"a,b\n1,2\n", "notes.csv", "text/csv")
        + part(b, "files", b"%PDF-1.7\x00\xff", "scan.pdf", "application/pdf")
        + f"--{b}--\r\n".encode()
    )
    assert req.body == expected
    assert req.headers["content-length"] == str(len(expected))
    assert [r.name for r in results] == ["page.html", "notes.csv", "scan.pdf"]
    assert results[0] == MarkdownResult(name="page.html", mime_type="text/html", tokens=2, data="# Hi")
    assert results[0].ok and results[1].ok and not results[2].ok and results[2].error == "nope"


def test_to_markdown_names_an_unreadable_file_and_sends_nothing(server: ScriptedServer, tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigurationError, match=r"missing\.html"):
        client(server).to_markdown([("ok.txt", b"x"), tmp_path / "missing.html"])
    with pytest.raises(errors.ConfigurationError, match="binary mode"), io.StringIO("text") as text_file:
        client(server).to_markdown([text_file])  # type: ignore[list-item]
    assert server.requests == []


def test_to_markdown_against_the_emulator(emu: Emulator) -> None:
    ai = emu.client()
    html = b"<h2>Menu</h2><ul><li>tea</li><li><a href='https://x.test'>cake</a></li></ul>"
    out = ai.to_markdown(
        [
            ("menu.html", html),
            ("prices.csv", b"item,price\ntea,2\n"),
            ("readme.txt", b"plain words"),
            ("a.png", b"\x89PNG"),
        ]
    )
    assert [r.ok for r in out] == [True, True, True, False]
    assert out[0].data == "## Menu\n\n- tea\n- [cake](https://x.test)" and out[0].mime_type == "text/html"
    assert out[1].data.splitlines()[0] == "| item | price |" and "| tea | 2 |" in out[1].data
    assert out[2].data == "plain words" and out[2].tokens == 2
    assert out[3].error is not None and "cannot convert image/png" in out[3].error and out[3].data == ""
    formats = ai.to_markdown_supported()
    assert {(f.extension, f.mime_type) for f in formats} >= {(".html", "text/html"), (".csv", "text/csv")}


# ---------------------------------------------------------------------------------------------- fine-tunes


def adapter(tmp_path: Path, *, rank: int = 8, model_type: str | None = "mistral", size: int = 64) -> tuple[Path, Path]:
    weights = tmp_path / "adapter_model.safetensors"
    weights.write_bytes(bytes(range(256)) * (size // 256) + b"\x00" * (size % 256))
    config = tmp_path / "adapter_config.json"
    data: dict[str, object] = {"r": rank, "lora_alpha": 16, "peft_type": "LORA"}
    if model_type is not None:
        data["model_type"] = model_type
    config.write_bytes(msgspec.json.encode(data))
    return weights, config


def test_finetune_upload_sends_two_forms_byte_exact(server: ScriptedServer, tmp_path: Path) -> None:
    weights, config = adapter(tmp_path, size=1000)
    record = {"id": "ft-1", "name": "mine", "model": LORA_MODEL}
    server.script(ok(record))
    client(server).finetunes.upload(Finetune(id="ft-1", name="mine"), adapter_model=weights, adapter_config=config)
    first, second = server.requests
    for req in (first, second):
        assert req.method == "POST" and req.target == f"/client/v4/accounts/{ACCOUNT}/ai/finetunes/ft-1/finetune-assets"
    for req, name, path, kind in (
        (first, "adapter_model.safetensors", weights, "application/octet-stream"),
        (second, "adapter_config.json", config, "application/json"),
    ):
        b = boundary_of(req)
        assert req.body == (
            part(b, "file_name", name.encode())
            + part(b, "file", path.read_bytes(), name, kind)
            + f"--{b}--\r\n".encode()
        )


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rank": MAX_RANK + 8}, f"rank r=16 is over the limit of {MAX_RANK}"),
        ({"model_type": "falcon"}, "model_type must be one of gemma, llama, mistral"),
        ({"model_type": None}, "model_type must be one of"),
    ],
)
def test_adapter_limits_are_checked_before_upload(
    server: ScriptedServer, tmp_path: Path, kw: dict[str, object], match: str
) -> None:
    weights, config = adapter(tmp_path, **kw)  # type: ignore[arg-type]
    with pytest.raises(AdapterError, match=match) as info:
        client(server).finetunes.upload("mine", adapter_model=weights, adapter_config=config)
    assert info.value.path == str(config) and isinstance(info.value, errors.WorkersAIError)
    assert server.requests == []


def test_adapter_size_limit_is_checked_before_upload(server: ScriptedServer, tmp_path: Path) -> None:
    weights, config = adapter(tmp_path)
    with open(weights, "r+b") as fh:  # sparse: the size without writing 100 MB
        fh.truncate(MAX_ADAPTER_BYTES)
    with pytest.raises(AdapterError, match="under 104857600 bytes") as info:
        client(server).finetunes.upload("mine", adapter_model=weights, adapter_config=config)
    assert info.value.path == str(weights) and server.requests == []
    os.truncate(weights, MAX_ADAPTER_BYTES - 1)
    server.script(ok({"id": "x", "name": "mine"}))
    with pytest.raises(AdapterError, match="cannot read it"):
        client(server).finetunes.upload("mine", adapter_model=tmp_path / "nope", adapter_config=config)
    assert server.requests == []


def test_finetunes_against_the_emulator(emu: Emulator, tmp_path: Path) -> None:
    emu.reset()
    ai = emu.client()
    created = ai.finetunes.create(LORA_MODEL, "sql-helper", description="ours")
    assert created.name == "sql-helper" and created.model == LORA_MODEL and created.description == "ours"
    assert [f.id for f in ai.finetunes.list()] == [created.id]
    handle = ai.model(LORA_MODEL)
    with pytest.raises(errors.LoraFilesMissingError) as missing:
        handle.generate(prompt="SELECT", lora="sql-helper")
    assert missing.value.status == 400 and missing.value.code == 3039
    weights, config = adapter(tmp_path)
    ai.finetunes.upload(created, adapter_model=weights, adapter_config=config)
    assert handle.generate(prompt="SELECT", lora="sql-helper").response
    with pytest.raises(errors.LoraUnsupportedError) as unsupported:
        ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "hi", "lora": "sql-helper"})
    assert unsupported.value.status == 405 and unsupported.value.code == 5005
    with pytest.raises(errors.LoraUnsupportedError):
        ai.finetunes.create("@cf/meta/llama-3-8b-instruct", "not-lora")
    public = ai.finetunes.public(limit=1)
    assert len(public) == 1 and public[0].public


# ---------------------------------------------------------------------------------------------- universal route


def test_third_party_ids_go_to_the_universal_route(server: ScriptedServer) -> None:
    server.script(
        ok({"object": "chat.completion", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    )
    ai = client(server, gateway="my-gw")
    out = ai.run("openai/gpt-4.1-mini", {"messages": [{"role": "user", "content": "hi"}]})
    (req,) = server.requests
    assert req.target == f"/client/v4/accounts/{ACCOUNT}/ai/run"
    assert req.json() == {"model": "openai/gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
    assert req.headers["cf-aig-gateway-id"] == "my-gw"
    assert out["object"] == "chat.completion"
    assert ai.usage.by_model["openai/gpt-4.1-mini"].total_tokens == 7
    with pytest.raises(errors.ConfigurationError, match="no async batch"):
        ai.run("openai/gpt-4.1-mini", {"requests": []}, queue_request=True)
    with pytest.raises(errors.InputValidationError, match="another model"):
        ai.run("openai/gpt-4.1-mini", {"model": "anthropic/claude", "messages": []})
    assert len(server.requests) == 1


def test_universal_route_against_the_emulator(emu: Emulator) -> None:
    ai = emu.client(max_retries=0)
    claude = ai.run("anthropic/claude-sonnet-4", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50})
    assert claude["type"] == "message" and claude["content"][0]["type"] == "text"
    with ai.run("openai/gpt-4.1-mini", {"messages": [{"role": "user", "content": "hi"}]}, stream=True) as events:
        text = "".join(e.text for e in events)
    assert text
    emu.inject("unfunded", times=1)
    with pytest.raises(errors.PaymentRequiredError) as info:
        ai.run("openai/gpt-4.1-mini", {"messages": [{"role": "user", "content": "hi"}]})
    assert info.value.status == 402 and info.value.code == 2021 and "openai/gpt-4.1-mini" in str(info.value)


# ---------------------------------------------------------------------------------------------- headers and SDKs


def test_session_affinity_as_client_and_call_option(server: ScriptedServer) -> None:
    server.script(ok({"response": "a", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}))
    ai = client(server, session_affinity="conv-1")
    ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "x"})
    ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "x"}, session_affinity="conv-2")
    client(server).run("@cf/meta/llama-3-8b-instruct", {"prompt": "x"})
    assert [r.headers.get("x-session-affinity") for r in server.requests] == ["conv-1", "conv-2", None]
    with pytest.raises(errors.ConfigurationError, match="session_affinity"):
        client(server, session_affinity="a\r\nb: c")
    with pytest.raises(errors.ConfigurationError, match="session_affinity"):
        ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "x"}, session_affinity="")
    assert len(server.requests) == 3


def test_openai_sdk_against_the_emulator_through_openai_base_url(emu: Emulator) -> None:
    ai = emu.client()
    assert ai.openai_base_url == f"{emu.base_url}/accounts/{emu.account_id}/ai/v1" == emu.openai_base_url
    oai = openai.OpenAI(base_url=ai.openai_base_url, api_key=emu.api_token, max_retries=0)
    model = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
    chat = oai.chat.completions.create(model=model, messages=[{"role": "user", "content": "hello there"}])
    assert chat.choices[0].message.content
    vectors = oai.embeddings.create(model="@cf/baai/bge-m3", input=["a llama", "a cloud"])
    ours = ai.model("@cf/baai/bge-m3").embed(text=["a llama", "a cloud"])
    assert len(vectors.data) == 2
    for theirs, mine in zip(vectors.data, ours.data, strict=True):
        assert theirs.embedding == pytest.approx(mine)
    stream = oai.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
