"""A client pointed at a scripted server, and checks shared by the runtime error tests."""

from __future__ import annotations

from workers_ai import WorkersAI
from workers_ai.models.cf.baai import bge_m3

from tests._server import ScriptedServer
from tests.conftest import ACCOUNT, TOKEN

EMBED = {"shape": [1, 2], "data": [[0.1, 0.2]], "pooling": "mean"}


def client(server: ScriptedServer, *, max_retries: int = 2, timeout: float = 10.0) -> WorkersAI:
    ai = WorkersAI(
        account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=max_retries, timeout=timeout
    )
    return ai


def embed(ai: WorkersAI) -> bge_m3.EmbeddingOutput:
    return ai.model("@cf/baai/bge-m3").embed(text="hello")


def assert_token_absent(exc: BaseException) -> None:
    for text in (str(exc), repr(exc), repr(exc.args), repr(vars(exc))):
        assert TOKEN not in text
