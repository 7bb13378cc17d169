"""Clients and handles pickle into working objects: in this process, after fork, in a spawn pool."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from workers_ai import WorkersAI
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def _client(emu: Emulator, **options: Any) -> WorkersAI:
    return WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url, **options)


def _embed_pickled(blob: bytes, text: str) -> tuple[int, list[float], str]:
    """Runs in a worker process: unpickle a handle and call the emulator with it."""
    handle = pickle.loads(blob)
    out = handle.embed(text=[text])
    return os.getpid(), list(out.data[0]), type(handle).__name__


def test_round_trip_client_and_handle_work(emu: Emulator) -> None:
    ai = _client(emu, max_retries=3, timeout=12.5)
    handle = ai.model(BGE)
    want = handle.embed(text=["pickled"]).data
    ai2: WorkersAI = pickle.loads(pickle.dumps(ai))
    assert ai2 is not ai and (ai2.timeout, ai2.max_retries, ai2.base_url) == (12.5, 3, emu.base_url)
    assert ai2.model(BGE).embed(text=["pickled"]).data == want
    handle2 = pickle.loads(pickle.dumps(handle))
    assert type(handle2) is type(handle) and handle2.client is not ai
    assert handle2.embed(text=["pickled"]).data == want
    # One pickle of two handles of one client gives two handles of one new client.
    a, b = pickle.loads(pickle.dumps([handle, ai.model("@cf/baai/bge-small-en-v1.5")]))
    assert a.client is b.client
    generic = pickle.loads(pickle.dumps(ai.model("@cf/someone/unknown-model")))
    assert generic.model_id == "@cf/someone/unknown-model"


def test_a_pickle_that_names_the_old_client_module_still_loads(emu: Emulator) -> None:
    # Pickles made before the client class moved to ``_clients.sync`` name ``workers_ai._client.WorkersAI``;
    # that module re-exports the same class. (Protocol 0 names a class as ``c<module>\n<name>\n``.)
    blob = pickle.dumps(_client(emu, timeout=7.0), 0)
    old = blob.replace(b"cworkers_ai._clients.sync\nWorkersAI\n", b"cworkers_ai._client\nWorkersAI\n")
    assert old != blob
    ai = pickle.loads(old)
    assert type(ai) is WorkersAI and ai.timeout == 7.0
    assert ai.model(BGE).embed(text=["old"]).dimensions > 0


def test_token_travels_in_the_pickle_but_never_in_reprs(emu: Emulator) -> None:
    ai = _client(emu)
    handle = ai.model(BGE)
    blob = pickle.dumps(handle)
    assert emu.api_token.encode() in blob  # a worker needs it
    for obj in (ai, handle, pickle.loads(blob), pickle.loads(blob).client, ai.rate_budget):
        assert emu.api_token not in repr(obj) and emu.api_token not in str(obj)
    args = ai._constructor_kwargs()  # pyright: ignore[reportPrivateUsage]
    assert emu.api_token not in repr(args) and repr(args["api_token"]) == "'***'"


def test_credentials_from_the_environment_travel_too(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", emu.account_id)
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", emu.api_token)
    monkeypatch.setenv("CLOUDFLARE_BASE_URL", emu.base_url)
    blob = pickle.dumps(WorkersAI().model(BGE))
    for name in ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_BASE_URL"):
        monkeypatch.delenv(name)
    assert len(pickle.loads(blob).embed(text="from env").data) == 1


def test_rate_budget_travels_as_configuration(emu: Emulator) -> None:
    ai = _client(emu, rate_limit={BGE: 120, "@cf/meta/llama-3-8b-instruct": None})
    ai.model(BGE).embed(text="x")
    pace = ai.rate_budget.pace(BGE)
    assert pace is not None
    pace.slow_down(None)  # this process's state: not carried over
    ai2: WorkersAI = pickle.loads(pickle.dumps(ai))
    pace2 = ai2.rate_budget.pace(BGE)
    assert pace2 is not None and pace2 is not pace
    assert (pace2.rpm, pace2.current) == (120, 120) and pace.current == 60
    assert ai2.rate_budget.pace("@cf/meta/llama-3-8b-instruct") is None
    assert ai2.rate_budget.rpm("@cf/baai/bge-small-en-v1.5") == 3000  # published default for embeddings
    assert pickle.loads(pickle.dumps(_client(emu, rate_limit=None))).rate_budget.pace(BGE) is None


def test_a_forked_child_uses_the_unpickled_handle_and_its_own_connections(emu: Emulator) -> None:
    ai = _client(emu)
    handle = ai.model(BGE)
    want = handle.embed(text=["fork"]).data[0]  # the parent has a pooled connection now
    blob = pickle.dumps(handle)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_embed_pickled, [(blob, "fork")] * 4)
    assert {pid for pid, _, _ in results} - {os.getpid()}
    assert all(vec == pytest.approx(want) and name == "BgeM3" for _, vec, name in results)
    assert handle.embed(text=["fork"]).data[0] == want  # the parent's connection still works


def test_spawn_pool_workers_get_working_handles(emu: Emulator) -> None:
    handle = _client(emu).model(BGE)
    want = {t: handle.embed(text=[t]).data[0] for t in ("one", "two", "three")}
    blob = pickle.dumps(handle)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_embed_pickled, [(blob, t) for t in want])
    assert all(pid != os.getpid() for pid, _, _ in results)
    assert [vec for _, vec, _ in results] == [pytest.approx(v) for v in want.values()]
