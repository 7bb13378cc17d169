"""Realtime sessions that end at every step (after connect, mid-handshake, after config, mid-audio,
right after the Close message, a close frame without it, TCP resets) and the realtime tests' sessions
run again and again while other threads load the machine: the emulator ends each session cleanly,
logs nothing (a client closing is not a fault) and keeps serving. Both run in a fenced child process
(address-space limit, deadline), the emulator with them."""

from __future__ import annotations

from tests.realtime._endings import ENDINGS, SESSIONS
from tests.runtime._raw import run_client


def test_a_client_that_closes_at_each_step_of_a_session() -> None:
    found = run_client("from tests.realtime._endings import run_endings\nresult = run_endings(3)\n", deadline=90)
    assert found.get("failures") == [], found
    assert found["errors"] == [], found["errors"]
    seen = found["seen"]
    assert set(seen) == {f"{model} {name}" for model in SESSIONS for name in ENDINGS}
    for model in SESSIONS:
        # Whoever closes first, the close handshake completes: the emulator answers the client's close
        # frame with its own (1000), and nothing else fails, however much it still had to send.
        for name in ("close frame without Close", "mid-audio", "right after Close"):
            assert seen[f"{model} {name}"] == ["closed 1000"], (model, name, seen[f"{model} {name}"])
        assert seen[f"{model} bad handshake"] == seen[f"{model} infinite fault option"] == ["HTTP/1.1 400 Bad Request"]
    assert found["audio"] == 2 * 480 * 2 and found["text"] == "the quick brown fox"


def test_the_realtime_tests_sessions_under_load() -> None:
    found = run_client("from tests.realtime._endings import run_load\nresult = run_load(2.0)\n", deadline=120)
    assert found.get("failures") == [], found
    assert found["served"] and found["errors"] == [], found
    assert found["rounds"]["the realtime tests' sessions"] >= 2 and found["rounds"]["sessions left early"] >= 2
