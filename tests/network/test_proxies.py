"""Proxies and CAs on every connection (issue 26), sync and async, against a host only the proxy can reach.

The client is pointed at ``https://api.example.invalid``: that name does not resolve here, so a call
that works went through the proxy, and a proxy that sees no bearer token proves the token stayed in the
CONNECT tunnel. The front's certificate is signed by a CA made for the test: trusted only when told.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.errors import APIConnectionError, ConfigurationError
from workers_ai.testing import Emulator

from tests.network._net import HOST, Proxy, Socks5, TLSFront, dead_port
from tests.network.conftest import BASE, PKI

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
BGE = "@cf/baai/bge-m3"
HELLO = [{"role": "user", "content": "hello"}]


def sync_client(emu: Emulator, **options: Any) -> WorkersAI:
    options.setdefault("base_url", BASE)
    options.setdefault("max_retries", 0)
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, **options)


def async_client(emu: Emulator, **options: Any) -> AsyncWorkersAI:
    options.setdefault("base_url", BASE)
    options.setdefault("max_retries", 0)
    return AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, **options)


LORA = "@cf/mistral/mistral-7b-instruct-v0.2-lora"


def adapter_files() -> tuple[Path, Path]:
    """A tiny LoRA adapter (the emulator checks the config's fields, not the weights)."""
    import tempfile

    folder = Path(tempfile.mkdtemp())
    weights, config = folder / "adapter_model.safetensors", folder / "adapter_config.json"
    weights.write_bytes(bytes(range(256)) * 4)
    config.write_text('{"r": 8, "lora_alpha": 16, "peft_type": "LORA", "model_type": "mistral"}')
    return weights, config


def every_route_sync(ai: WorkersAI) -> dict[str, Any]:
    """One call of each kind: a call, a stream, a batch submitted and polled, uploads (to_markdown, a
    fine-tune's assets), the universal route and an account listing."""
    ai._sleep = lambda _s: None  # pyright: ignore[reportPrivateUsage]  # batch polls without waiting
    out: dict[str, Any] = {}
    out["chat"] = ai.model(LLAMA).chat(messages=HELLO)
    out["stream"] = ai.model(LLAMA).chat_stream(messages=HELLO).text()
    job = ai.model(BGE).submit_batch({"requests": [{"text": ["x"]}, {"text": ["y"]}]})
    out["batch"] = job.wait(poll_interval=0.0)
    out["upload"] = ai.to_markdown([("a.html", b"<h1>Title</h1><p>text</p>")])
    out["universal"] = ai.run("openai/gpt-4.1-mini", {"messages": HELLO})
    weights, config = adapter_files()
    tune = ai.finetunes.create(LORA, "proxied-sync")
    ai.finetunes.upload(tune, adapter_model=weights, adapter_config=config)
    out["finetunes"] = ai.finetunes.list()
    return out


async def every_route_async(ai: AsyncWorkersAI) -> dict[str, Any]:
    async def no_wait(_s: float) -> None:
        await asyncio.sleep(0)

    ai._sleep_async = no_wait  # pyright: ignore[reportPrivateUsage]
    out: dict[str, Any] = {}
    out["chat"] = await ai.model(LLAMA).chat(messages=HELLO)
    async with ai.model(LLAMA).chat_stream(messages=HELLO) as events:
        out["stream"] = await events.text()
    job = await ai.model(BGE).submit_batch({"requests": [{"text": ["x"]}, {"text": ["y"]}]})
    out["batch"] = await job.wait(poll_interval=0.0)
    out["upload"] = await ai.to_markdown([("a.html", b"<h1>Title</h1><p>text</p>")])
    out["universal"] = await ai.run("openai/gpt-4.1-mini", {"messages": HELLO})
    weights, config = adapter_files()
    tune = await ai.finetunes.create(LORA, "proxied-async")
    await ai.finetunes.upload(tune, adapter_model=weights, adapter_config=config)
    out["finetunes"] = await ai.finetunes.list()
    return out


def check_routes(out: dict[str, Any], proxy: Proxy, emu: Emulator) -> None:
    assert out["chat"] is not None and isinstance(out["stream"], str) and out["stream"]
    assert len(out["batch"]) == 2
    assert out["upload"][0].data.startswith("# Title")
    assert out["finetunes"]
    # Every connection was a tunnel to the API host; the proxy never saw the token.
    assert proxy.tunnels and set(proxy.tunnels) == {f"{HOST}:443"}
    assert emu.api_token.encode() not in proxy.clear_text
    assert b"Authorization: Bearer" not in proxy.clear_text


# ---------------------------------------------------------------------- every route, both clients


def test_sync_every_route_through_the_environment_proxy(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    with sync_client(emu, verify=pki.ca_file) as ai:
        check_routes(every_route_sync(ai), proxy, emu)


def test_async_every_route_through_the_environment_proxy(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("https_proxy", proxy.url)  # lower case works too

    async def main() -> dict[str, Any]:
        async with async_client(emu, verify=str(pki.ca_file)) as ai:
            return await every_route_async(ai)

    check_routes(asyncio.run(main()), proxy, emu)


def test_gateway_route_goes_through_the_proxy(emu: Emulator, proxy: Proxy, pki: PKI) -> None:
    from workers_ai import Gateway

    gateway = Gateway("my-gw", base_url=f"https://{HOST}/v1", url_form=True)
    with sync_client(emu, proxy=proxy.url, verify=pki.ca_file, gateway=gateway) as ai:
        ai.model(BGE).embed(text=["a"])
    assert emu.requests[-1].path.startswith("/v1/")
    assert set(proxy.tunnels) == {f"{HOST}:443"}


# ---------------------------------------------------------------------- which proxy, when


def test_explicit_proxy_wins_over_the_environment(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{dead_port()}")
    with sync_client(emu, proxy=proxy.url, verify=pki.ca_file) as ai:
        assert ai.model(BGE).embed(text=["a"]) is not None
    assert proxy.tunnels == [f"{HOST}:443"]


@pytest.mark.parametrize("use_async", [False, True])
def test_trust_env_false_ignores_the_proxy_variables(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    with pytest.raises(APIConnectionError) as caught:
        if use_async:
            asyncio.run(_embed_async(async_client(emu, verify=pki.ca_file, trust_env=False)))
        else:
            sync_client(emu, verify=pki.ca_file, trust_env=False).model(BGE).embed(text=["a"])
    assert HOST in str(caught.value)  # a direct attempt: the name does not resolve here
    assert proxy.tunnels == [] and proxy.seen == []


async def _embed_async(ai: AsyncWorkersAI) -> Any:
    async with ai:
        return await ai.model(BGE).embed(text=["a"])


@pytest.mark.parametrize(
    "no_proxy", ["example.invalid", ".example.invalid", f"{HOST}:443", "*", "other.org, api.example.invalid"]
)
@pytest.mark.parametrize("use_async", [False, True])
def test_no_proxy_sends_matching_hosts_directly(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch, no_proxy: str, use_async: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with pytest.raises(APIConnectionError):
        if use_async:
            asyncio.run(_embed_async(async_client(emu, verify=pki.ca_file)))
        else:
            sync_client(emu, verify=pki.ca_file).model(BGE).embed(text=["a"])
    assert proxy.seen == []


def test_no_proxy_that_does_not_match_keeps_the_proxy(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("no_proxy", "xample.invalid,10.0.0.0/8,api.example.invalid:8443")
    with sync_client(emu, verify=pki.ca_file) as ai:
        ai.model(BGE).embed(text=["a"])
    assert proxy.tunnels == [f"{HOST}:443"]


@pytest.mark.parametrize("use_async", [False, True])
def test_loopback_never_goes_to_an_environment_proxy(
    emu: Emulator, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    dead = f"http://127.0.0.1:{dead_port()}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead)
    for base in (emu.base_url, emu.base_url.replace("127.0.0.1", "localhost")):
        if use_async:
            assert asyncio.run(_embed_async(emu.async_client(base_url=base))) is not None
        else:
            with emu.client(base_url=base) as ai:
                assert ai.model(BGE).embed(text=["a"]) is not None


@pytest.mark.parametrize("use_async", [False, True])
def test_explicit_proxy_also_carries_loopback_http(emu: Emulator, use_async: bool) -> None:
    """proxy= is every connection's, local ones too; an http:// target is forwarded in absolute form."""
    with Proxy() as fwd:
        if use_async:
            asyncio.run(_embed_async(emu.async_client(proxy=fwd.url)))
        else:
            with emu.client(proxy=fwd.url) as ai:
                ai.model(BGE).embed(text=["a"])
        assert fwd.clear_text.startswith(f"POST {emu.base_url}/accounts/".encode())


# ---------------------------------------------------------------------- credentials and failures


@pytest.mark.parametrize("use_async", [False, True])
def test_proxy_credentials_go_only_in_proxy_authorization(
    emu: Emulator, front: TLSFront, pki: PKI, use_async: bool
) -> None:
    with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}, auth="alice:s3cr%t!") as authed:
        url = authed.url_with("alice", "s3cr%25t!")  # percent-encoded in the URL
        if use_async:
            asyncio.run(_embed_async(async_client(emu, proxy=url, verify=pki.ca_file)))
        else:
            with sync_client(emu, proxy=url, verify=pki.ca_file) as ai:
                ai.model(BGE).embed(text=["a"])
                assert "s3cr" not in repr(ai._constructor_kwargs())  # pyright: ignore[reportPrivateUsage]
        assert authed.refused == 0 and authed.tunnels == [f"{HOST}:443"]
        assert b"Proxy-Authorization: Basic " in authed.clear_text
        assert emu.api_token.encode() not in authed.clear_text


@pytest.mark.parametrize("use_async", [False, True])
def test_407_names_the_proxy_masks_the_password_and_is_not_retried(
    emu: Emulator, front: TLSFront, pki: PKI, use_async: bool
) -> None:
    with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}, auth="alice:right") as authed:
        url = authed.url_with("alice", "wrongpass")
        with pytest.raises(APIConnectionError) as caught:
            if use_async:
                asyncio.run(_embed_async(async_client(emu, proxy=url, verify=pki.ca_file, max_retries=2)))
            else:
                sync_client(emu, proxy=url, verify=pki.ca_file, max_retries=2).model(BGE).embed(text=["a"])
        message = str(caught.value)
        assert f"proxy http://alice:***@127.0.0.1:{authed.port}" in message and "407" in message
        assert "wrongpass" not in message and "wrongpass" not in repr(caught.value)
        assert caught.value.request_sent is False
        assert authed.refused == 1  # the same credentials are not tried again


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize(
    ("answer", "tries"),
    [("403 Forbidden", 1), ("502 Bad Gateway: upstream said 407 403", 3), ("503 Busy", 3)],
)
def test_a_refused_tunnel_names_the_proxy_and_only_403_and_407_are_final(
    emu: Emulator, pki: PKI, use_async: bool, answer: str, tries: int
) -> None:
    """The status decides, not the words after it: a 502 whose phrase says 407 is retried."""
    with Proxy(refuse=answer) as refusing:
        url = refusing.url_with("frank", "pw1")
        with pytest.raises(APIConnectionError) as caught:
            if use_async:
                asyncio.run(_embed_async(async_client(emu, proxy=url, verify=pki.ca_file, max_retries=2)))
            else:
                sync_client(emu, proxy=url, verify=pki.ca_file, max_retries=2).model(BGE).embed(text=["a"])
        message = str(caught.value)
        assert f"the proxy http://frank:***@127.0.0.1:{refusing.port} refused the tunnel" in message, message
        assert answer.split()[0] in message and "pw1" not in message
        assert "check the user and password" not in message
        assert caught.value.request_sent is False and caught.value.retryable is (tries > 1)
        assert refusing.refused == tries


@pytest.mark.parametrize("use_async", [False, True])
def test_a_dead_proxy_is_named(emu: Emulator, pki: PKI, use_async: bool) -> None:
    url = f"http://bob:hunter2@127.0.0.1:{dead_port()}"
    with pytest.raises(APIConnectionError) as caught:
        if use_async:
            asyncio.run(_embed_async(async_client(emu, proxy=url, verify=pki.ca_file)))
        else:
            sync_client(emu, proxy=url, verify=pki.ca_file).model(BGE).embed(text=["a"])
    message = str(caught.value)
    assert "cannot connect to the proxy http://bob:***@127.0.0.1:" in message, message
    assert "hunter2" not in message and caught.value.request_sent is False


@pytest.mark.parametrize("use_async", [False, True])
def test_untrusted_certificate_names_the_host_and_the_fix_and_sends_nothing(
    emu: Emulator, proxy: Proxy, front: TLSFront, use_async: bool
) -> None:
    before, received = len(emu.requests), front.received
    with pytest.raises(APIConnectionError) as caught:
        if use_async:
            asyncio.run(_embed_async(async_client(emu, proxy=proxy.url)))
        else:
            sync_client(emu, proxy=proxy.url).model(BGE).embed(text=["a"])
    message = str(caught.value)
    assert f"the TLS certificate of {HOST} is not trusted" in message, message
    assert "verify=" in message and "SSL_CERT_FILE" in message
    assert caught.value.request_sent is False and caught.value.retryable is False
    assert len(emu.requests) == before and front.received == received  # not one byte of the request


def test_ssl_cert_file_is_read_with_trust_env_only(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca_file))
    with sync_client(emu, proxy=proxy.url) as ai:
        assert ai.model(BGE).embed(text=["a"]) is not None
    with pytest.raises(APIConnectionError, match="not trusted"):
        sync_client(emu, proxy=proxy.url, trust_env=False).model(BGE).embed(text=["a"])
    assert asyncio.run(_embed_async(async_client(emu, proxy=proxy.url))) is not None


def test_a_ca_directory_and_an_ssl_context(emu: Emulator, proxy: Proxy, pki: PKI, tmp_path: Path) -> None:
    folder = tmp_path / "certs"
    folder.mkdir()
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(pki.ca_file)], capture_output=True, text=True, check=True
    ).stdout.strip()
    (folder / f"{subject_hash}.0").write_bytes(pki.ca_file.read_bytes())
    with sync_client(emu, proxy=proxy.url, verify=folder) as ai:
        ai.model(BGE).embed(text=["a"])
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    with sync_client(emu, proxy=proxy.url, verify=context) as ai:
        ai.model(BGE).embed(text=["a"])
    assert asyncio.run(_embed_async(async_client(emu, proxy=proxy.url, verify=context))) is not None


# ---------------------------------------------------------------------- refused at construction


@pytest.mark.parametrize(
    ("proxy", "says"),
    [
        ("127.0.0.1:3128", "no scheme"),
        ("ftp://proxy:21", "scheme 'ftp'"),
        ("http://", "names no host"),
        ("http://proxy:99999", "not valid"),
        ("http://user:pw@proxy:3128/path", "path"),
        ("http://pro xy:3128", "spaces"),
    ],
)
def test_malformed_proxy_urls_are_refused_at_construction(emu: Emulator, proxy: str, says: str) -> None:
    for make in (sync_client, async_client):
        with pytest.raises(ConfigurationError, match=says) as caught:
            make(emu, proxy=proxy)
        assert "pw@" not in str(caught.value)


def test_a_malformed_environment_proxy_names_the_variable(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "gopher://u:topsecret@proxy")
    with pytest.raises(ConfigurationError, match="HTTPS_PROXY") as caught:
        sync_client(emu)
    assert "topsecret" not in str(caught.value)
    sync_client(emu, trust_env=False)  # not read at all


def test_verification_cannot_be_turned_off(emu: Emulator, tmp_path: Path) -> None:
    for make in (sync_client, async_client):
        with pytest.raises(ConfigurationError, match="cannot be turned off"):
            make(emu, verify=False)
        with pytest.raises(ConfigurationError, match="no such CA bundle"):
            make(emu, verify=tmp_path / "missing.pem")
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(ConfigurationError, match="cannot load the CA"):
        sync_client(emu, verify=tmp_path / "junk.pem")


def test_socks_where_the_library_has_it(emu: Emulator, front: TLSFront, pki: PKI) -> None:
    """socks5h through PySocks (sync): the proxy resolves the name only it knows, with a login;
    aiohttp has no SOCKS, so the async client refuses it at construction."""
    with pytest.raises(ConfigurationError, match="aiohttp has no SOCKS support"):
        async_client(emu, proxy="socks5h://127.0.0.1:1080")
    pytest.importorskip("socks", reason="PySocks (the dev extra installs it)")
    socks = Socks5({f"{HOST}:443": ("127.0.0.1", front.port)}, auth=("frank", "s0cks"))
    try:
        with sync_client(emu, proxy=f"socks5h://frank:s0cks@127.0.0.1:{socks.port}", verify=pki.ca_file) as ai:
            assert ai.model(BGE).embed(text=["a"]) is not None
        assert socks.targets == [f"{HOST}:443"] and socks.logins == [("frank", "s0cks")]
        with pytest.raises(APIConnectionError, match=r"proxy socks5h://frank:\*\*\*@127") as caught:
            sync_client(emu, proxy=f"socks5h://frank:nope@127.0.0.1:{socks.port}", verify=pki.ca_file).model(BGE).embed(
                text=["a"]
            )
        assert "nope" not in str(caught.value)
    finally:
        socks.close()


def test_socks_without_pysocks_says_what_to_install(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from workers_ai._sync import connections

    real_import = builtins.__import__

    def no_pysocks(name: str, *args: Any, **kwargs: Any) -> Any:
        if name in ("socks", "urllib3.contrib.socks") or (name == "urllib3.contrib" and "socks" in (args[2] or ())):
            raise ImportError("no PySocks")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(connections, "_SOCKS_POOLS", {})
    monkeypatch.setattr(builtins, "__import__", no_pysocks)
    with pytest.raises(ConfigurationError, match=r"pip install 'urllib3\[socks\]'"):
        sync_client(emu, proxy="socks5h://127.0.0.1:1080")


def test_a_custom_transport_refuses_proxy_and_verify(emu: Emulator, pki: PKI) -> None:
    from workers_ai._sync.transport import Urllib3Transport

    with pytest.raises(ConfigurationError, match="custom transport"):
        sync_client(emu, transport=Urllib3Transport(), proxy="http://proxy:3128")


# ---------------------------------------------------------------------- pickling, Ray, the CLI


def test_pickled_client_keeps_proxy_and_ca_path_and_refuses_an_ssl_context(
    emu: Emulator, front: TLSFront, pki: PKI
) -> None:
    with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}, auth="alice:pa55") as authed:
        ai = sync_client(emu, proxy=authed.url_with("alice", "pa55"), verify=pki.ca_file)
        copy = pickle.loads(pickle.dumps(ai))
        copy.model(BGE).embed(text=["a"])
        assert authed.tunnels == [f"{HOST}:443"]
        twin = ai.with_options(timeout=5)
        assert twin.options.proxy == ai.options.proxy
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    held = sync_client(emu, verify=context)
    with pytest.raises(TypeError, match=r"verify='/path/to/ca.pem'"):
        pickle.dumps(held)
    assert held.with_options(timeout=5).options.verify is context  # in-process copies keep the context


