"""The models the emulator serves: the package's generated registry plus any extra schema files.

Schemas are read lazily, one model at a time, the first time a request needs it, so the emulator
starts without touching the (possibly many) schema files.
"""

from __future__ import annotations

import gzip
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .. import _registry
from .._core.jsonview import as_list, as_object
from ._leniency import loosen
from ._synth import Synthesizer, input_variants
from ._validate import Validator

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = ["EXAMPLE_SKIP", "Catalog", "ModelSpec", "model_object"]

EXAMPLE_SKIP = frozenset({"stream", "lora", "response_format", "guided_json"})
"""Input fields example inputs leave out: ``stream`` changes the kind of reply, ``lora`` needs a LoRA-capable
model and an uploaded adapter (405/5005 otherwise, like the API), and with ``response_format`` or ``guided_json``
the reply's
``response`` is an object, which the published output schemas (typing it as a string) do not describe."""

_PACKAGE = __package__.rpartition(".")[0] if __package__ else "workers_ai"
_NAMESPACE = uuid.UUID("7f1c0c5e-8a0e-4d0b-9a57-0d1c2d3e4f50")

Loader = Callable[[], Mapping[str, Any]]


def stable_id(name: str) -> str:
    """A uuid5 that stays the same for the same name, like the catalog's model and task ids."""
    return str(uuid.uuid5(_NAMESPACE, name))


class ModelSpec:
    """One model: its catalog document, and (built on first use) validators and synthesizers."""

    def __init__(self, model_id: str, doc: Mapping[str, Any]) -> None:
        self.model_id = model_id
        self.doc: dict[str, Any] = dict(doc)
        schema = as_object(self.doc.get("schema"))
        if schema is None and "input" in self.doc and "output" in self.doc:
            schema = {"input": self.doc["input"], "output": self.doc["output"]}  # bare models/schema form
        self.input_schema: Any = (schema or {}).get("input") or {}
        self.output_schema: Any = (schema or {}).get("output") or {}
        self._lock = threading.Lock()
        self._input: Synthesizer | None = None
        self._output: Synthesizer | None = None

    def __repr__(self) -> str:
        return f"<ModelSpec {self.model_id}>"

    @property
    def task(self) -> dict[str, Any]:
        raw = self.doc.get("task")
        task = as_object(raw)
        if task is not None:
            return task
        return {"name": raw} if isinstance(raw, str) else {}

    @property
    def task_name(self) -> str:
        name = self.task.get("name")
        return name if isinstance(name, str) else ""

    @property
    def properties(self) -> dict[str, Any]:
        """The catalog's ``[{property_id, value}]`` list as a dict."""
        out: dict[str, Any] = {}
        raw = self.doc.get("properties")
        for entry in as_list(raw) or []:
            e = as_object(entry)
            if e is not None and isinstance(e.get("property_id"), str):
                out[cast(str, e["property_id"])] = e.get("value")
        return out

    @property
    def inputs(self) -> Synthesizer:
        """Validator and synthesizer of the input schema, loosened where the platform is (see ``_leniency``)."""
        with self._lock:
            if self._input is None:
                self._input = Synthesizer(validator=Validator(loosen(self.input_schema)))
            return self._input

    @property
    def outputs(self) -> Synthesizer:
        """Validator and synthesizer of the output schema."""
        with self._lock:
            if self._output is None:
                self._output = Synthesizer(validator=Validator(self.output_schema))
            return self._output

    def example_input(self, variant: str | None = None, *, seed: str = "example") -> Any:
        """A valid (synthesized) input; ``variant`` picks a branch by title or label."""
        variants = [(label, s) for label, s in input_variants(self.inputs) if label != "binary"]
        if variant is not None:
            variants = [(label, s) for label, s in variants if label.lower() == variant.lower()]
            if not variants:
                labels = ", ".join(label for label, _ in input_variants(self.inputs))
                raise ValueError(f"{self.model_id} has no input variant {variant!r} (variants: {labels})")
        if not variants:
            raise ValueError(f"{self.model_id} takes only a binary body")
        return self.inputs.generate(variants[0][1], seed=seed, skip=EXAMPLE_SKIP)

    @property
    def accepts_binary(self) -> bool:
        """Whether the input schema has a ``{type: string, format: binary}`` branch (a raw body)."""
        return _has_binary_branch(self.input_schema)


