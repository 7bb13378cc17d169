"""What several models declare alike is printed once, by content, in one folder: ``models/_shapes/``.

One rule at two sizes. A shape (``records.Shape``: every type and method of a model) is printed once, in
``models/_shapes/<task>_<six letters of its key>.py``, and every model of that shape subclasses its
handles. A struct two or more models of one task declare alike (``StructPlan.key``: its whole text and that
of every struct it uses) is printed once, in ``models/_shapes/<task>_types.py``, and the shapes that use it
import it from there. What only one model declares stays in its shape's module.

Names are per module, so two different structs of one name (two ``Message`` forms) cannot share a module:
structs are placed in content order (name, then key), each in the first types module of its task where
its name is free (at or after the modules of the structs it uses, which it imports); a module opened for a
name already taken is ``<task>_types_<six letters of that struct's key>``, never a counter. Placement reads
content only, never how many models use a shape, so a new model that only repeats shared structs (or only
has its own) changes its own module and the indexes that list models, and nothing else
(``tests/codegen/test_dropin_footprint.py``); one that brings a new struct of a shared name can move that
name's later structs, the one case that touches neighbours. A struct is shared only when every struct it
uses is; the reply to a queued request is the runtime's (``_core.decode.AsyncResponse``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .draft import ModelDraft
from .module_imports import shape_module, shared_module
from .naming import snake
from .plan_base import PlanError
from .records import ModelFacts, ModelPlan, ShapeModule, SharedPlan
from .structs import StructPlan

__all__ = ["RUNTIME_STRUCTS", "Placed", "letters", "share"]

# The reply to a queued request, ``{"request_id": str}``, is one struct of the runtime (``_core.decode``), not
# a shared module's: a shape imports it from a module its handles load anyway, never a shared module whose
# other structs it does not use.
RUNTIME_STRUCTS = "_core.decode"
# The one folder of what several models share: shape modules and shared-struct modules.
SHAPES = "models._shapes"

_Id = tuple[str, str]  # a struct's (name, key)


@dataclass(frozen=True)
class Placed:
    """Every model with its shape's module, every shape module and every shared module."""

    models: tuple[ModelPlan, ...]
    shapes: tuple[ShapeModule, ...]
    shared: tuple[SharedPlan, ...]


def share(drafts: list[ModelDraft], package: str) -> Placed:
    """Place every shape and every shared struct (see the module docstring)."""
    where: dict[_Id, str] = {}  # a shared struct -> its module
    shared: list[SharedPlan] = []
    for task, group in _by_task(drafts):
        placed, plans = _place_structs(task, group, package)
        where.update(placed)
        shared += plans
    shapes: dict[str, ShapeModule] = {}
    models: list[ModelPlan] = []
    for d in drafts:
        home = shapes.get(d.shape.key)
        if home is None:
            home = shapes[d.shape.key] = _shape_module(d, where, package)
        models.append(_model(d, home))
    names = [s.module for s in shapes.values()]
    if len(set(names)) != len(names):  # pragma: no cover - six letters of two different keys alike
        raise PlanError("", f"two shape modules would have one name: {sorted(names)}")
    return Placed(tuple(models), tuple(sorted(shapes.values(), key=lambda s: s.module)), tuple(shared))


def letters(key: str) -> str:
    """Six letters from a content key (hex digits 0-f as a-p): a module name part that reads as no number,
    so it is never taken for a counter."""
    return "".join(chr(ord("a") + int(c, 16)) for c in key[:6])


def _by_task(drafts: list[ModelDraft]) -> list[tuple[str, list[ModelDraft]]]:
    by_task: dict[str, list[ModelDraft]] = {}
    for d in drafts:
        by_task.setdefault(snake(d.shape.task or "other"), []).append(d)
    return sorted(by_task.items())


def _is_runtime_struct(st: StructPlan) -> bool:
    return (
        st.name == "AsyncResponse"
        and not st.twin
        and not st.view
        and [(f.name, f.wire, f.declared) for f in st.fields] == [("request_id", "request_id", "str")]
    )


