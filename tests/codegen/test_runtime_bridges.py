"""The runtime is type-checked where it lives (codegen/runtime) through two ``.pyi`` bridges standing in
for the modules only a generated package has: they are never copied, and the client bridge declares
exactly the model-independent overloads the client template renders."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "codegen" / "runtime"
PACKAGE = ROOT / "generated" / "workers_ai"
BRIDGES = ("_aio_client.pyi", "_client.pyi", "_listing.pyi", "_registry.pyi")


def test_the_bridges_stand_for_generated_modules_and_are_never_copied() -> None:
    assert sorted(p.name for p in RUNTIME.rglob("*.pyi")) == sorted(BRIDGES)
    for bridge in BRIDGES:
        assert (PACKAGE / bridge.replace(".pyi", ".py")).is_file()  # the real module is generated
        assert not (RUNTIME / bridge.replace(".pyi", ".py")).exists()  # and never written by hand
    assert not list(PACKAGE.rglob("*.pyi"))


def _signatures(path: Path, cls: str) -> list[str]:
    """``model``/``run`` signatures of ``cls`` whose ``model_id`` is a plain ``str``, bodies left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    found: list[str] = []
    # The generated client keeps its overloads under ``if TYPE_CHECKING:`` (none made at import).
    body = [
        s
        for n in node.body
        for s in (n.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING" else [n])
    ]
    for fn in body:
        if not isinstance(fn, ast.FunctionDef) or fn.name not in ("model", "run"):
            continue
        model_id = fn.args.args[1].annotation
        if not (isinstance(model_id, ast.Name) and model_id.id == "str"):
            continue
        returns = ast.unparse(fn.returns) if fn.returns else ""
        overload = any(ast.unparse(d) == "overload" for d in fn.decorator_list)
        found.append(f"{'@overload ' if overload else ''}{fn.name}({ast.unparse(fn.args)}) -> {returns}")
    return found


def test_the_client_bridge_matches_the_generated_model_independent_overloads() -> None:
    generated = _signatures(PACKAGE / "_client.py", "WorkersAI")
    bridge = _signatures(RUNTIME / "_client.pyi", "WorkersAI")
    assert len(bridge) == 4, bridge  # model() and three run() overloads
    # The generated client repeats the last overload as its implementation; `model` is not overloaded
    # in the bridge since it has one signature there.
    implementation = [s for s in generated if not s.startswith("@overload")]
    assert [s.removeprefix("@overload ") for s in bridge if s.startswith("run") or "@overload run" in s] == [
        s.removeprefix("@overload ") for s in generated if s.startswith("@overload run")
    ]
    assert [s for s in bridge if s.startswith("model")] == [s for s in implementation if s.startswith("model")]


def test_the_clients_implementations_resolve_their_annotations_at_run_time() -> None:
    # The overloads' names are imported for type checkers only; what the implementations name is real, so
    # introspection (typing.get_type_hints, as framework adapters use it) works on both clients.
    import typing

    from workers_ai import AsyncWorkersAI, WorkersAI

    for cls in (WorkersAI, AsyncWorkersAI):
        hints = typing.get_type_hints(cls.run)
        assert set(hints) == {"model_id", "payload", "stream", "queue_request", "headers", "session_affinity", "return"}
        assert typing.get_type_hints(cls.model)["return"].__origin__.__name__.endswith("ModelHandle")
