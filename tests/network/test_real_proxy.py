"""The clients through a real forward proxy (the ``proxy.py`` package, in this process, on 127.0.0.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI
from workers_ai.errors import APIConnectionError
from workers_ai.testing import Emulator

from tests.network._net import TLSFront
from tests.network.conftest import PKI

BGE = "@cf/baai/bge-m3"


@pytest.fixture(scope="module")
def real_proxy() -> Iterator[int]:
    proxy = pytest.importorskip("proxy")
    args = ["--hostname", "127.0.0.1", "--port", "0", "--num-workers", "1", "--num-acceptors", "1"]
    with proxy.Proxy([*args, "--basic-auth", "erin:op3n sesame"]) as running:
        yield int(running.flags.port)


def _kw(emu: Emulator, front: TLSFront, pki: PKI, proxy: str) -> dict[str, Any]:
    return {
        "account_id": emu.account_id,
        "api_token": emu.api_token,
        "base_url": f"https://127.0.0.1:{front.port}/client/v4",
        "proxy": proxy,
        "verify": pki.ca_file,
        "max_retries": 0,
    }


def test_sync_and_async_through_proxy_py_with_credentials(
    emu: Emulator, front: TLSFront, pki: PKI, real_proxy: int
) -> None:
    url = f"http://erin:op3n%20sesame@127.0.0.1:{real_proxy}"
    before = len(emu.requests)
    with WorkersAI(**_kw(emu, front, pki, url)) as ai:
        assert ai.model(BGE).embed(text=["a"]) is not None

    async def main() -> Any:
        async with AsyncWorkersAI(**_kw(emu, front, pki, url)) as ai:
            return await ai.model(BGE).embed(text=["a"])

    assert asyncio.run(main()) is not None
    assert len(emu.requests) == before + 2


def test_proxy_py_refuses_wrong_credentials_and_the_error_names_it(
    emu: Emulator, front: TLSFront, pki: PKI, real_proxy: int
) -> None:
    url = f"http://erin:guess@127.0.0.1:{real_proxy}"
    with pytest.raises(APIConnectionError, match=r"proxy http://erin:\*\*\*@127\.0\.0\.1:\d+ refused") as caught:
        WorkersAI(**_kw(emu, front, pki, url)).model(BGE).embed(text=["a"])
    assert "guess" not in str(caught.value)
