"""``workers-ai`` as a new user runs it (issue 14, item 7): each case is a subprocess against the emulator."""

from __future__ import annotations

import base64
import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from workers_ai.testing import Emulator

SDXL = "@cf/stabilityai/stable-diffusion-xl-base-1.0"
LLAMA = "@cf/meta/llama-3-8b-instruct"
CLI = [sys.executable, "-c", "import sys; from workers_ai._cli.main import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0)) as e:
        yield e


def env_for(emu: Emulator) -> dict[str, str]:
    return dict(
        os.environ,
        CLOUDFLARE_ACCOUNT_ID=emu.account_id,
        CLOUDFLARE_API_TOKEN=emu.api_token,
        CLOUDFLARE_BASE_URL=emu.base_url,
    )


def cli(emu: Emulator, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, env=env_for(emu), timeout=120, check=False)


def body_of_last(emu: Emulator, model: str) -> bytes:
    return [r for r in emu.requests if r.model == model][-1].body


def test_binary_reply_to_a_file_byte_exact_and_to_a_pipe(emu: Emulator, tmp_path: Path) -> None:
    expected = bytes(emu.client().model(SDXL).generate_image(prompt="a cat", num_steps=4))
    out = tmp_path / "cat.png"
    done = cli(emu, "run", SDXL, "prompt=a cat", "num_steps=4", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == expected and expected.startswith(b"\x89PNG")
    assert f"wrote {len(expected)} bytes of image/png" in done.stderr.decode()
    piped = cli(emu, "run", SDXL, "--json", '{"prompt": "a cat", "num_steps": 4}')
    assert piped.returncode == 0 and piped.stdout == expected


def test_binary_reply_is_refused_on_a_terminal_before_sending(emu: Emulator) -> None:
    sent = len(emu.requests)
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [*CLI, "run", SDXL, "prompt=a cat"],
            stdout=follower,
            stderr=subprocess.PIPE,
            env=env_for(emu),
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while select.select([leader], [], [], 0.2)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert "stdout is a terminal" in message and "-o out.png" in message and "image/png" in message
    assert shown == b"" and len(emu.requests) == sent  # nothing written to the terminal, nothing sent


def test_json_from_stdin_with_stream_inside_and_from_a_file(emu: Emulator, tmp_path: Path) -> None:
    streamed = cli(emu, "run", LLAMA, "--json", "-", stdin=b'{"prompt": "tell me about llamas", "stream": true}')
    assert streamed.returncode == 0, streamed.stderr
    with emu.client().model(LLAMA).generate_stream(prompt="tell me about llamas") as events:
        expected = "".join(e.text for e in events)
    assert streamed.stdout.decode() == expected + "\n" and expected
    assert msgspec.json.decode(body_of_last(emu, LLAMA))["stream"] is True
    payload = tmp_path / "in.json"
    payload.write_bytes(b'{"prompt": "hello from a file", "max_tokens": 12}')
    from_file = cli(emu, "run", LLAMA, "--json", f"@{payload}")
    assert from_file.returncode == 0, from_file.stderr
    assert "hello from a file" in msgspec.json.decode(from_file.stdout)["response"]
    bad = cli(emu, "run", LLAMA, "--json", "-", stdin=b"{not json")
    assert bad.returncode == 2 and b"stdin is not valid JSON" in bad.stderr


def test_key_value_pairs_are_typed_by_the_schema(emu: Emulator) -> None:
    done = cli(emu, "run", LLAMA, "prompt=hi there", "max_tokens=20", "temperature=0.5", "raw=true", "seed:=7")
    assert done.returncode == 0, done.stderr
    assert msgspec.json.decode(body_of_last(emu, LLAMA)) == {
        "prompt": "hi there",
        "max_tokens": 20,
        "temperature": 0.5,
        "raw": True,
        "seed": 7,
    }
    sent = len(emu.requests)
    bad = cli(emu, "run", LLAMA, "prompt=x", "max_tokens=lots")
    assert bad.returncode == 2 and b"max_tokens takes an integer" in bad.stderr
    flag = cli(emu, "run", LLAMA, "prompt=x", "raw=maybe")
    assert flag.returncode == 2 and b"raw takes true or false" in flag.stderr
    assert len(emu.requests) == sent


def test_files_in_raw_body_base64_field_and_byte_array_field(emu: Emulator, tmp_path: Path) -> None:
    audio = tmp_path / "talk.wav"
    audio.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(200)))
    raw = cli(emu, "run", "@cf/openai/whisper", "--file", str(audio))
    assert raw.returncode == 0, raw.stderr
    record = [r for r in emu.requests if r.model == "@cf/openai/whisper"][-1]
    assert record.body == audio.read_bytes() and record.headers["content-type"] == "application/octet-stream"
    assert msgspec.json.decode(raw.stdout)["text"]
    turbo = cli(emu, "run", "@cf/openai/whisper-large-v3-turbo", "--file", str(audio), "language=en")
    assert turbo.returncode == 0, turbo.stderr
    sent = msgspec.json.decode(body_of_last(emu, "@cf/openai/whisper-large-v3-turbo"))
    assert base64.b64decode(sent["audio"]) == audio.read_bytes() and sent["language"] == "en"
    image = tmp_path / "in.png"
    image.write_bytes(bytes(emu.client().model(SDXL).generate_image(prompt="seed image", num_steps=1)))
    img2img = cli(emu, "run", SDXL, "prompt=a dog", f"image=@{image}", "strength=0.5", "-o", str(tmp_path / "o.png"))
    assert img2img.returncode == 0, img2img.stderr
    sent = msgspec.json.decode(body_of_last(emu, SDXL))
    assert bytes(sent["image"]) == image.read_bytes() and sent["strength"] == 0.5
    ambiguous = cli(emu, "run", SDXL, "prompt=a dog", "--file", str(image))
    assert ambiguous.returncode == 2 and b"image=@PATH, image_b64=@PATH, mask=@PATH" in ambiguous.stderr
    missing = cli(emu, "run", "@cf/openai/whisper", "--file", str(tmp_path / "nope.wav"))
    assert missing.returncode == 2 and b"nope.wav" in missing.stderr


