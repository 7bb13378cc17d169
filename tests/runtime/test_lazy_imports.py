"""Cold start: ``import workers_ai`` loads nothing until a name is used, and a sync call loads only what it
needs. Every public name still resolves as before (``from workers_ai import X``, ``dir()``, ``__all__``),
and a pickled client or handle comes back in a process that never imported the package.

Each check runs in a fresh interpreter (``sys.modules`` of this one already holds everything)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections.abc import Iterator

import pytest
import workers_ai
import workers_ai.families
from workers_ai import WorkersAI
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"
LLAMA = "@cf/meta/llama-3.1-8b-instruct"

# What a sync call of a model that needs none of them must not load: the optional extras (async,
# realtime, numpy) and the parts of the SDK a plain call does not use. Not listed: what the call runs
# (session, transport, handles, decoding) and the one family of the model.
NOT_FOR_A_SYNC_CALL = (
    "aiohttp",
    "asyncio",
    "numpy",
    "pydantic",
    "websockets",
    "workers_ai._account",
    "workers_ai._aio",
    "workers_ai._aio_client",
    "workers_ai._batch",
    "workers_ai._cli",
    "workers_ai._client",
    "workers_ai._error_leaves",  # the error classes a successful call never raises (errors.py loads them)
    "workers_ai._core.affinity",
    "workers_ai._core.binary",
    "workers_ai._core.causes",
    "workers_ai._core.error_replies",
    "workers_ai._core.pickling",
    "workers_ai._core.proxies",
    "workers_ai._core.redact",
    "workers_ai._core.stream_events",
    "workers_ai._core.suggest",
    "workers_ai._core.warn",
    "workers_ai._handles.universal",
    "workers_ai._listing",
    "workers_ai._sync.stream",
    "workers_ai._tools",
    "workers_ai.errors",  # the public face of the error classes: the runtime imports the trunk itself
    "workers_ai.realtime",
    "workers_ai.testing",
)
FAMILIES = (
    "automatic_speech_recognition",
    "classification",
    "detection",
    "generated_text",
    "media",
    "reranking",
    "text_embeddings",
    "text_generation",
)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as e:
        yield e


def fresh(code: str) -> object:
    """Run ``code`` in a new interpreter; it prints one JSON value as its last line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def loaded(prefixes: tuple[str, ...]) -> str:
    """Code printing which modules under ``prefixes`` are in ``sys.modules``."""
    return (
        f"import json, sys; print(json.dumps(sorted(m for m in sys.modules if any("
        f"m == p or m.startswith(p + '.') for p in {prefixes!r}))))"
    )


def test_import_loads_nothing_until_a_name_is_used() -> None:
    code = f"import workers_ai\n{loaded(('workers_ai',))}"
    assert fresh(code) == ["workers_ai"]


def test_every_public_name_resolves_in_a_fresh_process() -> None:
    code = (
        "import json, workers_ai\n"
        "from workers_ai import *\n"
        "missing = [n for n in workers_ai.__all__ if n not in globals()]\n"
        "wrong = [n for n in workers_ai.__all__ if getattr(workers_ai, n) is not globals()[n]]\n"
        "print(json.dumps([missing, wrong, sorted(set(workers_ai.__all__) - set(dir(workers_ai)))]))"
    )
    assert fresh(code) == [[], [], []]


def test_every_public_name_is_what_its_module_defines() -> None:
    for name in workers_ai.__all__:
        value = getattr(workers_ai, name)
        if name == "errors":
            assert value is sys.modules["workers_ai.errors"]
            continue
        module = sys.modules[f"workers_ai.{workers_ai._LAZY[name]}"]
        assert getattr(module, name) is value, name
    assert set(workers_ai.__all__) <= set(dir(workers_ai))
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        _ = workers_ai.NoSuchName  # type: ignore[attr-defined]


def test_every_error_class_resolves_from_errors_and_shows_it_as_its_module() -> None:
    """The leaves of the error tree are defined on first use, yet each is importable, catchable and
    picklable by its public name, and names ``workers_ai.errors`` as its module, as the trunk's do."""
    code = (
        "import json, pickle, workers_ai.errors as errors\n"
        "from workers_ai.errors import RateLimitError\n"
        "names = [n for n in errors.__all__ if isinstance(getattr(errors, n), type)]\n"
        "wrong = [n for n in names if getattr(errors, n).__module__ != 'workers_ai.errors']\n"
        "try:\n"
        "    raise errors.QuotaExceededError('daily', status=429)\n"
        "except RateLimitError as exc:\n"
        "    back = pickle.loads(pickle.dumps(exc))\n"
        "unlisted = sorted(set(errors.__all__) - set(dir(errors)))\n"
        "print(json.dumps([len(names), wrong, type(back).__name__, str(back), unlisted]))"
    )
    assert fresh(code) == [39, [], "QuotaExceededError", "daily | HTTP 429", []]
    import workers_ai.errors as errors

    with pytest.raises(AttributeError, match="no attribute 'NoSuchError'"):
        _ = errors.NoSuchError  # type: ignore[attr-defined]


