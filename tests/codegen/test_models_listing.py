"""``workers-ai models``: every generated model with its task, methods and price, from the registry."""

from __future__ import annotations

import importlib
import json
from types import FunctionType

import pytest
from workers_ai import ModelHandle, _registry
from workers_ai._cli.main import main


def _listing(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    assert main(["models", "--json", *args]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return rows


def test_json_lists_every_model_with_the_methods_its_handle_has(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _listing(capsys)
    assert [r["id"] for r in rows] == sorted(_registry.MODELS)
    for row in rows[:: max(1, len(rows) // 15)]:
        module, handle = _registry.MODELS[str(row["id"])]
        cls = getattr(importlib.import_module(f"workers_ai.{module}"), handle)
        # Its own methods and its shape's (and run_tools() of the tool base): every class above ModelHandle.
        mine = cls.__mro__[: cls.__mro__.index(ModelHandle)]
        own = sorted({n for k in mine for n, v in vars(k).items() if isinstance(v, FunctionType) and n[0] != "_"})
        assert sorted(row["methods"]) == own, row  # type: ignore[arg-type]
        assert row["task"] == cls.info.task


def test_task_filter_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _listing(capsys, "--task", "text embeddings")
    assert rows and all(r["task"] == "Text Embeddings" for r in rows)
    assert any(r["id"] == "@cf/baai/bge-m3" and "rank" in r["methods"] for r in rows)  # type: ignore[operator]
    assert main(["models", "--task", "Translation"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["MODEL", "TASK", "PRICE"] and max(map(len, lines)) <= 100
    assert main(["models", "--task", "Translation", "--wide"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["MODEL", "TASK", "METHODS", "PRICE"]
    assert any(line.startswith("@cf/meta/m2m100-1.2b") and "translate" in line for line in lines)
    assert main(["models", "--task", "no such task"]) == 1
