"""Names: module paths, handle classes, struct and method names. One rule each, documented here.

Handle class names come from the last segment of the model id, in PascalCase, with ``_`` between two
number groups that would otherwise run together: ``m2m100-1.2b`` -> ``M2m100_1_2b``,
``llava-1.5-7b-hf`` -> ``Llava1_5_7bHf``, ``qwen3-30b-a3b-fp8`` -> ``Qwen3_30bA3bFp8``.
"""

from __future__ import annotations

import ast
import hashlib
import keyword
import re
from typing import TYPE_CHECKING

from .runtime_source import runtime_files

if TYPE_CHECKING:
    from .load import ModelSource

__all__ = [
    "KEY_VERBS",
    "RESERVED_METHODS",
    "RESERVED_NAMES",
    "TASK_VERBS",
    "assign_modules",
    "clean_title",
    "client_aliases",
    "handle_name",
    "pascal",
    "singular",
    "snake",
    "title_words",
]

KEY_VERBS = {"requests": "batch", "messages": "chat", "contexts": "rank"}
TASK_VERBS = {
    "text embeddings": "embed",
    "text generation": "generate",
    "text classification": "classify",
    "translation": "translate",
    "summarization": "summarize",
    "automatic speech recognition": "transcribe",
    "text-to-speech": "speak",
    "text-to-image": "generate_image",
    "image classification": "classify",
    "object detection": "detect",
    "image-to-text": "describe",
    "voice activity detection": "detect_turn",
}


