"""``workers-ai batch``: a JSON Lines file through the queue, one result line per request line, in order.

The crash and resume cases (SIGKILL while polling, mid-submission, a finished run run again) are in
test_batch_many_crash.py; here: result lines, failed items, bad input, the output file, the journal check.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from workers_ai._cli.main import main
from workers_ai.testing import Emulator

LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


@pytest.fixture
def emu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    with Emulator(models=[LLAMA, "@cf/huggingface/distilbert-sst-2-int8"], batch_polls=(0, 1)) as e:
        for key, value in e.env().items():
            monkeypatch.setenv(key, value)
        yield e


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _run(tmp: Path, *extra: str, model: str = LLAMA) -> int:
    argv = ["batch", model, "--input", str(tmp / "in.jsonl"), "-o", str(tmp / "out.jsonl"), "--poll-interval", "0.01"]
    return main([*argv, *extra])


def test_one_line_per_request_in_order_and_a_failed_item_is_a_line_with_its_error(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "in.jsonl", [json.dumps({"prompt": f"question {i}"}) for i in range(25)])
    emu.inject("batch_item_error", items=(3,), code=5006, message="AiError: Bad input: no")
    assert _run(tmp_path, "--batch-size", "10") == 1  # a request failed
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == list(range(25))
    assert lines[3] == {"id": 3, "external_reference": "3", "error": "5006: AiError: Bad input: no"}
    assert "question 7" in lines[7]["result"]["response"]
    err = capsys.readouterr().err
    assert "25 results" in err and "(1 failed)" in err and "3 batches sent" in err
    assert "\r[" not in err  # no progress bar when stderr is not a terminal


def test_a_bad_line_is_named_by_file_and_line_and_nothing_is_sent(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps({"prompt": "ok"})
    for lines, expect in (
        ([good, good, '{"prompt": 5}'], "in.jsonl:3"),
        ([good, "", good], "in.jsonl:2: an empty line"),
        ([good, "{nope"], "in.jsonl:2: not JSON"),
        ([good, "[1, 2]"], "in.jsonl:2: expected a JSON object"),
    ):
        _write(tmp_path / "in.jsonl", lines)
        assert _run(tmp_path) == 2  # bad input, refused before anything is sent: a usage error
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("workers-ai batch: ") and expect in err[0], err
    assert emu.requests == []
    assert not (tmp_path / "out.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"]  # no temporary file left behind


def test_a_model_without_batches_and_a_journal_of_another_run_are_refused(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "in.jsonl", [json.dumps({"text": "fine"})])
    assert _run(tmp_path, model="@cf/huggingface/distilbert-sst-2-int8") == 1
    assert "no async batch" in capsys.readouterr().err
    _write(tmp_path / "in.jsonl", [json.dumps({"prompt": f"q{i}"}) for i in range(4)])
    assert _run(tmp_path, "--journal", str(tmp_path / "j")) == 0
    (tmp_path / "out.jsonl").unlink()
    _write(tmp_path / "in.jsonl", [json.dumps({"prompt": f"other {i}"}) for i in range(4)])
    before = len(emu.requests)
    assert _run(tmp_path, "--journal", str(tmp_path / "j")) == 1
    assert "written for other requests" in capsys.readouterr().err
    assert len(emu.requests) == before and not (tmp_path / "out.jsonl").exists()


def test_a_run_that_times_out_leaves_no_output_and_resumes(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "in.jsonl", [json.dumps({"prompt": f"q{i}"}) for i in range(6)])
    (tmp_path / "out.jsonl").write_text("the previous results\n")
    emu.batch_polls = (10**6, 0)
    assert _run(tmp_path, "--journal", str(tmp_path / "j"), "--timeout", "0.3") == 1
    assert "BatchTimeoutError" in capsys.readouterr().err
    assert (tmp_path / "out.jsonl").read_text() == "the previous results\n"  # untouched until complete
    emu.batch_polls = (0, 0)
    assert _run(tmp_path, "--journal", str(tmp_path / "j")) == 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 6
    assert set(emu.batch_items_received.values()) == {1}
