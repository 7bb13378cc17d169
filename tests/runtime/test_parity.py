"""Parity of the sync and async surfaces, checked rather than hoped for.

Every public name of a sync class (client, model handles generated and generic, batch job, stream,
fine-tunes, emulator helpers) must exist on its async twin with the same parameters (names, kinds,
defaults, annotations once the ``Async`` prefixes and ``Coroutine[...]`` wrappers are taken off);
the only allowed differences are the ones asyncio itself imposes (``close``/``aclose``,
``__enter__``/``__aenter__``, ``__iter__``/``__aiter__``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import pytest
from workers_ai import BatchJob, EventStream, ModelHandle, WorkersAI, _registry
from workers_ai._account.finetunes import AsyncFinetunes, Finetunes
from workers_ai._aio.stream import AsyncEventStream
from workers_ai._aio_client import AsyncWorkersAI
from workers_ai._batch.jobs import AsyncBatchJob
from workers_ai._handles.aio import AsyncModelHandle
from workers_ai.testing import Emulator

RENAMED = {"close": "aclose"}  # what asyncio renames: the sync name -> the async one


def public(cls: type[Any]) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def normalise(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    while True:  # Coroutine[Any, Any, X] -> X
        m = re.search(r"Coroutine\[Any, Any, ", text)
        if m is None:
            break
        depth, i = 1, m.end()
        while depth:
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[m.end() : i - 1] + text[i:]
    text = re.sub(r"\bAsyncStreamRequest\b", "EventStream", text)
    return re.sub(r"\bAsync(?=[A-Z])", "", text)


def shape(fn: Any) -> list[tuple[str, Any, str, str]]:
    sig = inspect.signature(fn)
    params = [(p.name, p.kind, repr(p.default), normalise(p.annotation)) for p in sig.parameters.values()]
    return [*params, ("return", None, "", normalise(sig.return_annotation))]


def check_pair(sync: type[Any], aio: type[Any]) -> list[str]:
    problems: list[str] = []
    for name in sorted(public(sync)):
        twin = RENAMED.get(name, name)
        if not hasattr(aio, twin):
            problems.append(f"{aio.__name__} lacks {twin} ({sync.__name__}.{name})")
            continue
        s, a = inspect.getattr_static(sync, name), inspect.getattr_static(aio, twin)
        if isinstance(s, property) or isinstance(a, property):
            if type(s) is not type(a):
                problems.append(f"{name}: {type(s).__name__} vs {type(a).__name__}")
            continue
        if not callable(getattr(sync, name)) or isinstance(s, type):
            continue
        if shape(getattr(sync, name)) != shape(getattr(aio, twin)):
            theirs = inspect.signature(getattr(aio, twin))
            problems.append(f"{sync.__name__}.{name}{inspect.signature(getattr(sync, name))} != async {theirs}")
    for name in sorted(public(aio) - {RENAMED.get(n, n) for n in public(sync)}):
        problems.append(f"{aio.__name__}.{name} has no sync twin")
    return problems


PAIRS = [
    (WorkersAI, AsyncWorkersAI),
    (ModelHandle, AsyncModelHandle),
    (BatchJob, AsyncBatchJob),
    (EventStream, AsyncEventStream),
    (Finetunes, AsyncFinetunes),
]


@pytest.mark.parametrize(("sync", "aio"), PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_runtime_classes_have_twins_with_the_same_signatures(sync: type[Any], aio: type[Any]) -> None:
    assert check_pair(sync, aio) == []


def test_every_generated_handle_has_an_async_twin_with_the_same_methods() -> None:
    problems: list[str] = []
    for module_name, handle in sorted(set(_registry.MODELS.values())):
        module = importlib.import_module(f"workers_ai.{module_name}")
        problems += check_pair(getattr(module, handle), getattr(module, f"Async{handle}"))
    assert problems == []
    assert len(_registry.MODELS) >= 50  # the whole catalog is checked, not an empty registry


def test_the_emulator_hands_out_both_clients_alike() -> None:
    s, a = inspect.signature(Emulator.client), inspect.signature(Emulator.async_client)
    assert list(s.parameters) == list(a.parameters)
    assert normalise(s.return_annotation) == normalise(a.return_annotation) == "WorkersAI"


def test_the_check_catches_drift() -> None:
    class Sync:
        def call(self, x: int, *, y: str = "a") -> int: ...
        def only_sync(self) -> None: ...

    class AsyncSync:
        async def call(self, x: int, *, y: str = "b") -> int: ...

    problems = check_pair(Sync, AsyncSync)
    assert any("only_sync" in p for p in problems) and any(p.startswith("Sync.call") for p in problems)
