"""What a shape module and a shared-struct module import and export, read from what they print.

Each import line follows from a name the module's printed text uses (a struct's TypedDict twin, a method's
types, a handle base), so nothing is imported that is not used; ``__all__`` lists every type a caller may
build or read, the shared ones too (a model module re-exports its shape's ``__all__``).
"""

from __future__ import annotations

from collections.abc import Iterable

from .plan_base import merge_imports
from .records import SHAPE_INPUT, SHAPE_OUTPUT, Shape, ShapeModule, SharedPlan
from .struct_schema import struct_document
from .structs import StructPlan, TwinLayout, names_in, twin_layout, twin_with_required

__all__ = ["shape_module", "shared_module"]

RUNTIME = "_core.decode"  # where the runtime's own structs live (the reply to a queued request)


def shape_module(
    module: str,
    shape: Shape,
    local: tuple[StructPlan, ...],
    imported: tuple[tuple[str, tuple[str, ...]], ...],
    package: str,
    file: str,
) -> ShapeModule:
    """The module printing ``shape``: its ``local`` structs, the rest ``imported`` (module, names)."""
    up = "." * (module.count(".") + 1)  # models._shapes.x sits 3 levels below the package
    texts = _twin_texts(local) + [a.annotation for a in shape.aliases]
    for m in shape.methods:
        # What the module prints: a method's own Params keys, its leading and JSON-mode parameters.
        printed = m.params if m.params_own else [*m.leading, *([m.response_format] if m.response_format else [])]
        printed = [] if m.runtime_batch else printed  # its base names only the request and reply types
        texts += [prm.typed for prm in printed] + [m.returns, m.batch_item]
        texts += [shape.tool_loop[0]] if m.runs_tools and shape.tool_loop else []
        texts += [text for item, out, _ in m.batch_variants for text in (item, out)]
    type_only = _type_only_imports(shape, up)
    need = _typing_imports(texts, local)
    need.setdefault("typing", set()).update({"TypeAlias", "Any"})
    if type_only:
        need["typing"].add("TYPE_CHECKING")
    bases = {name for name, _ in shape.handle_bases}
    need[f"{up}_core.decode"] = {"OutputDecoder", *(["Variant"] if shape.rules else [])}
    if "ModelHandle" in bases:
        need[f"{up}_handles.sync"] = {"ModelHandle"}
    if bases - {"ModelHandle"}:  # the runtime's run_tools() or batch methods: see _handles/typed_bases.py
        need[f"{up}_handles.typed_bases"] = {f"{pre}{name}" for name in bases for pre in ("", "Async")}
    if any(m.params_name for m in shape.methods):
        need[f"{up}_handles.ops"] = {"Op"}
    if any(m.params_name and m.params_own for m in shape.methods):
        need["typing"].add("TypedDict")
    if any(m.kind == "requests" and not m.runtime_batch for m in shape.methods):
        need.setdefault("collections.abc", set()).add("Sequence")
    if any(m.structured for m in shape.methods):
        need["typing"].update({"TypeVar", "overload"})
    if any(len(m.batch_variants) > 1 for m in shape.methods):
        need["typing"].add("overload")
    # The async twin: _aio_handle imports nothing heavy; its batch and stream types are TYPE_CHECKING imports.
    if "ModelHandle" in bases:
        need[f"{up}_handles.aio"] = {"AsyncModelHandle"}
    if any(m.kind == "json" for m in shape.methods):
        need.setdefault("", set()).add("msgspec")
    binary = (
        {"BinaryInput"}
        if any(m.kind == "binary" or any(x.binary for x in m.params) for m in shape.methods)
        else set[str]()
    )
    if shape.binary_outputs:
        binary.add("BinaryOutput")
    if binary:
        need[f"{up}_core.binary"] = binary
    for mod, names in imported:
        need.setdefault(f"{up}{mod}", set()).update(names)
    views = {a.annotation.split("[", 1)[0] for a in shape.aliases if a.wire}
    if views:
        need[f"{up}families"] = views
    exported = [*shape.input_members, *(o.class_name for o in shape.json_outputs if o.class_name)]
    for s in local:
        exported += [s.name, *([s.twin] if s.twin else [])]
    exported += [a.name for a in shape.aliases]
    # The keyword arguments' TypedDicts (``ChatParams``): a model module re-exports only what is listed here.
    exported += [m.params_name for m in shape.methods if m.params_name and m.params_own]
    for _mod, names in imported:
        exported += list(names)
    skip = {"ShapeHandle", "AsyncShapeHandle", SHAPE_INPUT, SHAPE_OUTPUT, "BinaryInput", "BinaryOutput"}
    twins = twin_layout(local)
    return ShapeModule(
        module=module,
        shape=shape,
        structs=local,
        imported=imported,
        imports=tuple(merge_imports(need)),
        type_only_imports=type_only,
        exported=tuple(n for n in dict.fromkeys(exported) if n not in skip),
        struct_doc=struct_document(local, {n: mod for mod, names in imported for n in names}, package),
        file=file,
        twins=twins,
        params_bases=_params_bases(shape, local, twins),
    )