def test_families_load_one_family_per_name_and_all_names_resolve() -> None:
    code = f"from workers_ai.families import EmbeddingView\n{loaded(('workers_ai.families',))}"
    assert fresh(code) == ["workers_ai.families", "workers_ai.families.text_embeddings"]
    fam = workers_ai.families
    for name in fam.__all__:
        assert getattr(fam, name) is not None, name
    assert set(fam.__all__) <= set(dir(fam))
    assert set(fam.LIST_VIEWS) == {"text classification", "image classification", "object detection"}
    assert fam.LIST_VIEWS["object detection"] is fam.Detections
    with pytest.raises(AttributeError):
        _ = fam.NoSuchView  # type: ignore[attr-defined]


def test_the_lazy_family_table_matches_the_family_modules() -> None:
    """``families._HOMES`` names each view's module: every public name of a family module is there,
    pointing at that module (a view added to a family module without the table would not resolve)."""
    import importlib

    fam = workers_ai.families
    expected: dict[str, str] = {}
    for module in FAMILIES:
        mod = importlib.import_module(f"workers_ai.families.{module}")
        for name in getattr(mod, "__all__", ()):
            if name in fam.__all__:
                expected[name] = module
    assert fam._HOMES == expected


def test_one_sync_call_loads_only_what_it_uses(emu: Emulator) -> None:
    code = (
        "from workers_ai import WorkersAI\n"
        f"ai = WorkersAI(account_id={emu.account_id!r}, api_token={emu.api_token!r}, base_url={emu.base_url!r})\n"
        f"out = ai.model({BGE!r}).embed(text=['hello'])\n"
        "assert len(out.vectors[0]) == out.dimensions > 0\n"
        f"{loaded(NOT_FOR_A_SYNC_CALL + tuple(f'workers_ai.families.{f}' for f in FAMILIES))}"
    )
    # bge-m3 embeds and ranks: its module loads the two families its outputs are views of, no other
    assert fresh(code) == ["workers_ai.families.reranking", "workers_ai.families.text_embeddings"]


@pytest.mark.parametrize("client", ["WorkersAI", "AsyncWorkersAI"])
def test_a_cold_client_never_loads_its_typed_overloads(client: str) -> None:
    # ``_client`` / ``_aio_client`` hold the clients' typed overloads for type checkers (a 60 KB .pyc):
    # making a client and a handle, and pickling both, goes through the run-time classes only, which
    # those modules re-export as the same objects.
    typed = "workers_ai._aio_client" if client.startswith("Async") else "workers_ai._client"
    code = (
        "import json, pickle, sys\n"
        f"from workers_ai import {client}\n"
        f"ai = {client}(account_id={'a' * 32!r}, api_token='t')\n"
        f"handle = ai.model({BGE!r})\n"
        "again = pickle.loads(pickle.dumps((ai, handle)))\n"
        f"first = {typed!r} in sys.modules\n"
        f"import {typed}\n"
        f"print(json.dumps([first, {typed}.{client} is {client}, type(again[0]) is {client}, repr(again[0])]))"
    )
    assert fresh(code) == [
        False,
        True,
        True,
        f"{client}(account_id='{'a' * 32}', base_url='https://api.cloudflare.com/client/v4')",
    ]


def test_the_emulator_and_cli_clients_skip_the_typed_overloads_too() -> None:
    # They import the clients from the package (typed as ``_client``'s for type checkers), not from there.
    code = (
        "import argparse, json, os, sys\n"
        "from workers_ai.testing import Emulator\n"
        "from workers_ai._cli.output import new_client\n"
        "with Emulator() as emu:\n"
        "    made = [emu.client(), emu.async_client()]\n"
        "    os.environ.update(CLOUDFLARE_ACCOUNT_ID=emu.account_id, CLOUDFLARE_API_TOKEN=emu.api_token)\n"
        "    made.append(new_client(argparse.Namespace(base_url=emu.base_url)))\n"
        "    names = [type(ai).__name__ for ai in made]\n"
        "print(json.dumps([names, [m for m in ('workers_ai._client', 'workers_ai._aio_client') if m in sys.modules]]))"
    )
    assert fresh(code) == [["WorkersAI", "AsyncWorkersAI", "WorkersAI"], []]