def _has_binary_branch(schema: Any) -> bool:
    obj = as_object(schema)
    if obj is None:
        return False
    if obj.get("type") == "string" and obj.get("format") == "binary":
        return True
    for key in ("oneOf", "anyOf"):
        branches = obj.get(key)
        if any(_has_binary_branch(b) for b in as_list(branches) or []):
            return True
    return False


def model_object(spec: ModelSpec) -> dict[str, Any]:
    """The model as ``models/search`` lists it."""
    task = spec.task
    task_name = spec.task_name
    props: list[dict[str, Any]] = []
    raw = spec.doc.get("properties")
    for entry in as_list(raw) or []:
        e = as_object(entry)
        if e is not None:
            props.append(e)
    tags = spec.doc.get("tags")
    source = spec.doc.get("source")
    return {
        "id": spec.doc.get("id") if isinstance(spec.doc.get("id"), str) else stable_id(spec.model_id),
        "source": source if isinstance(source, int) else (2 if spec.model_id.startswith("@hf/") else 1),
        "name": spec.model_id,
        "description": spec.doc.get("description") if isinstance(spec.doc.get("description"), str) else "",
        "task": {
            "id": task.get("id") if isinstance(task.get("id"), str) else stable_id("task:" + task_name),
            "name": task_name,
            "description": task.get("description") if isinstance(task.get("description"), str) else "",
        },
        "tags": list(as_list(tags) or []),
        "properties": props,
    }


def _read_json(read: Callable[[], str], where: str) -> dict[str, Any]:
    try:
        data = json.loads(read())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{where}: cannot read model schema: {exc}") from None
    obj = as_object(data)
    if obj is None:
        raise ValueError(f"{where}: a model schema file must hold a JSON object")
    return obj


def _file_loader(ref: Traversable, model_id: str) -> Loader:
    def load() -> Mapping[str, Any]:
        return _read_json(lambda: gzip.decompress(ref.read_bytes()).decode(), f"schema of {model_id}")

    return load


class Catalog:
    """Model id -> lazily loaded :class:`ModelSpec`."""

    def __init__(self) -> None:
        self._loaders: dict[str, Loader] = {}
        self._specs: dict[str, ModelSpec] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_package(cls, only: Iterable[str] | None = None) -> Catalog:
        """The models this package was generated for (their schemas ship in ``_schemas/``)."""
        cat = cls()
        wanted = set(only) if only is not None else None
        base = resources.files(_PACKAGE) / "_schemas"
        for model_id, (module, _handle) in _registry.MODELS.items():
            if wanted is not None and model_id not in wanted:
                continue
            parts = module.split(".")
            ref = base
            for part in parts[:-1]:
                ref = ref / part
            ref = ref / (parts[-1] + ".json.gz")
            cat.add_loader(model_id, _file_loader(ref, model_id))
        return cat

    def add_loader(self, model_id: str, loader: Loader) -> None:
        with self._lock:
            self._loaders[model_id] = loader
            self._specs.pop(model_id, None)

    def add(self, model_id: str, doc: Mapping[str, Any]) -> None:
        """Serve ``model_id`` from a catalog-form document (``{..., schema: {input, output}}``) or a bare one."""
        frozen = dict(doc)
        self.add_loader(model_id, lambda: frozen)

    def add_dir(self, folder: str | Path) -> list[str]:
        """Serve every ``*.json`` model schema below ``folder``; the id is the file's ``name``, else its path."""
        root = Path(folder)
        if not root.is_dir():
            raise ValueError(f"{root}: not a folder of model schemas")
        added: list[str] = []
        for path in sorted(root.rglob("*.json")):
            doc = _read_json(path.read_text, str(path))
            name = doc.get("name")
            model_id = name if isinstance(name, str) and name else path.relative_to(root).with_suffix("").as_posix()
            if not (as_object(doc.get("schema")) or ("input" in doc and "output" in doc)):
                continue
            self.add(model_id, doc)
            added.append(model_id)
        return added

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._loaders)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._loaders

    def get(self, model_id: str) -> ModelSpec | None:
        with self._lock:
            spec = self._specs.get(model_id)
            loader = self._loaders.get(model_id)
        if spec is not None or loader is None:
            return spec
        spec = ModelSpec(model_id, loader())
        with self._lock:
            return self._specs.setdefault(model_id, spec)
