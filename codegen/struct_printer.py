"""datamodel-code-generator, the struct printer: a module's struct block from the document the plan built.

It runs in this process through the generator's Python API (its import costs ~0.4 s, then ~15 ms a
module), only when a module's struct block is not on disk already: a module written before with the same
key (:mod:`.struct_cache`), unedited, gives its struct classes back as they are.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .struct_cache import reusable_code, sha
from .structs import StructPlan

__all__ = ["StructPrinter", "struct_key"]

_HERE = Path(__file__).parent
_TEMPLATE = _HERE / "templates" / "structs" / "msgspec.jinja2"


class StructPrinter:
    """Prints the struct blocks of one run. ``cached`` maps module paths to their text on disk."""

    def __init__(self, cached: Mapping[str, str] | None = None) -> None:
        self._cached = cached or {}
        self._generate: Any = None
        self._options: dict[str, Any] = {}
        self._generator = _generator_key()

    def code(self, doc: str, structs: tuple[StructPlan, ...], rel: str) -> tuple[str, str]:
        """The struct block of the module at ``rel``, datamodel-code-generator's code verbatim, and its key.

        A module already on disk with the same key, unedited, gives its struct classes back without
        running the generator.
        """
        key = struct_key(doc, structs, self._generator)
        names = {s.name for s in structs} | {a for s in structs for a in s.alias_names}
        code = reusable_code(self._cached.get(rel), key, names)
        if code is None:
            code = self._print(doc, _aliases(structs)) if doc else "from __future__ import annotations"
            code = code if code.endswith("\n") else code + "\n"  # verbatim, ending its last line
        return code, key

    def _print(self, doc: str, aliases: dict[str, str]) -> str:
        generate = self._generate or self._load()  # importing the generator costs ~0.4 s: only when needed
        limit = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(max(limit, 6000))  # deeply nested schemas recurse deeply in the generator
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # it warns of every untagged union; our dispatch rules exist for those
                out = generate(doc, aliases=aliases or None, **self._options)
        finally:
            sys.setrecursionlimit(limit)
        assert isinstance(out, str)
        return out

    def _load(self) -> Any:
        from datamodel_code_generator import generate
        from datamodel_code_generator.enums import DataModelType, InputFileType
        from datamodel_code_generator.format import Formatter, PythonVersion

        self._generate = generate
        self._options = dict(
            input_file_type=InputFileType.JsonSchema,
            output_model_type=DataModelType.MsgspecStruct,
            target_python_version=PythonVersion.PY_310,
            use_annotated=True,
            use_union_operator=True,
            use_standard_collections=True,
            enum_field_as_literal="all",
            use_title_as_name=True,
            strict_nullable=True,  # `nullable: true` on an optional output field -> `T | None = None`
            reuse_model=False,
            keyword_only=True,
            base_class="msgspec.Struct",
            extra_template_data={"#all#": {"base_class_kwargs": {"omit_defaults": True}}},
            use_exact_imports=True,
            use_double_quotes=True,
            disable_timestamp=True,
            use_schema_description=False,
            formatters=[Formatter.BUILTIN],
            custom_template_dir=_TEMPLATE.parent,  # our struct template: output fields carry their prose
            field_extra_keys={"x-doc"},
        )
        return generate


def _aliases(structs: Iterable[StructPlan]) -> dict[str, str]:
    """The Python name of every field whose wire name is not one (``Struct.class`` -> ``class_``)."""
    return {f"{s.name}.{f.wire}": f.name for s in structs for f in s.fields if f.name != f.wire}


def _generator_key() -> str:
    """What besides the document decides the printer's output: its version and our options (this file)."""
    try:
        from importlib.metadata import version

        dcg = version("datamodel-code-generator")
    except Exception:  # pragma: no cover - only without package metadata
        dcg = "?"
    ours = [Path(__file__), _HERE / "tidy.py", _TEMPLATE]
    return sha(dcg + "".join(path.read_text(encoding="utf-8") for path in ours))


def struct_key(doc: str, structs: tuple[StructPlan, ...], generator: str) -> str:
    """What the struct block of a module is printed from, as a key (see :mod:`.struct_cache`)."""
    return sha(f"{generator}\0{doc}\0{json.dumps(_aliases(structs), sort_keys=True)}")[:24]
