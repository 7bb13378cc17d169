"""A schema file of a known task dropped into ``schemas/`` gets its family's view with no code change;
a schema of an unknown task still generates a plain typed handle; a wire field named like a view
property keeps its wire name and moves aside in Python."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import msgspec

from tests._codegen_util import build, importable, write_schema
from tests.codegen._schemas import _model, _obj

TEXT_IN = _obj({"prompt": {"type": "string"}}, ["prompt"])
CLASSIC_OUT = _obj(
    {
        "response": {"type": "string"},
        "tool_calls": {"type": "array", "items": _obj({"name": {"type": "string"}, "arguments": {"type": "object"}})},
        "usage": _obj(
            {k: {"type": "integer"} for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
            ["prompt_tokens", "completion_tokens", "total_tokens"],
        ),
    },
    ["response", "usage"],
)
EMBED_OUT = _obj(
    {
        "shape": {"type": "array", "items": {"type": "integer"}},
        "data": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
    },
    ["shape", "data"],
)


def test_dropped_in_models_get_their_family_view_and_unknown_tasks_none(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/new/chat.json", _model("@cf/new/chat", TEXT_IN, CLASSIC_OUT, task="Text Generation"))
    write_schema(schemas, "@cf/new/vec.json", _model("@cf/new/vec", TEXT_IN, EMBED_OUT, task="Text Embeddings"))
    write_schema(schemas, "@cf/new/odd.json", _model("@cf/new/odd", TEXT_IN, CLASSIC_OUT, task="Tea Brewing"))
    build(schemas, out, "pkg_views")
    with importable(out, "pkg_views"):
        families = importlib.import_module("pkg_views.families")
        chat: Any = importlib.import_module("pkg_views.models.cf.new.chat")
        vec: Any = importlib.import_module("pkg_views.models.cf.new.vec")
        odd: Any = importlib.import_module("pkg_views.models.cf.new.odd")
        reply = msgspec.convert(
            {
                "response": "hi",
                "tool_calls": [{"name": "f", "arguments": {"x": 1}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            },
            chat.TextGenerationOutput,
        )
        assert isinstance(reply, families.TextView)
        assert reply.text == "hi" and reply.usage.total_tokens == 3
        assert [(c.name, c.arguments) for c in reply.tool_calls] == [("f", {"x": 1})]
        assert reply.tool_calls_[0].name == "f"  # the wire field, moved aside in Python
        assert msgspec.to_builtins(reply)["tool_calls"] == [{"name": "f", "arguments": {"x": 1}}]  # wire name kept
        emb = msgspec.convert({"shape": [1, 2], "data": [[0.5, 0.25]]}, vec.TextEmbeddingsOutput)
        assert isinstance(emb, families.EmbeddingView) and emb.vectors == [[0.5, 0.25]] and emb.dimensions == 2
        plain = [v for v in vars(odd).values() if isinstance(v, type) and issubclass(v, msgspec.Struct)]
        assert plain and not any(issubclass(v, families.TextView) for v in plain)
        assert any("tool_calls" in v.__struct_fields__ for v in plain)  # no view: the field keeps its name
