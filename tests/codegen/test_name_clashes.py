"""Generated names never clash: duplicate variants, handle members, titles, property names against
method bodies, and ``__all__`` lists every struct a caller builds.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from codegen.plan import RESERVED_METHODS
from codegen.render import undefined_names
from tests._codegen_util import build, codegen_cli, handle_class, importable, model_exports, model_modules, write_schema
from tests._server import ScriptedServer, ok
from tests.codegen._schemas import TEXT_IN, TEXT_OUT, _model, _obj
from tests.conftest import ACCOUNT, TOKEN


def test_duplicate_branches_and_a_root_ref_generate_importable_modules(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    answer = _obj({"answer": {"type": "string"}}, ["answer"])
    write_schema(
        schemas,
        "@cf/x/dup.json",
        _model("@cf/x/dup", {"oneOf": [TEXT_IN, dict(TEXT_IN)]}, {"oneOf": [answer, dict(answer, title="Again")]}),
    )
    root_ref = {"$ref": "#/$defs/R", "$defs": {"R": TEXT_IN}}
    out_ref = {"$ref": "#/definitions/O", "definitions": {"O": answer}}
    write_schema(schemas, "@cf/x/ref.json", _model("@cf/x/ref", root_ref, out_ref))
    # An input and an output with one schema are one struct to the struct generator.
    write_schema(schemas, "@cf/x/same.json", _model("@cf/x/same", {"type": "object"}, {"type": "object"}))
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_dup", "-q")
    assert proc.returncode == 0, proc.stderr
    with importable(out, "pkg_dup"):
        loaded = model_modules("pkg_dup")
        for model_id in ("@cf/x/dup", "@cf/x/ref"):
            module = loaded[model_id]
            assert len(module.DECODER.variants) == 1  # the identical output alternatives are one
            struct = msgspec.json.decode(b'{"answer": "yes"}', type=module.DECODER.variants[0])
            assert struct.answer == "yes"
            handle = handle_class(module)
            cls, required = handle.input_types[0]
            assert msgspec.json.encode(cls(text="hi")) == b'{"text":"hi"}' and required == ("text",)
        same = loaded["@cf/x/same"]
        # Free-form objects on both sides are one plain alias each: any JSON object in, any out.
        assert same.DECODER.decode({"k": 1}, "@cf/x/same") == {"k": 1}


def test_undefined_names_catches_what_would_fail_on_import() -> None:
    assert undefined_names("x: int = 1\n__all__ = ['x']\n", "m.py") == []
    assert undefined_names("class A:\n    def f(self, a: B) -> C:\n        return a\n", "m.py") == ["B", "C"]
    assert undefined_names("def f(p):\n    q = p\n    return [i for i in q] + r\n", "m.py") == ["r"]
    assert undefined_names("__all__ = ['Missing']\n", "m.py") == ["Missing"]
    with pytest.raises(SyntaxError):
        undefined_names("def (:\n", "m.py")


def test_reserved_methods_cover_every_model_handle_member() -> None:
    from workers_ai._handles.sync import ModelHandle

    own = [vars(c) for c in ModelHandle.__mro__ if c.__module__.startswith("workers_ai")]
    members = {n for d in own for n in d if not (n.startswith("__") and n.endswith("__"))}
    assert members <= RESERVED_METHODS, sorted(members - RESERVED_METHODS)
    public = {n for n in RESERVED_METHODS if not n.startswith("_")}
    assert public - members <= {"client", "model_id"}, sorted(public - members)  # set on the instance
    for name in ("validate", "decoder", "input_types", "batch_input", "encode_input", "decode_envelope", "run"):
        assert name in RESERVED_METHODS


def test_titles_never_shadow_handle_members_or_make_empty_names(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    titles = ["Validate", "---", "123", "Run", "Stream", "Embed Many", "Decoder"]
    variants = [_obj({f"k{i}": {"type": "string"}}, [f"k{i}"], title=t) for i, t in enumerate(titles)]
    write_schema(schemas, "@cf/x/titles.json", _model("@cf/x/titles", {"oneOf": variants}, TEXT_OUT, task="Odd"))
    build(schemas, out, "pkg_titles")
    with importable(out, "pkg_titles"):
        module = model_modules("pkg_titles")["@cf/x/titles"]
        handle = handle_class(module)
        from pkg_titles._handles.sync import ModelHandle

        shape = module.ShapeHandle  # the methods are the shape's
        assert issubclass(handle, shape)
        own = [n for n in vars(shape) if not n.startswith("_") and callable(getattr(handle, n))]
        assert len(own) == len(titles), own
        for name in own:
            assert name not in dir(ModelHandle) and name not in ("model", "m"), name
            assert any(c.isalpha() for c in name.replace("m_", "")), name
        for name in vars(ModelHandle):
            if not name.startswith("__") and name not in ("info", "decoder", "input_types", "batch_input"):
                assert getattr(handle, name) is getattr(ModelHandle, name), name


HOSTILE_PARAMS = ["as_bytes", "as_base64", "as_uint8", "result", "request", "UNSET", "UnsetType", "BinaryInput"]


def test_property_names_never_clash_with_method_body_names(tmp_path: Path, server: ScriptedServer) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    props: dict[str, Any] = {n: {"type": "string"} for n in HOSTILE_PARAMS}
    props["image"] = {"type": "string", "format": "binary"}
    props["audio"] = {"type": "string", "description": "base64 encoded audio"}
    props["pixels"] = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}
    write_schema(schemas, "@cf/x/clash.json", _model("@cf/x/clash", _obj(props, ["image"]), TEXT_OUT))
    build(schemas, out, "pkg_clash_names")
    with importable(out, "pkg_clash_names"):
        package = importlib.import_module("pkg_clash_names")
        ai = package.WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=0)
        handle = ai.model("@cf/x/clash")
        server.script(ok({"translated_text": "done"}))
        words = {n: f"<{n}>" for n in HOSTILE_PARAMS}
        reply = handle.translate(image=b"\x01\x02", audio=b"hi", pixels=b"\x00\xff", **words)
        assert reply.translated_text == "done"
        sent = server.requests[0].json()
        assert {n: sent[n] for n in HOSTILE_PARAMS} == words
        assert sent["image"] == "AQI=" and sent["audio"] == "aGk=" and sent["pixels"] == [0, 255]


def test_required_stream_property_is_passed_by_both_methods(tmp_path: Path, server: ScriptedServer) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    inp = _obj({"prompt": {"type": "string"}, "stream": {"type": "boolean"}}, ["prompt", "stream"])
    output = {
        "oneOf": [
            _obj({"response": {"type": "string"}}),
            {"type": "string", "format": "binary", "contentType": "text/event-stream"},
        ]
    }
    write_schema(schemas, "@cf/x/streamy.json", _model("@cf/x/streamy", inp, output, task="Text Generation"))
    build(schemas, out, "pkg_streamy")
    with importable(out, "pkg_streamy"):
        package = importlib.import_module("pkg_streamy")
        ai = package.WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=0)
        handle = ai.model("@cf/x/streamy")
        server.script(ok({"response": "hi"}))
        assert handle.generate(prompt="p").response == "hi"
        assert server.requests[0].json() == {"prompt": "p", "stream": False}
        with pytest.raises(TypeError):
            handle.generate(prompt="p", stream=True)
        with pytest.raises(TypeError):
            handle.generate_stream(prompt="p", stream=False)


def test_module_all_lists_every_struct_a_caller_builds(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    message = _obj({"role": {"type": "string"}, "content": {"type": "string"}}, ["role", "content"], title="Message")
    inp = _obj({"messages": {"type": "array", "items": {"$ref": "#/$defs/Message"}}}, ["messages"])
    inp["$defs"] = {"Message": message}
    write_schema(schemas, "@cf/x/chat.json", _model("@cf/x/chat", inp, TEXT_OUT, task="Text Generation"))
    build(schemas, out, "pkg_all")
    with importable(out, "pkg_all"):
        module = model_modules("pkg_all")["@cf/x/chat"]
        exports = model_exports(module)
        homes = (module.__name__, module.ShapeHandle.__module__)
        classes = {
            n
            for n, v in vars(module).items()
            if isinstance(v, type) and v.__module__ in homes and not n.startswith(("Shape", "AsyncShape"))
        }
        assert classes <= set(exports), sorted(classes - set(exports))
        assert any("Message" in n for n in exports)
        assert all(hasattr(module, n) for n in exports)