def _shape_module(d: ModelDraft, where: dict[_Id, str], package: str) -> ShapeModule:
    """The module of ``d``'s shape: its structs no shared module holds, the others imported."""
    shape = d.shape
    module = f"{SHAPES}.{snake(shape.task or 'other')}_{letters(shape.key)}"
    local: list[StructPlan] = []
    imported: dict[str, set[str]] = {}
    runtime: list[str] = []
    for st in shape.structs:
        if _is_runtime_struct(st):
            runtime.append(st.name)
        elif (st.name, st.key) in where:
            imported.setdefault(where[(st.name, st.key)], set()).update([st.name, *([st.twin] if st.twin else [])])
        else:
            local.append(st)
    pairs = tuple((mod, tuple(sorted(names))) for mod, names in sorted(imported.items()))
    pairs += ((RUNTIME_STRUCTS, tuple(runtime)),) if runtime else ()
    return shape_module(module, shape, tuple(local), pairs, package, d.source.file)


def _model(d: ModelDraft, home: ShapeModule) -> ModelPlan:
    facts = {f.name: getattr(d, f.name) for f in fields(ModelFacts)}
    return ModelPlan(**facts, shape_module=home)


def _place_structs(task: str, group: list[ModelDraft], package: str) -> tuple[dict[_Id, str], list[SharedPlan]]:
    """The shared structs of one task: where each goes, and the shared modules."""
    counts: dict[_Id, int] = {}
    specimen: dict[_Id, StructPlan] = {}
    dep_keys: dict[_Id, set[_Id]] = {}
    for d in group:
        own = {st.name: st.key for st in d.shape.structs}
        for st in d.shape.structs:
            if _is_runtime_struct(st):
                continue
            counts[(st.name, st.key)] = counts.get((st.name, st.key), 0) + 1
            specimen.setdefault((st.name, st.key), st)
            dep_keys[(st.name, st.key)] = {(dep, own.get(dep, "")) for dep in st.deps if dep != st.name}
    slot_of, openers = _slots({k for k, n in counts.items() if n >= 2}, dep_keys)
    modules = [f"{SHAPES}.{task}_types"] + [f"{SHAPES}.{task}_types_{letters(key)}" for _, key in openers[1:]]
    if len(set(modules)) != len(modules):
        raise PlanError("", f"two shared {task} modules would have one name: {sorted(modules)}")
    held: dict[int, dict[str, StructPlan]] = {}
    for k, slot in slot_of.items():
        held.setdefault(slot, {})[k[0]] = specimen[k]
    plans: list[SharedPlan] = []
    for i, structs in sorted(held.items()):
        ordered = tuple(st for _, st in sorted(structs.items()))
        outside: dict[str, set[str]] = {}
        for st in ordered:
            for dep in dep_keys[(st.name, st.key)]:
                if slot_of[dep] != i:
                    twin = specimen[dep].twin
                    outside.setdefault(modules[slot_of[dep]], set()).update([dep[0], *([twin] if twin else [])])
        plans.append(shared_module(modules[i], task, ordered, package, outside))
    return {k: modules[slot] for k, slot in slot_of.items()}, plans


def _slots(candidates: set[_Id], dep_keys: dict[_Id, set[_Id]]) -> tuple[dict[_Id, int], list[_Id]]:
    """Which shared module each shareable ``(name, key)`` goes to, and the struct that opened each module.

    In content order, each goes to the first module where its name is free, at or after the modules of
    the structs it uses (imported from there, so those names must be free too). Nothing here depends on
    how many models declare a struct, so a model that adds no new shared struct moves nothing.
    """
    where: dict[_Id, int] = {}
    openers: list[_Id] = []
    declared: list[set[str]] = []
    imported: list[dict[str, str]] = []
    pending = sorted(candidates)
    progress = True
    while pending and progress:
        progress = False
        for k in list(pending):
            deps = dep_keys[k]
            if not deps <= candidates:
                pending.remove(k)  # it uses a struct no other model declares alike: stays in its shape
                progress = True
                continue
            if not all(d in where for d in deps):
                continue  # placed once its dependencies are (a cycle is never placed: it stays local)
            pending.remove(k)
            progress = True
            # Shared modules import only from modules placed before them, so never in a circle.
            for slot in range(max((where[d] for d in deps), default=0), len(declared) + 1):
                if slot == len(declared):
                    declared.append(set())
                    imported.append({})
                    openers.append(k)
                outside = [d for d in deps if where[d] != slot]
                if k[0] in declared[slot] or k[0] in imported[slot]:
                    continue
                if any(d[0] in declared[slot] or imported[slot].get(d[0], d[1]) != d[1] for d in outside):
                    continue
                declared[slot].add(k[0])
                imported[slot].update(outside)
                where[k] = slot
                break
    return where, openers