def _params_bases(shape: Shape, local: tuple[StructPlan, ...], twins: TwinLayout) -> tuple[tuple[str, str], ...]:
    """Each keyword TypedDict of the shape's own that has required keys and a base (optional keys, or
    ``_CommonParams``) and whose required keys are a twin's, line for line: it extends that twin's base."""
    common = {p.name for p in shape.common_params}
    out: list[tuple[str, str]] = []
    for m in shape.methods:
        if not (m.params_name and m.params_own):
            continue
        required = [p for p in m.keywords if p.default is None]
        optional = [p for p in m.keywords if p.default is not None and p.name not in common]
        twin = twin_with_required(local, required, twins) if required and (optional or common) else None
        if twin:
            out.append((m.name, twin))
    return tuple(out)


def shared_module(
    module: str, task: str, structs: tuple[StructPlan, ...], package: str, outside: dict[str, set[str]]
) -> SharedPlan:
    """A shared module's plan; ``outside``: the names its structs use from shared modules placed before it."""
    need = _typing_imports(_twin_texts(structs), structs)
    up = "." * (module.count(".") + 1)
    for mod, names in outside.items():
        need[f"{up}{mod}"] = names
    exported = [n for s in structs for n in (s.name, *([s.twin] if s.twin else []))]
    doc = struct_document(structs, {n: mod for mod, names in outside.items() for n in names}, package)
    return SharedPlan(module, task, structs, tuple(merge_imports(need)), tuple(exported), doc, twin_layout(structs))


def _type_only_imports(shape: Shape, up: str) -> tuple[str, ...]:
    """Imports only annotations need (under ``TYPE_CHECKING``: never loaded at run time): ``Unpack``, the
    batch and stream types (they load with the first batch or stream, not with the model module) and
    the tool and JSON-mode result types."""
    lines: list[str] = []
    own_batch = any(m.kind == "requests" and not m.runtime_batch for m in shape.methods)
    if own_batch or any(m.params_name for m in shape.methods):
        lines.append("from typing_extensions import Unpack")
    if own_batch:
        lines.append(f"from {up}_batch.jobs import AsyncBatchJob, BatchItem, BatchJob, BatchRequest")
        lines.append(f"from {up}_batch.many import BatchManyOptions")
    if any(m.streams for m in shape.methods):
        lines.append(f"from {up}_aio.stream import AsyncStreamRequest")
        lines.append(f"from {up}_sync.stream import EventStream")
    if any(m.structured for m in shape.methods):
        lines.append(f"from {up}_tools.structured import Parsed")
    if any(m.tool_form for m in shape.methods):
        lines.append(f"from {up}_tools.tooldefs import ToolLike")
    return tuple(lines)


def _twin_texts(structs: Iterable[StructPlan]) -> list[str]:
    """What the template prints about structs: their TypedDict twins."""
    return [f.loose for s in structs if s.twin for f in s.fields]


def _typing_imports(texts: list[str], structs: Iterable[StructPlan]) -> dict[str, set[str]]:
    used = {n for t in texts for n in names_in(t)}
    need: dict[str, set[str]] = {}
    typing_names = {"Any", "Literal", "Annotated"} & used
    if any(s.twin for s in structs):
        typing_names.add("TypedDict")
    if typing_names:
        need.setdefault("typing", set()).update(typing_names)
    abc = {"Sequence", "Mapping"} & used
    if abc:
        need.setdefault("collections.abc", set()).update(abc)
    ms = {"Meta", "field", "UnsetType"} & used
    if ms:
        need.setdefault("msgspec", set()).update(ms)
    if "msgspec" in used:
        need.setdefault("", set()).add("msgspec")
    return need
