"""`workers-ai run --queue`: submit, a status line on stderr while waiting, every item as JSON on stdout."""

from __future__ import annotations

import json
from typing import Any

import pytest
from workers_ai._cli.main import main

from tests._server import ScriptedServer
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._queue import QueueSim

BASE = "@cf/baai/bge-base-en-v1.5"


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", ACCOUNT)
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", TOKEN)


def run(server: ScriptedServer, *args: str) -> list[str]:
    return ["run", BASE, "--base-url", server.base_url, "--poll-interval", "0.01", *args]


def test_queue_waits_and_prints_every_item(server: ScriptedServer, capsys: pytest.CaptureFixture[str]) -> None:
    sim = QueueSim(states=["queued", "running", "done"])
    server.script(sim)
    payload = {"requests": [{"text": ["t 1"], "external_reference": "a"}, {"text": "t 2"}]}
    code = main(run(server, "--queue", "--json", json.dumps(payload)))
    out = capsys.readouterr()
    assert code == 0
    doc: dict[str, Any] = json.loads(out.out)
    (request_id,) = sim.jobs
    assert doc["request_id"] == request_id and doc["model"] == BASE
    assert [(i["id"], i["success"], i["external_reference"]) for i in doc["items"]] == [(0, True, "a"), (1, True, None)]
    assert doc["items"][1]["result"]["data"] == [[2.0, 3.0]]
    assert doc["usage"]["total_tokens"] == 12
    # Not a terminal: one stderr line per status change, each naming the batch.
    lines = out.err.strip().splitlines()
    assert lines[0] == f"workers-ai: queued batch {request_id} for {BASE}"
    assert [line.split(": ")[1].split()[0] for line in lines[1:-1]] == ["queued", "running", "done"]
    assert (
        lines[-1] == "workers-ai: usage: 1 call, 2 batch items, 12 tokens (12 in, 0 out), $0.000001"
    )  # 12 x 0.067 USD/M


def test_no_wait_prints_the_id_and_request_id_resumes(
    server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = QueueSim(states=["queued", "done"])
    server.script(sim)
    assert main(run(server, "--queue", "--no-wait", "--json", '{"requests": [{"text": "t 4"}]}')) == 0
    first = json.loads(capsys.readouterr().out)
    assert sim.polls == 0
    assert main(run(server, "--request-id", first["request_id"])) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["items"][0]["result"]["data"] == [[4.0, 3.0]]


def test_a_failed_item_gives_exit_status_1(server: ScriptedServer, capsys: pytest.CaptureFixture[str]) -> None:
    def respond(index: int, request: dict[str, Any]) -> dict[str, Any]:
        return {"id": index, "success": False, "errors": [{"code": 5006, "message": "bad"}]}

    server.script(QueueSim(states=["done"], respond=respond))
    assert main(run(server, "--queue", "--json", '{"requests": [{"text": "x"}]}')) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["items"][0]["errors"] == [{"code": 5006, "message": "bad"}]


def test_a_timeout_names_the_request_id(server: ScriptedServer, capsys: pytest.CaptureFixture[str]) -> None:
    sim = QueueSim(states=["queued"])
    server.script(sim)
    assert main(run(server, "--queue", "--timeout", "0.01", "--json", '{"requests": [{"text": "x"}]}')) == 1
    (request_id,) = sim.jobs
    err = capsys.readouterr().err
    assert "BatchTimeoutError" in err and request_id in err


def test_run_needs_json_unless_resuming(server: ScriptedServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(run(server, "--queue")) == 2
    assert "give the input: --json JSON" in capsys.readouterr().err  # or key=value pairs, or --file
