"""Models whose REST input is a multipart/form-data body (FLUX.2: the form branch of their schema file, by
override): text fields as text parts, reference images as file parts, from the typed method, generic
``run`` and the async client; checked part by part on a server that records the request, and end to end
on the emulator (a PNG of the asked size)."""

from __future__ import annotations

import asyncio
import base64
import email.parser
import email.policy
import struct
from pathlib import Path

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.errors import InputValidationError, UnknownInputWarning
from workers_ai.testing import Emulator

from tests._server import ScriptedServer, ok

ACCOUNT = "0123456789abcdef0123456789abcdef"
FLUX2 = [
    "@cf/black-forest-labs/flux-2-dev",
    "@cf/black-forest-labs/flux-2-klein-4b",
    "@cf/black-forest-labs/flux-2-klein-9b",
]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(32))


def _parts(content_type: str, body: bytes) -> dict[str, tuple[str | None, str, bytes]]:
    """``{name: (file name, content type, bytes)}`` of a multipart body, read by the standard library."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    assert message.is_multipart()
    out: dict[str, tuple[str | None, str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        assert isinstance(name, str) and isinstance(payload, bytes)
        out[name] = (part.get_filename(), part.get_content_type(), payload)
    return out


def _client(server: ScriptedServer) -> WorkersAI:
    return WorkersAI(account_id=ACCOUNT, api_token="tok", base_url=server.base_url, max_retries=0)


def test_the_typed_method_sends_a_form_with_text_and_file_parts(server: ScriptedServer, tmp_path: Path) -> None:
    server.script(ok({"image": base64.b64encode(PNG).decode()}))
    ref = tmp_path / "ref.jpg"
    ref.write_bytes(JPEG)
    out = _client(server).model(FLUX2[0]).generate_image(prompt="a lighthouse", width=512, steps=20, input_image_0=ref)
    assert out.data == PNG
    (req,) = server.requests
    assert req.path == f"/client/v4/accounts/{ACCOUNT}/ai/run/{FLUX2[0]}" and req.query == ""
    content_type = req.headers["content-type"]
    assert content_type.startswith("multipart/form-data; boundary=")
    parts = _parts(content_type, req.body)
    assert sorted(parts) == ["input_image_0", "prompt", "steps", "width"]  # unset fields are not sent
    assert parts["prompt"][2] == b"a lighthouse" and parts["prompt"][0] is None
    assert parts["width"][2] == b"512" and parts["steps"][2] == b"20"
    assert parts["input_image_0"] == ("input_image_0", "image/jpeg", JPEG)


def test_generic_run_sends_the_same_form(server: ScriptedServer) -> None:
    server.script(ok({"image": base64.b64encode(PNG).decode()}))
    _client(server).run(FLUX2[1], {"prompt": "a cat", "height": 256})
    (req,) = server.requests
    parts = _parts(req.headers["content-type"], req.body)
    assert {k: v[2] for k, v in parts.items()} == {"prompt": b"a cat", "height": b"256"}


def test_a_bad_form_is_refused_before_anything_is_sent(server: ScriptedServer) -> None:
    with pytest.raises(InputValidationError, match=r"flux-2-dev.*\$\.prompt"):
        _client(server).model(FLUX2[0]).generate_image(prompt="")
    assert server.requests == []


def test_the_async_client_sends_the_same_form(server: ScriptedServer) -> None:
    server.script(ok({"image": base64.b64encode(PNG).decode()}))

    async def main() -> bytes:
        async with AsyncWorkersAI(account_id=ACCOUNT, api_token="tok", base_url=server.base_url) as ai:
            return (await ai.model(FLUX2[2]).generate_image(prompt="dunes", input_image_1=PNG)).data

    assert asyncio.run(main()) == PNG
    (req,) = server.requests
    parts = _parts(req.headers["content-type"], req.body)
    assert parts["prompt"][2] == b"dunes" and parts["input_image_1"] == ("input_image_1", "image/png", PNG)


@pytest.mark.parametrize("model", FLUX2)
def test_every_flux_2_model_draws_on_the_emulator(model: str) -> None:
    with Emulator() as emu, emu.client() as ai:
        img = ai.model(model).generate_image(prompt="a lighthouse", width=320, height=256)
        assert img.data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", img.data[16:24]) == (320, 256)
        assert emu.requests[-1].headers["content-type"].startswith("multipart/form-data; boundary=")


@pytest.mark.parametrize("aio", [False, True])
def test_generic_run_sends_every_key_it_is_given(server: ScriptedServer, aio: bool) -> None:
    # A key the form does not declare is a text part of its own (with a warning, as run() warns on any
    # model); the binding's JSON form goes out as given, nested keys and all.
    server.script(ok({"image": base64.b64encode(PNG).decode()}))
    form = {"prompt": "a lighthouse", "guidance": 3.5, "input_image_0": base64.b64encode(JPEG).decode()}
    binding = {"multipart": {"body": {"prompt": "x", "seed": 1}, "contentType": "multipart/form-data"}, "x": [1]}

    async def run_async() -> None:
        async with AsyncWorkersAI(account_id=ACCOUNT, api_token="tok", base_url=server.base_url) as ai:
            await ai.run(FLUX2[1], form)
            await ai.run(FLUX2[1], binding)

    with pytest.warns(UnknownInputWarning) as seen:
        if aio:
            asyncio.run(run_async())
        else:
            _client(server).run(FLUX2[1], form)
            _client(server).run(FLUX2[1], binding)
    assert sorted(str(w.message).split(" at ")[1].split(":")[0] for w in seen) == ["$.guidance", "$.x"]
    first, second = server.requests
    parts = _parts(first.headers["content-type"], first.body)
    assert parts["guidance"][2] == b"3.5" and parts["prompt"][2] == b"a lighthouse"
    assert parts["input_image_0"][0] == "input_image_0" and parts["input_image_0"][2] == JPEG
    assert second.headers["content-type"] == "application/json" and second.json() == binding


def test_the_emulator_reads_part_names_as_the_sdk_writes_them() -> None:
    # The HTML standard's encoding (urllib3's): UTF-8, `"`, CR and LF as %22, %0D, %0A, a backslash as itself.
    # The emulator read names as MIME quoted strings in ASCII, so `\` came back as `"` and `é` as surrogates.
    from workers_ai._core.form import encode_form
    from workers_ai.testing._multipart import parse_form

    names = ['a"b', "back\\slash", "line\r\nbreak", "plain", "caf\u00e9 \x80"]
    body, content_type = encode_form([*((n, "v") for n in names), ("img", ('x"y\\.png', PNG, "image/png"))])
    read = [(p.name, p.filename, p.data) for p in parse_form(content_type, body)]
    assert read == [*((n, None, b"v") for n in names), ("img", 'x"y\\.png', PNG)]