def test_usage_line_on_stderr(emu: Emulator) -> None:
    done = cli(emu, "run", "@cf/meta/llama-3.3-70b-instruct-fp8-fast", "prompt=count the tokens")
    assert done.returncode == 0, done.stderr
    reply = msgspec.json.decode(done.stdout)
    usage = {k: int(v) for k, v in reply["usage"].items()}  # the schema types them as numbers: 7.0
    cost = (usage["prompt_tokens"] * 0.29 + usage["completion_tokens"] * 2.25) / 1e6
    line = done.stderr.decode().strip().splitlines()[-1]
    assert line == (
        f"workers-ai: usage: 1 call, {usage['total_tokens']} tokens "
        f"({usage['prompt_tokens']} in, {usage['completion_tokens']} out), ${cost:.6f}"
    )
    unknown = cli(emu, "run", LLAMA, "prompt=hi")
    assert unknown.stderr.splitlines()[-1].endswith(f"no published price for {LLAMA}".encode())


def test_embed_progress_plain_lines_off_a_terminal_and_a_bar_on_one(emu: Emulator, tmp_path: Path) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"text number {i}\n" for i in range(25)))
    out = tmp_path / "vectors.json"
    plain = cli(emu, "embed", "@cf/baai/bge-small-en-v1.5", "--texts", str(texts), "--batch-size", "10",
                "--poll-interval", "0", "-o", str(out))  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    vectors = [msgspec.json.decode(line) for line in out.read_bytes().splitlines()]  # one array per text
    assert len(vectors) == 25 and all(len(v) == 384 for v in vectors)
    lines = plain.stderr.decode().splitlines()
    assert lines[-2].startswith("progress: 25/25 texts  1/1 batches") and "\r" not in plain.stderr.decode()
    assert "1 call, 3 batch items" in lines[-1]  # one batch of three 10-text requests
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [*CLI, "embed", "@cf/baai/bge-small-en-v1.5", "--texts", "-", "--poll-interval", "0"],
            input=b"a\nb\n",
            stdout=subprocess.PIPE,
            stderr=follower,
            env=env_for(emu),
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while select.select([leader], [], [], 0.2)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 2  # one JSON array per text
    assert b"\r[" + b"#" * 30 + b"] 2/2 texts" in shown
