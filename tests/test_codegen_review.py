"""Generator fixes from review: cache trust, import-safe output, name clashes, bad input, permissions,
ownership of the output folder, stable client aliases and complete ``__all__``.
"""

from __future__ import annotations

import importlib
import os
import stat
from pathlib import Path
from typing import Any

import msgspec
import pytest

import codegen.cli
from codegen.cli import generate, main
from codegen.plan import RESERVED_METHODS
from codegen.render import undefined_names
from tests._codegen_util import build, codegen_cli, importable, model_modules, tree, write_schema
from tests._server import ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN


def _model(name: str, inp: dict[str, Any], out: dict[str, Any], task: str = "Translation") -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Model {name}.",
        "task": {"name": task},
        "schema": {"input": inp, "output": out},
    }


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **({"required": required} if required else {}), **extra}


TEXT_IN = _obj({"text": {"type": "string"}}, ["text"])
TEXT_OUT = _obj({"translated_text": {"type": "string"}})


# ----------------------------------------------------------------------------- B1 cache


def test_check_renders_fresh_and_regeneration_restores_edited_modules(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/x/one.json", _model("@cf/x/one", TEXT_IN, TEXT_OUT))
    build(schemas, out, "pkg_edit")
    module = out / "pkg_edit" / "models" / "cf" / "x" / "one.py"
    pristine = module.read_bytes()
    module.write_bytes(pristine + b"EDITED = True\n")
    assert generate(schemas, out, "pkg_edit", check=True).code == 1
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_edit", "--check")
    assert proc.returncode == 1 and "drift: changed" in proc.stderr
    result = generate(schemas, out, "pkg_edit")
    assert result.code == 0 and result.changed == ["models/cf/x/one.py"]
    assert module.read_bytes() == pristine
    # An edit inside the body (not just appended) is caught the same way.
    module.write_bytes(pristine.replace(b"Model @cf/x/one.", b"Model edited."))
    assert generate(schemas, out, "pkg_edit", check=True).code == 1
    assert generate(schemas, out, "pkg_edit").changed == ["models/cf/x/one.py"]
    assert module.read_bytes() == pristine


def test_renamed_schemas_folder_gives_the_same_output_as_a_fresh_build(tmp_path: Path) -> None:
    first, out, fresh = tmp_path / "schemas", tmp_path / "out", tmp_path / "fresh"
    write_schema(first, "@cf/x/one.json", _model("@cf/x/one", TEXT_IN, TEXT_OUT))
    build(first, out, "pkg_label")
    renamed = tmp_path / "other_name"
    first.rename(renamed)
    build(renamed, out, "pkg_label")
    build(renamed, fresh, "pkg_label")
    assert tree(out) == tree(fresh)
    assert b"other_name/@cf/x/one.json" in (out / "pkg_label" / "models" / "cf" / "x" / "one.py").read_bytes()


# ----------------------------------------------------------------------------- B2 import-safe output


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
            handle = getattr(module, module.__all__[0])
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


# ----------------------------------------------------------------------------- B3 method names


def test_reserved_methods_cover_every_model_handle_member() -> None:
    from workers_ai._handle import ModelHandle

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
        handle = getattr(module, module.__all__[0])
        from pkg_titles._handle import ModelHandle

        own = [n for n in vars(handle) if not n.startswith("_") and callable(getattr(handle, n))]
        assert len(own) == len(titles), own
        for name in own:
            assert name not in dir(ModelHandle) and name not in ("model", "m"), name
            assert any(c.isalpha() for c in name.replace("m_", "")), name
        for name in vars(ModelHandle):
            if not name.startswith("__") and name not in ("info", "decoder", "input_types", "batch_input"):
                assert getattr(handle, name) is getattr(ModelHandle, name), name


# ----------------------------------------------------------------------------- B4 + B5 method bodies


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


# ----------------------------------------------------------------------------- B6 bad input


def _deep_items(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return node


def test_unreadable_files_odd_types_and_deep_nesting_exit_2(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "good.json", _model("@cf/x/good", TEXT_IN, TEXT_OUT))
    (schemas / "folder.json").mkdir()
    (schemas / "dangling.json").symlink_to(tmp_path / "missing-target.json")
    bad_types = {"empty-list": [], "object": {}}
    for name, kind in bad_types.items():
        write_schema(schemas, f"{name}.json", _model(f"@cf/x/{name}", _obj({"a": {"type": kind}}), TEXT_OUT))
    write_schema(schemas, "deep.json", _model("@cf/x/deep", _obj({"a": _deep_items(165)}), TEXT_OUT))
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "pkg_bad_input")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith(("warning:", "codegen:"))]
    for name in ("folder.json", "dangling.json", "empty-list.json", "object.json", "deep.json"):
        assert any(line.startswith(f"{schemas / name}: ") for line in lines), (name, proc.stderr)
    assert not out.exists()


def test_an_internal_error_exits_3_never_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(codegen.cli, "generate", broken)
    assert main(["-q"]) == 3
    err = capsys.readouterr().err
    assert err.splitlines() == ["codegen: internal error: ValueError: boom\\nsecond line"]


