"""What the public classes offer is what a user calls: the clients' methods are the documented ones, and no
public class shows the machinery its calls run on (flows, the driver, the last-reply hook, URL builders)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from workers_ai import AsyncWorkersAI, BatchJob, EventStream, ModelHandle, WorkersAI
from workers_ai._account.finetunes import AsyncFinetunes, Finetunes
from workers_ai._aio.stream import AsyncEventStream, AsyncStreamRequest
from workers_ai._batch.jobs import AsyncBatchJob
from workers_ai._handles.aio import AsyncModelHandle
from workers_ai.models.cf.baai.bge_m3 import AsyncBgeM3, BgeM3
from workers_ai.realtime import AsyncListenSession, AsyncSpeakSession, ListenSession, SpeakSession

CLIENT_METHODS = {
    "batch_job",
    "call_bound",
    "finetunes",
    "last_response",
    "model",
    "models",
    "openai_base_url",
    "run",
    "to_markdown",
    "to_markdown_supported",
    "with_options",
}
PLUMBING = re.compile(
    r"(_flow|^drive|^remember|^handshake_headers|^run_url|^api_url|^is_async|^request|^get_json|^run_decoded)$"
)
PUBLIC_CLASSES: list[type[Any]] = [
    WorkersAI,
    AsyncWorkersAI,
    ModelHandle,
    AsyncModelHandle,
    BgeM3,
    AsyncBgeM3,
    BatchJob,
    AsyncBatchJob,
    EventStream,
    AsyncEventStream,
    AsyncStreamRequest,
    Finetunes,
    AsyncFinetunes,
    ListenSession,
    AsyncListenSession,
    SpeakSession,
    AsyncSpeakSession,
]


def public(cls: type[Any]) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


@pytest.mark.parametrize(("client", "close"), [(WorkersAI, "close"), (AsyncWorkersAI, "aclose")])
def test_the_clients_offer_only_their_documented_methods(client: type[Any], close: str) -> None:
    assert public(client) == CLIENT_METHODS | {close}


@pytest.mark.parametrize("cls", PUBLIC_CLASSES, ids=lambda c: c.__name__)
def test_no_public_class_shows_the_machinery(cls: type[Any]) -> None:
    assert sorted(name for name in public(cls) if PLUMBING.search(name)) == []
