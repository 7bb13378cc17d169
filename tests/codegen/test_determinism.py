"""The same schemas give the same output: ``--check`` renders fresh, the schemas folder name does not
matter, client aliases stay stable, schema bytes stay stable in git.
"""

from __future__ import annotations

import ast
from pathlib import Path

from codegen.cli import generate
from tests._codegen_util import build, codegen_cli, tree, write_schema
from tests.codegen._schemas import TEXT_IN, TEXT_OUT, _model


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
    # run() has one overload per shape, listing its model ids: that list grows; no other line moves.
    gone = sorted(set(before) - set(after))
    assert gone == ['            model_id: Literal["@cf/x/a", "@cf/x/c"],'], gone
    assert '            model_id: Literal["@cf/x/a", "@cf/x/b", "@cf/x/c"],' in after


def test_gitattributes_keeps_schema_bytes_stable() -> None:
    text = (Path(__file__).resolve().parents[2] / ".gitattributes").read_text(encoding="utf-8")
    assert "* text=auto eol=lf" in text.splitlines() and "*.json text eol=lf" in text.splitlines()


def test_client_aliases_are_module_names_and_whole_paths_where_two_share_one(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    for model_id in ("@cf/x/one", "@cf/y/one", "@cf/x/two"):
        write_schema(schemas, f"{model_id}.json", _model(model_id, TEXT_IN, TEXT_OUT))
    build(schemas, out, "pkg_same")
    for name in ("_client.py", "_aio_client.py"):
        prefix = "Async" if name == "_aio_client.py" else ""
        tree_ = ast.parse((out / "pkg_same" / name).read_text(encoding="utf-8"))
        # The handle classes by name; where two models share one, under the module's whole path.
        imported = {
            a.asname or a.name: f"{node.module}.{a.name}"
            for node in ast.walk(tree_)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models.")
            for a in node.names
            if not node.module.startswith("models._shapes")  # run()'s types, one module per shape
        }
        assert imported == {
            f"_cf__x__one_{prefix}One": f"models.cf.x.one.{prefix}One",
            f"_cf__y__one_{prefix}One": f"models.cf.y.one.{prefix}One",
            f"{prefix}Two": f"models.cf.x.two.{prefix}Two",
        }
        (cls,) = [n for n in ast.walk(tree_) if isinstance(n, ast.ClassDef)]  # under ``if TYPE_CHECKING:``
        returns = {
            ast.unparse(fn.args.args[1].annotation): ast.unparse(fn.returns)
            for fn in ast.walk(cls)
            if isinstance(fn, ast.FunctionDef) and fn.name == "model" and fn.returns is not None
        }
        assert returns["Literal['@cf/x/one']"] == f"_cf__x__one_{prefix}One"
        assert returns["Literal['@cf/y/one']"] == f"_cf__y__one_{prefix}One"
        assert returns["Literal['@cf/x/two']"] == f"{prefix}Two"