def _handle_members() -> frozenset[str]:
    """Every name the runtime's ``ModelHandle`` defines (methods, class attributes, ``self.x`` in methods).

    Read from the runtime source with ``ast`` (the generator never imports the runtime package), so a
    member added there is never shadowed by a generated method. A test compares it with the real class.
    """
    # Every class of the runtime by name, then the sync and async handles and all their bases (mixins
    # included, wherever they live): a member added to any of them is reserved without listing it here.
    by_name: dict[str, ast.ClassDef] = {}
    for rel, data in runtime_files().items():
        if not rel.endswith(".py"):
            continue
        for node in ast.parse(data.decode("utf-8")).body:
            if isinstance(node, ast.ClassDef):
                by_name.setdefault(node.name, node)
    classes: list[ast.ClassDef] = []
    todo = ["ModelHandle", "AsyncModelHandle"]
    while todo:
        cls = by_name.get(todo.pop())
        if cls is None or cls in classes:
            continue
        classes.append(cls)
        for base in cls.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            if isinstance(target, ast.Name):
                todo.append(target.id)
    names: set[str] = set()
    for cls in classes:
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
                for sub in ast.walk(node):
                    if (
                        isinstance(sub, ast.Attribute)
                        and isinstance(sub.ctx, ast.Store)
                        and isinstance(sub.value, ast.Name)
                        and sub.value.id == "self"
                    ):
                        names.add(sub.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    if not names:  # pragma: no cover - the runtime always defines it
        raise RuntimeError("the runtime (_handles/) defines no ModelHandle class")
    return frozenset(names)


# Names the handle base class already uses: a generated method (or its `_stream` form) never takes one.
RESERVED_METHODS = _handle_members()
# Names a model module binds besides its structs (imports and the template's own names): a handle,
# alias or struct must never take one of them.
RESERVED_NAMES = frozenset(
    {
        "annotations",
        "Any",
        "ClassVar",
        "TypeAlias",
        "Mapping",
        "Sequence",
        "Struct",
        "UNSET",
        "UnsetType",
        "ModelHandle",
        "AsyncModelHandle",
        "AsyncBatchJob",
        "AsyncStreamRequest",
        "TYPE_CHECKING",
        "ModelInfo",
        "OutputDecoder",
        "BatchJob",
        "BatchRequest",
        "EventStream",
        "BinaryInput",
        "BinaryOutput",
        "as_bytes",
        "as_base64",
        "as_uint8",
        "msgspec",
        "INFO",
        "DECODER",
        "Meta",
        "field",
        "Literal",
        "Annotated",
        # structured outputs and tools (issue 13)
        "Parsed",
        "ToolRun",
        "ToolLike",
        "TypeVar",
        "overload",
        "Callable",
        "response_format_payload",
        "tools_payload",
    }
)
_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+|[A-Z]+(?![a-z])")


def snake(text: str) -> str:
    s = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    if not s:
        s = "model"
    if s[0].isdigit():
        s = "m_" + s
    if keyword.iskeyword(s) or keyword.issoftkeyword(s):
        s += "_"
    return s


def pascal(text: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", text)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    if not out:
        out = "Model"
    if out[0].isdigit():
        out = "M" + out
    if keyword.iskeyword(out):  # None, True, False
        out += "Model"
    return out


def _segment(part: str) -> str:
    """One module path segment for one model id segment; long ones are cut (file names have limits)."""
    name = snake(part.lstrip("@"))
    if len(name) > 64:
        name = f"{name[:48].rstrip('_')}_{hashlib.sha256(part.encode()).hexdigest()[:8]}"
    return name


def assign_modules(sources: list[ModelSource], warnings: list[str]) -> dict[int, str]:
    """Give each model a module path; collisions are resolved deterministically and reported.

    Two ids that normalise to the same module, or a module that would sit where another model's
    package folder is (``@cf/a`` next to ``@cf/a/b``), get a suffix from a hash of the model id and
    the file's path below the schemas folder: stable across runs and machines, never an overwrite.
    """
    bases = {id(src): "models." + ".".join(_segment(p) for p in src.model_id.split("/")) for src in sources}
    folders = {base.rsplit(".", i)[0] for base in bases.values() for i in range(1, base.count("."))}
    modules: dict[int, str] = {}
    taken: dict[str, ModelSource] = {}
    for src in sources:
        base = name = bases[id(src)]
        other = taken.get(name)
        if other is not None or name in folders:
            suffix = hashlib.sha256(f"{src.model_id}\0{src.rel}".encode()).hexdigest()[:8]
            name = f"{base}_{suffix}"
            if other is None:
                what = f"a module name that is also the package folder of other models (`{base}`)"
                warnings.append(f"{src.file}: `{src.model_id}` has {what}; it is generated as `{name}`")
            else:
                same = other.model_id == src.model_id
                what = "the same model id" if same else "the same module name"
                warnings.append(
                    f"{src.file}: `{src.model_id}` and `{other.model_id}` ({other.file}) have {what}; "
                    f"this one is generated as `{name}`" + (" and `model()` keeps the first" if same else "")
                )
        taken[name] = src
        modules[id(src)] = name
    return modules


def client_aliases(modules: list[str]) -> dict[str, str]:
    """The name each model module is imported under by the clients' overloads (``models.cf.baai.bge_m3``
    -> ``_bge_m3``): its last segment, or its whole path below ``models`` where two modules share one.
    """
    last = [m.rpartition(".")[2] for m in modules]
    return {
        m: "_" + (name if last.count(name) == 1 else m.removeprefix("models.").replace(".", "__"))
        for m, name in zip(modules, last, strict=True)
    }


def title_words(title: str, model_id: str) -> set[str]:
    noise = {w.lower() for w in _WORD.findall(model_id.split("/")[-1])}
    noise |= {"input", "output", "ouput", "the", "a", "an", "and", "for", "of", "schema", "request", "response"}
    words = {w.lower() for w in _WORD.findall(title)} - noise
    words = {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words}
    # A conversation is a chat; a bare prompt is plain text (OpenAI-shaped models title their outputs so).
    return words | {_TITLE_ALIASES[w] for w in words if w in _TITLE_ALIASES}


_TITLE_ALIASES = {"message": "chat", "prompt": "text"}


def clean_title(title: str, model_id: str) -> str:
    model_words = {w.lower() for w in _WORD.findall(model_id.split("/")[-1])}
    words = [w for w in _WORD.findall(title) if w.lower() not in model_words | {"input", "output", "ouput"}]
    return pascal(" ".join(words))


def handle_name(model_id: str) -> str:
    """The handle class for a model id: PascalCase of its last segment, ``_`` between two number groups.

    Words are split on anything that is not a letter or digit and capitalised; where one word ends with
    a digit and the next starts with one, a ``_`` keeps the two numbers apart (``1.2b`` -> ``1_2b``).
    """
    words = [w for w in re.split(r"[^0-9A-Za-z]+", model_id.split("/")[-1]) if w]
    out = ""
    for w in words:
        if out and out[-1].isdigit() and w[0].isdigit():
            out += "_"
        out += w[:1].upper() + w[1:]
    if not out:
        out = "Model"
    if out[0].isdigit():
        out = "M" + out
    if keyword.iskeyword(out):
        out += "Model"
    return out


def singular(word: str) -> str:
    """``Messages`` -> ``Message``, ``Entries`` -> ``Entry`` (good enough for property names)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word