def test_the_cli_goes_through_the_environment(emu: Emulator, proxy: Proxy, pki: PKI) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")},
        "CLOUDFLARE_ACCOUNT_ID": emu.account_id,
        "CLOUDFLARE_API_TOKEN": emu.api_token,
        "CLOUDFLARE_BASE_URL": BASE,
        "HTTPS_PROXY": proxy.url,
        "SSL_CERT_FILE": str(pki.ca_file),
    }
    code = "import sys; from workers_ai._cli.main import main; sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", LLAMA, "prompt=hello"],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.strip()
    assert proxy.tunnels == [f"{HOST}:443"]
    assert emu.api_token.encode() not in proxy.clear_text


@pytest.mark.parametrize("use_async", [False, True])
def test_an_https_proxy_is_checked_against_the_same_cas(emu: Emulator, proxy: Proxy, pki: PKI, use_async: bool) -> None:
    """TLS to the proxy, then TLS to the API inside the tunnel (TLS in TLS)."""
    tls_proxy = TLSFront(("127.0.0.1", proxy.port), pki.chain, pki.key)  # the proxy behind TLS for 127.0.0.1
    try:
        url = f"https://127.0.0.1:{tls_proxy.port}"
        if use_async:
            assert asyncio.run(_embed_async(async_client(emu, proxy=url, verify=pki.ca_file))) is not None
        else:
            with sync_client(emu, proxy=url, verify=pki.ca_file) as ai:
                assert ai.model(BGE).embed(text=["a"]) is not None
        assert proxy.tunnels == [f"{HOST}:443"]
        assert emu.api_token.encode() not in proxy.clear_text
    finally:
        tls_proxy.close()
