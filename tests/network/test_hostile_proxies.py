"""Proxies that fail mid-way, with the client in a fenced child process (address-space cap, deadline):
a tunnel cut while a stream is being read, and a proxy that accepts and never answers."""

from __future__ import annotations

import socket
import threading
import time

from workers_ai.testing import Emulator

from tests.network._net import HOST, Proxy, TLSFront
from tests.network.conftest import BASE, PKI
from tests.runtime._raw import run_client

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


def test_a_tunnel_cut_mid_stream_names_the_proxy(pki: PKI) -> None:
    with Emulator(stream_interval=0.1) as slow:
        front = TLSFront(("127.0.0.1", slow.port), pki.chain, pki.key)
        with Proxy({f"{HOST}:443": ("127.0.0.1", front.port)}) as proxy:

            def cut_when_streaming() -> None:
                deadline = time.monotonic() + 30
                while not slow.requests and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.35)  # a few events are through
                proxy.cut_all()

            threading.Thread(target=cut_when_streaming, daemon=True).start()
            found = run_client(
                f"""
                from workers_ai import WorkersAI
                ai = WorkersAI(account_id={slow.account_id!r}, api_token={slow.api_token!r}, base_url={BASE!r},
                               proxy={proxy.url!r}, verify={str(pki.ca_file)!r}, max_retries=0)
                seen = []
                prompt = [{{"role": "user", "content": "hello " * 50}}]
                def read():
                    for event in ai.model({LLAMA!r}).chat_stream(messages=prompt, max_tokens=200):
                        seen.append(event)
                result = outcome(read)
                result["events"] = len(seen)
                """,
                deadline=60,
            )
        front.close()
    assert found["ok"] is False and "APIConnectionError" in found["bases"], found
    assert found["events"] >= 1
    assert f"through the proxy {proxy.url}" in found["message"], found["message"]


def test_a_proxy_that_never_answers_ends_at_the_deadline(pki: PKI) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections complete in the backlog; nothing is ever read or written
    port = silent.getsockname()[1]
    try:
        found = run_client(
            f"""
            from workers_ai import WorkersAI, AsyncWorkersAI
            import asyncio
            kw = dict(account_id=ACCOUNT, api_token=TOKEN, base_url={BASE!r}, proxy="http://127.0.0.1:{port}",
                      verify={str(pki.ca_file)!r}, max_retries=0, timeout=1.0)
            t0 = time.monotonic()
            prompt = [{{"role": "user", "content": "x"}}]
            result = outcome(lambda: WorkersAI(**kw).model({LLAMA!r}).chat(messages=prompt))
            result["seconds"] = time.monotonic() - t0
            async def main():
                async with AsyncWorkersAI(**kw) as ai:
                    return await ai.model({LLAMA!r}).chat(messages=prompt)
            t0 = time.monotonic()
            result["async"] = outcome(lambda: asyncio.run(main()))
            result["async_seconds"] = time.monotonic() - t0
            """,
            deadline=60,
        )
    finally:
        silent.close()
    assert found["ok"] is False and "APITimeoutError" in found["bases"], found
    assert found["async"]["ok"] is False and "APITimeoutError" in found["async"]["bases"], found
    assert found["seconds"] < 5 and found["async_seconds"] < 5
    assert f"proxy http://127.0.0.1:{port}" in found["message"], found["message"]
    assert f"proxy http://127.0.0.1:{port}" in found["async"]["message"], found["async"]["message"]
