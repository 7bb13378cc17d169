"""Realtime WebSocket sessions take the client's proxy and CA (one rule with REST), sync and asyncio."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.errors import APIConnectionError
from workers_ai.testing import Emulator

from tests.network._net import HOST, Proxy, TLSFront, dead_port
from tests.network.conftest import BASE, PKI

NOVA = "@cf/deepgram/nova-3"
SECOND = bytes(32000)  # one second of 16 kHz 16-bit silence: the emulator's script answers anyway


def _sync(emu: Emulator, **options: Any) -> WorkersAI:
    options.setdefault("base_url", BASE)
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, **options)


def _async(emu: Emulator, **options: Any) -> AsyncWorkersAI:
    options.setdefault("base_url", BASE)
    return AsyncWorkersAI(account_id=emu.account_id, api_token=emu.api_token, **options)


def test_sync_session_through_the_environment_proxy(
    emu: Emulator, proxy: Proxy, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    with _sync(emu, verify=pki.ca_file).model(NOVA).listen(encoding="linear16", sample_rate=16000) as s:
        text = s.transcribe(SECOND).text
    assert text
    assert proxy.tunnels == [f"{HOST}:443"]
    assert emu.api_token.encode() not in proxy.clear_text


def test_async_session_through_an_explicit_proxy_with_credentials(emu: Emulator, front: TLSFront, pki: PKI) -> None:
    with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}, auth="carol:w0rd") as authed:

        async def main() -> str:
            ai = _async(emu, proxy=authed.url_with("carol", "w0rd"), verify=pki.ca_file)
            async with ai.model(NOVA).listen(encoding="linear16", sample_rate=16000) as s:
                return (await s.transcribe(SECOND)).text

        assert asyncio.run(main())
        assert authed.refused == 0 and authed.tunnels == [f"{HOST}:443"]
        assert b"Proxy-Authorization: Basic " in authed.clear_text
        assert emu.api_token.encode() not in authed.clear_text


def test_session_loopback_is_never_sent_to_an_environment_proxy(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{dead_port()}")
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{dead_port()}")
    with emu.client().model(NOVA).listen(encoding="linear16", sample_rate=16000) as s:
        assert s.transcribe(SECOND).text


def test_session_errors_name_the_proxy_or_the_untrusted_host(
    emu: Emulator, proxy: Proxy, front: TLSFront, pki: PKI
) -> None:
    dead = f"http://dave:pw9@127.0.0.1:{dead_port()}"
    with pytest.raises(APIConnectionError) as caught:
        with _sync(emu, proxy=dead, verify=pki.ca_file).model(NOVA).listen(encoding="linear16", sample_rate=16000):
            pass
    assert "proxy http://dave:***@127.0.0.1" in str(caught.value) and "pw9" not in str(caught.value)
    with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}, auth="dave:right") as authed:
        with pytest.raises(APIConnectionError, match="407") as caught:
            with (
                _sync(emu, proxy=authed.url_with("dave", "bad"), verify=pki.ca_file)
                .model(NOVA)
                .listen(encoding="linear16", sample_rate=16000)
            ):
                pass
        assert "proxy http://dave:***@" in str(caught.value)
    with pytest.raises(APIConnectionError, match=f"certificate of {HOST} is not trusted"):
        with _sync(emu, proxy=proxy.url).model(NOVA).listen(encoding="linear16", sample_rate=16000):
            pass


def test_async_session_through_an_https_proxy(emu: Emulator, proxy: Proxy, pki: PKI) -> None:
    tls_proxy = TLSFront(("127.0.0.1", proxy.port), pki.chain, pki.key)
    try:

        async def main() -> str:
            ai = _async(emu, proxy=f"https://127.0.0.1:{tls_proxy.port}", verify=pki.ca_file)
            async with ai.model(NOVA).listen(encoding="linear16", sample_rate=16000) as s:
                return (await s.transcribe(SECOND)).text

        assert asyncio.run(main())
        assert proxy.tunnels == [f"{HOST}:443"]
    finally:
        tls_proxy.close()


@pytest.mark.parametrize(("answer", "final"), [("403 Forbidden", True), ("502 Bad Gateway: upstream said 407", False)])
def test_a_refused_session_tunnel_is_final_by_its_status_not_its_words(
    emu: Emulator, pki: PKI, answer: str, final: bool
) -> None:
    with Proxy(refuse=answer) as refusing:
        with pytest.raises(APIConnectionError) as caught:
            with (
                _sync(emu, proxy=refusing.url_with("gina", "pw2"), verify=pki.ca_file)
                .model(NOVA)
                .listen(encoding="linear16", sample_rate=16000)
            ):
                pass
    message = str(caught.value)
    assert f"the proxy http://gina:***@127.0.0.1:{refusing.port} refused the tunnel" in message, message
    assert caught.value.retryable is not final and caught.value.request_sent is False