# ----------------------------------------------------------------------------- B7 permissions


def test_generated_files_are_readable_by_others_under_umask_022(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/x/one.json", _model("@cf/x/one", TEXT_IN, TEXT_OUT))
    old = os.umask(0o022)
    try:
        build(schemas, out, "pkg_modes")  # a new package: the staging folder is renamed into place
        write_schema(schemas, "@cf/x/two.json", _model("@cf/x/two", TEXT_IN, TEXT_OUT))
        build(schemas, out, "pkg_modes")  # an existing one: files staged with mkstemp
    finally:
        os.umask(old)
    root = out / "pkg_modes"
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        want = 0o755 if path.is_dir() else 0o644
        assert mode == want, (path, oct(mode))


# ----------------------------------------------------------------------------- B8 ownership


def test_existing_folders_not_generated_by_codegen_are_refused(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "src"
    write_schema(schemas, "@cf/x/one.json", _model("@cf/x/one", TEXT_IN, TEXT_OUT))
    mine = out / "mypkg"
    mine.mkdir(parents=True)
    (mine / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    (mine / "core.py").write_text("def f() -> int:\n    return 1\n", encoding="utf-8")
    before = tree(out)
    proc = codegen_cli("--schemas", schemas, "--out", out, "--package", "mypkg")
    assert proc.returncode == 2
    assert "exists and was not generated by codegen; refusing to overwrite" in proc.stderr
    assert tree(out) == before


def test_regeneration_removes_stale_generated_files_and_keeps_other_files(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    write_schema(schemas, "@cf/x/one.json", _model("@cf/x/one", TEXT_IN, TEXT_OUT))
    write_schema(schemas, "@cf/x/two.json", _model("@cf/x/two", TEXT_IN, TEXT_OUT))
    build(schemas, out, "pkg_own")
    root = out / "pkg_own"
    (root / "NOTES.txt").write_text("mine\n", encoding="utf-8")
    (schemas / "@cf" / "x" / "two.json").unlink()
    result = build(schemas, out, "pkg_own")
    assert "models/cf/x/two.py" in result.removed and "NOTES.txt" not in result.removed
    assert not (root / "models" / "cf" / "x" / "two.py").exists()
    assert (root / "NOTES.txt").read_text(encoding="utf-8") == "mine\n"
    assert generate(schemas, out, "pkg_own", check=True).code == 0


# ----------------------------------------------------------------------------- B12 names and lines


@pytest.mark.parametrize("package", ["abc\n", "class", "a.class.b", "pkg.None"])
def test_package_names_must_be_importable(tmp_path: Path, package: str) -> None:
    result = generate(Path("schemas"), tmp_path / "out", package)
    assert result.code == 2 and "--package" in result.problems[0]
    assert not (tmp_path / "out").exists()


def test_a_problem_in_a_file_with_a_newline_in_its_name_stays_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "bad\nname\x1b.json").write_text("{", encoding="utf-8")
    assert main(["--schemas", str(schemas), "--out", str(tmp_path / "out"), "-q"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert "bad\\nname\\x1b.json: /: not valid JSON" in lines[0]


# ----------------------------------------------------------------------------- Q2 + Q3


def test_client_aliases_do_not_renumber_when_a_model_is_added(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    for name in ("a", "c"):
        write_schema(schemas, f"@cf/x/{name}.json", _model(f"@cf/x/{name}", TEXT_IN, TEXT_OUT))
    build(schemas, out, "pkg_alias")
    client = out / "pkg_alias" / "_client.py"
    before = client.read_text(encoding="utf-8").splitlines()
    write_schema(schemas, "@cf/x/b.json", _model("@cf/x/b", TEXT_IN, TEXT_OUT))
    build(schemas, out, "pkg_alias")
    after = client.read_text(encoding="utf-8").splitlines()
    assert set(before) <= set(after), sorted(set(before) - set(after))


def test_module_all_lists_every_struct_a_caller_builds(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    message = _obj({"role": {"type": "string"}, "content": {"type": "string"}}, ["role", "content"], title="Message")
    inp = _obj({"messages": {"type": "array", "items": {"$ref": "#/$defs/Message"}}}, ["messages"])
    inp["$defs"] = {"Message": message}
    write_schema(schemas, "@cf/x/chat.json", _model("@cf/x/chat", inp, TEXT_OUT, task="Text Generation"))
    build(schemas, out, "pkg_all")
    with importable(out, "pkg_all"):
        module = model_modules("pkg_all")["@cf/x/chat"]
        classes = {n for n, v in vars(module).items() if isinstance(v, type) and v.__module__ == module.__name__}
        assert classes <= set(module.__all__), sorted(classes - set(module.__all__))
        assert any("Message" in n for n in module.__all__)
        assert all(hasattr(module, n) for n in module.__all__)


def test_gitattributes_keeps_schema_bytes_stable() -> None:
    text = (Path(__file__).resolve().parent.parent / ".gitattributes").read_text(encoding="utf-8")
    assert "* text=auto eol=lf" in text.splitlines() and "*.json text eol=lf" in text.splitlines()
