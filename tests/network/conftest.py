"""Fixtures of the network tests: the test CA, the emulator behind a TLS front, and proxies (all on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai.testing import Emulator

from tests.network._net import HOST, Proxy, TLSFront, make_ca

NETWORK_VARS = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUEST_METHOD",
)


@pytest.fixture(autouse=True)
def _clean_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy or CA variable of the machine running the tests leaks in."""
    for name in NETWORK_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


class PKI:
    def __init__(self, folder: Path) -> None:
        self.ca, self.ca_file, self.chain, self.key = make_ca(folder)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return PKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0)) as e:
        yield e


@pytest.fixture(scope="module")
def front(emu: Emulator, pki: PKI) -> Iterator[TLSFront]:
    f = TLSFront(("127.0.0.1", emu.port), pki.chain, pki.key)
    yield f
    f.close()


@pytest.fixture
def proxy(front: TLSFront) -> Iterator[Proxy]:
    """A proxy that alone knows where HOST is (its TLS front)."""
    with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}) as p:
        yield p


BASE = f"https://{HOST}/client/v4"
