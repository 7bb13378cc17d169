"""Step 2 of the pipeline: decide everything about the package before anything is printed.

:func:`plan_package` builds the :class:`PackagePlan` ``render`` prints, in named steps:

1. ``naming.assign_modules``: each model's module path (collisions resolved and reported);
2. ``draft.draft_model``: each model's own facts and its shape (types, methods, decoder rules), complete;
3. ``share.share``: what several models declare alike, printed once: a shape module per distinct shape,
   shared modules for the structs several models declare alike; what only one declares stays in its shape;
4. :func:`_listed` and :func:`_client`: the models the indexes list, and the clients' overloads (``model()``
   per model, ``run()`` per shape, the handle classes imported by name or under their module's alias).

The records are in ``records``; the work is split by job: ``naming`` (module paths, handle and method
names), ``reshape`` (schema normalisation msgspec can decode), ``variants`` (alternatives, method names,
pairing, dispatch rules), ``structs`` (named types and their one annotation each), ``methods`` and ``draft``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .draft import ModelDraft, draft_model
from .load import ModelSource
from .naming import RESERVED_METHODS, RESERVED_NAMES, assign_modules, client_aliases
from .plan_base import PlanError
from .records import (
    ClientPlan,
    MethodPlan,
    ModelPlan,
    OutputPlan,
    PackagePlan,
    ParamPlan,
    RunGroup,
    SharedPlan,
)
from .share import share

__all__ = [
    "RESERVED_METHODS",
    "RESERVED_NAMES",
    "MethodPlan",
    "ModelPlan",
    "OutputPlan",
    "PackagePlan",
    "ParamPlan",
    "PlanError",
    "SharedPlan",
    "plan_models",
    "plan_package",
]

# Names the client modules bind besides the handle classes they import for model()'s overloads.
CLIENT_NAMES = frozenset(
    {"Any", "Literal", "Mapping", "TYPE_CHECKING", "overload", "Coroutine", "Unpack", "annotations"}
    | {"BaseClient", "AsyncBaseClient", "ModelHandle", "AsyncModelHandle", "WorkersAI", "AsyncWorkersAI"}
    | {"BatchJob", "AsyncBatchJob", "EventStream", "AsyncStreamRequest", "AnyRun", "DecodedRun", "RunOptions"}
)


def plan_package(sources: Iterable[ModelSource], warnings: list[str], package: str = "workers_ai") -> PackagePlan:
    """The plan of the whole package (models sorted by id). Raises :class:`PlanError` for a schema that
    cannot be planned."""
    ordered = sorted(sources, key=lambda s: (s.model_id, s.rel))
    modules = assign_modules(ordered, warnings)
    drafts = [draft_model(src, modules[id(src)], warnings, package) for src in ordered]
    _refuse_live_clashes(drafts)
    placed = share(drafts, package)
    listed = _listed(placed.models)
    return PackagePlan(package, placed.models, listed, placed.shapes, placed.shared, _client(listed))


def plan_models(
    sources: Iterable[ModelSource], warnings: list[str], package: str = "workers_ai"
) -> tuple[list[ModelPlan], list[SharedPlan]]:
    """The models' plans and the shared modules (what the per-model reference reads)."""
    plan = plan_package(sources, warnings, package)
    return list(plan.models), list(plan.shared)


def _refuse_live_clashes(drafts: list[ModelDraft]) -> None:
    taken = {d.module for d in drafts}
    for d in drafts:
        if d.realtime is not None and d.realtime.module in taken:
            raise PlanError(d.source.file, f"{d.realtime.module} would be written twice (a model has that module name)")


def _listed(models: tuple[ModelPlan, ...]) -> tuple[ModelPlan, ...]:
    """One model per id (a repeated id keeps its first module: ``assign_modules`` warned about it)."""
    seen: set[str] = set()
    listed: list[ModelPlan] = []
    for p in models:
        if p.model_id not in seen:
            seen.add(p.model_id)
            listed.append(p)
    return tuple(listed)


def _client(listed: tuple[ModelPlan, ...]) -> ClientPlan:
    """``run()`` takes and gives the same types for every model of one shape: one overload per shape (its
    model ids in one ``Literal``). ``model()``'s overloads return the handle classes, imported by name; under
    the module's alias where two models share a name or it is one the client modules bind besides."""
    by_shape: dict[str, list[str]] = {}
    for p in listed:
        by_shape.setdefault(p.shape_module.module, []).append(p.model_id)
    runs = tuple(
        RunGroup("_shape_" + module.rpartition(".")[2], module, tuple(ids)) for module, ids in sorted(by_shape.items())
    )
    aliases = client_aliases([p.module for p in listed])
    counts: dict[str, int] = {}
    for p in listed:
        counts[p.handle] = counts.get(p.handle, 0) + 1
    aliased = tuple(
        (p.module, aliases[p.module])
        for p in listed
        if counts[p.handle] > 1 or {p.handle, p.async_handle} & CLIENT_NAMES
    )
    return ClientPlan(runs, aliased)