def test_a_cold_model_handle_loads_its_model_shape_and_packages_only() -> None:
    """What ``ai.model('@cf/baai/bge-m3')`` loads below ``workers_ai.models``: its module, its shape and the
    packages on their path. The reply to a queued request (``AsyncResponse``) is the runtime's, so no shared
    module of unrelated structs loads for it."""
    code = (
        "from workers_ai import WorkersAI\n"
        f"WorkersAI(account_id='a' * 32, api_token='t').model({BGE!r})\n"
        f"{loaded(('workers_ai.models',))}"
    )
    got = fresh(code)
    assert isinstance(got, list)
    shapes = [m for m in got if m.startswith("workers_ai.models._shapes.")]
    assert len(shapes) == 1 and shapes[0].startswith("workers_ai.models._shapes.text_embeddings_")
    assert sorted(set(got) - set(shapes)) == [
        "workers_ai.models",
        "workers_ai.models._shapes",
        "workers_ai.models.cf",
        "workers_ai.models.cf.baai",
        "workers_ai.models.cf.baai.bge_m3",
    ]


def test_every_queued_reply_struct_is_the_runtimes_one() -> None:
    """Every model whose replies include ``AsyncResponse`` re-exports the one struct of ``_core.decode``."""
    import importlib

    from workers_ai import _registry
    from workers_ai._core.decode import AsyncResponse

    users = 0
    for module_name, _ in _registry.MODELS.values():
        mod = importlib.import_module(f"workers_ai.{module_name}")
        if hasattr(mod, "AsyncResponse"):
            users += 1
            assert mod.AsyncResponse is AsyncResponse, module_name
    assert users >= 2


def test_a_text_model_call_loads_no_tool_stream_or_batch_module(emu: Emulator) -> None:
    code = (
        "from workers_ai import WorkersAI\n"
        f"ai = WorkersAI(account_id={emu.account_id!r}, api_token={emu.api_token!r}, base_url={emu.base_url!r})\n"
        f"out = ai.model({LLAMA!r}).chat(messages=[{{'role': 'user', 'content': 'hi'}}])\n"
        "assert out.text and out.usage.total_tokens > 0\n"
        f"{loaded(NOT_FOR_A_SYNC_CALL + tuple(f'workers_ai.families.{f}' for f in FAMILIES))}"
    )
    assert fresh(code) == ["workers_ai.families.text_generation"]


def test_a_sync_call_compiles_no_regex_of_ours(emu: Emulator) -> None:
    # A pattern compiled in a fresh process costs 50-300 us: none on the way from import to a first call
    # (urllib3, opentelemetry and the standard library compile their own; only workers_ai's count).
    code = (
        "import json, re, sys, urllib3, msgspec\n"
        "ours = []\n"
        "compile_ = re._compiler.compile\n"
        "def spy(p, flags=0):\n"
        "    f = sys._getframe(1)\n"
        "    while f.f_back is not None and f.f_code.co_filename.endswith(('re/__init__.py', 're/_compiler.py')):\n"
        "        f = f.f_back  # the code that asked re for the pattern\n"
        "    if '/workers_ai/' in f.f_code.co_filename:\n"
        "        ours.append(str(p))\n"
        "    return compile_(p, flags)\n"
        "re._compiler.compile = spy\n"
        "from workers_ai import WorkersAI\n"
        f"ai = WorkersAI(account_id={emu.account_id!r}, api_token={emu.api_token!r}, base_url={emu.base_url!r})\n"
        f"ai.model({BGE!r}).embed(text=['hello'])\n"
        "print(json.dumps(ours))"
    )
    assert fresh(code) == []


def test_a_pickled_handle_works_in_a_process_that_never_imported_the_package(emu: Emulator) -> None:
    handle = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url).model(BGE)
    want = list(handle.embed(text=["pickled"]).vectors[0])
    code = (
        "import json, pickle, sys\n"
        f"handle = pickle.loads({pickle.dumps(handle)!r})\n"
        "print(json.dumps([type(handle).__name__, list(handle.embed(text=['pickled']).vectors[0])]))"
    )
    name, got = fresh(code)  # type: ignore[misc]
    assert name == "BgeM3"
    assert got == pytest.approx(want)
