"""The rules that turn a published model schema into the shape our ``schemas/`` files state.

``python -m codegen.sync adopt`` (a published catalog file -> our file) and ``workers-ai sync`` (the live
``models/schema`` -> our file) apply the same rules, in this order:

1. **Prose out.** Every ``description``, ``title``, ``examples`` and ``$comment`` is removed from both
   schemas: they are the publisher's words, not facts of the API. (``prose`` adds our own.)
2. **Publishing slips repaired**, each with a note in the file's ``x-notes``:
   a ``required`` list sitting inside ``properties`` becomes the object's ``required``; a schema that
   declares ``properties`` but no ``type`` is an object (published, it matched strings, numbers and a
   batch's ``requests`` list of anything); a batch branch
   (a root branch whose only property is ``requests``) requires ``requests``; a model that takes such a
   batch but publishes no output branch for the queued reply gets one (``{request_id}``); a Text
   Embeddings output ``shape`` declared as an array of ``number`` becomes an array of ``integer`` (the
   API returns ``[count, dimension]`` as integers; ``number`` would decode as floats); plus the
   per-model repairs listed in ``codegen.fixes``.
   **Where a published input schema is stricter than the platform, it is loosened** (``LENIENCY_RULE``):
   client-side validation must never refuse a request the API takes.
3. **Free-form outputs are stated**: an output object that declares no properties gets
   ``additionalProperties: {}`` (the JSON Schema default, made explicit so it is typed as a mapping).
4. **Outputs say what is always returned** (``OUTPUT_REQUIRED_RULE``): see ``require_outputs``.
5. **Variant titles** (``TITLE_RULE``): see ``variant_title``.

Every rule is idempotent: applied to one of our own files it changes nothing, which is what makes a
live sync against an account serving exactly the shipped models a no-op.
"""

from __future__ import annotations

import copy
from typing import Any

from .schema_walk import as_list, as_map, branches, walk

__all__ = [
    "LENIENCY_RULE",
    "OUTPUT_REQUIRED_RULE",
    "PROSE_KEYS",
    "TITLES",
    "TITLE_RULE",
    "normalise_schema",
    "require_outputs",
    "strip_prose",
    "variant_title",
]

# Every title the rule can give (labels, not prose: "Prompt" is what the variant is).
TITLES = frozenset(
    {
        "Batch",
        "Messages",
        "Prompt",
        "Responses",
        "Async Response",
        "Chat Completion",
        "Text Completion",
        "Batch Results",
    }
)

PROSE_KEYS = ("description", "title", "examples", "$comment")

TITLE_RULE = """\
Variant titles (root oneOf/anyOf branches of input and output, the branches of a batch's request
items, and the branches of a root branch that only wraps a nested oneOf/anyOf) name the generated
variant types, so they are set by one rule from what distinguishes the variant, never copied:
  input:  has `requests` -> "Batch"; has `messages` -> "Messages"; has `prompt` -> "Prompt";
          has `input` (the Responses API form) -> "Responses"; anything else -> no title.
  output: exactly one property `request_id` -> "Async Response"; `choices` whose items carry `message`
          -> "Chat Completion", whose items carry `text` -> "Text Completion"; `output` with
          `created_at` (Responses API) -> "Responses"; only `results` -> "Batch Results";
          anything else (plain JSON, binary or event-stream branches) -> no title.
A branch without a title is named by the generator from its distinguishing property or the model's
task (e.g. `TextEmbeddingsOutput`). Two branches of one union that would get the same title get none.
A single (non-union) root never gets a title. Existing files keep their own titles (``prose.merge``)."""

OUTPUT_REQUIRED_RULE = """\
Output fields the API always returns are listed in `required`, by task, only for properties the
schema declares (published `required` lists are kept and extended, never shortened):
  any task:      a branch whose only property is `request_id` (async response) -> request_id;
                 an OpenAI-shaped completion (`choices` and `object`) -> id, object, created, model, choices.
  Text Embeddings: branch with `data` -> shape, data; `response` as a list of objects (query scores)
                 -> response, and each item -> id, score; `response` as a list of vectors -> response, shape.
  Text Generation: `response` of type string (the legacy shape) -> response (`usage`, `tool_calls` stay optional).
  Text Classification / reranking: `response` list of objects -> response, items -> id, score;
                 a list of objects -> items label, score.
  Image Classification: a list of objects -> items label, score.
  Object Detection: a list of objects -> items label, score, box.
  Automatic Speech Recognition: text.   Translation: translated_text.   Summarization: summary.
  Image-to-Text: description.   Text-to-Image (JSON branch): image.   Text-to-Speech (JSON branch): audio."""


LENIENCY_RULE = """\
Input schemas never refuse what the platform takes:
  - in `tools` (and `functions`), `description` is not required (of a tool, of its function, of each
    parameter property): the published schemas list it, the Workers binding's own types mark it optional,
    and clients that leave it out (langchain-cloudflare's `bind_tools`) work against the live API;
  - `stop` also takes null (OpenAI-style clients send `"stop": null` for "no stop sequences");
  - a message's `content` also takes null (an OpenAI-form assistant message that carries `tool_calls` has
    no content, and tool loops send it back that way)."""


def strip_prose(node: Any) -> Any:
    """A copy of a schema with every prose keyword removed (property names and data values kept)."""
    out = copy.deepcopy(node)
    root = as_map(out)
    if root is not None:
        for obj, _ in walk(root):
            for key in PROSE_KEYS:
                obj.pop(key, None)
    return out


def normalise_schema(model_id: str, task: str, schema: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """``{input, output}`` with rules 1-5 applied (a new object); repairs are described in ``notes``."""
    from .fixes import apply_fixes  # the per-model table; imported here to keep the rule text first

    inp = as_map(strip_prose(schema.get("input"))) or {}
    out = as_map(strip_prose(schema.get("output"))) or {}
    _move_misplaced_required(inp, "/schema/input", notes)
    _move_misplaced_required(out, "/schema/output", notes)
    _objects_typed(inp, "/schema/input", notes)
    _objects_typed(out, "/schema/output", notes)
    _require_batch_requests(inp, notes)
    _async_output(inp, out, notes)
    apply_fixes(model_id, inp, out, notes)
    _platform_leniency(inp, notes)
    if task == "Text Embeddings":
        _integer_shapes(out, notes)
    _free_form_outputs(out)
    require_outputs(task, out)
    _title_union("input", inp)
    _title_union("output", out)
    return {"input": inp, "output": out}


# ----------------------------------------------------------------------------------------- repairs


def _nullable(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` already admits null (or anything)."""
    if not schema or schema.get("type") == "null" or "null" in (as_list(schema.get("type")) or []):
        return True
    return any(
        _nullable(b)
        for key in ("anyOf", "oneOf")
        for b in (as_map(x) for x in as_list(schema.get(key)) or [])
        if b is not None
    )


def _make_nullable(props: dict[str, Any], name: str) -> bool:
    sub = as_map(props.get(name))
    if sub is None or _nullable(sub):
        return False
    keep = {k: v for k, v in sub.items() if k in ("default", "description", "title")}
    alts = as_list(sub.get("anyOf"))
    body = {k: v for k, v in sub.items() if k not in keep}
    if alts is not None and list(body) == ["anyOf"]:
        props[name] = {**keep, "anyOf": [*alts, {"type": "null"}]}
    else:
        props[name] = {**keep, "anyOf": [body, {"type": "null"}]}
    return True


def _platform_leniency(inp: dict[str, Any], notes: list[str]) -> None:
    """``LENIENCY_RULE``: loosen what the published input schema states more strictly than the API."""
    loosened: set[str] = set()
    for node, _where in list(walk(inp, "/schema/input")):
        props = as_map(node.get("properties"))
        if props is None:
            continue
        for key in ("tools", "functions"):
            tools = as_map(props.get(key))
            for sub, _ in list(walk(tools)) if tools is not None else []:
                required = as_list(sub.get("required"))
                if required is not None and "description" in required:
                    sub["required"] = [r for r in required if r != "description"]
                    loosened.add("description")
        if "stop" in props and _make_nullable(props, "stop"):
            loosened.add("stop")
        messages = as_map(props.get("messages"))
        for sub, _ in list(walk(messages)) if messages is not None else []:
            inner = as_map(sub.get("properties"))
            if inner is not None and "role" in inner and "content" in inner and _make_nullable(inner, "content"):
                loosened.add("content")
    texts = {
        "description": "`description` of a tool and of its parameters is not required (the published schema "
        "requires it; the platform and the Workers binding's types do not)",
        "stop": "`stop` also takes null, as the API does",
        "content": "a message's `content` also takes null (an assistant message carrying `tool_calls`), "
        "as the API does",
    }
    for key in sorted(loosened):
        notes.append(f"/schema/input: {texts[key]}.")


def _move_misplaced_required(schema: dict[str, Any], base: str, notes: list[str]) -> None:
    for node, where in list(walk(schema, base)):
        props = as_map(node.get("properties"))
        names = as_list(props.get("required")) if props is not None else None
        if props is None or names is None or not all(isinstance(n, str) for n in names):
            continue
        del props["required"]
        own = [n for n in as_list(node.get("required")) or [] if isinstance(n, str)]
        node["required"] = [*own, *[n for n in names if n not in own]]
        notes.append(
            f"{where}: the published schema has its `required` list inside `properties`; "
            f"it is stated here as the object's required keys {names}."
        )


def _objects_typed(schema: dict[str, Any], base: str, notes: list[str]) -> None:
    typed = [where for node, where in list(walk(schema, base)) if _type_object(node)]
    if typed:
        notes.append(
            f"{base}: {len(typed)} schema(s) declaring `properties` but no `type` are objects here "
            "(published, they also matched strings, numbers and lists)."
        )


def _type_object(node: dict[str, Any]) -> bool:
    if as_map(node.get("properties")) is None or "type" in node:
        return False
    node["type"] = "object"
    return True


def _require_batch_requests(schema: dict[str, Any], notes: list[str]) -> None:
    kind, items = branches(schema)
    if kind is None:
        return
    for i, branch in enumerate(items):
        props = as_map(branch.get("properties")) or {}
        if list(props) == ["requests"] and "requests" not in (as_list(branch.get("required")) or []):
            branch["required"] = ["requests"]
            notes.append(
                f"/schema/input/{kind}/{i}: the batch branch did not require `requests`, so an empty "
                "object matched it; `requests` is required here."
            )


def _flat_branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Root branches, with a branch that only wraps a nested union replaced by that union's branches."""
    out: list[dict[str, Any]] = []
    _kind, items = branches(schema)
    for branch in items:
        nested, inner = branches(branch)
        out.extend(inner if nested is not None and not as_map(branch.get("properties")) else [branch])
    return out


def _async_output(inp: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
    """A model that takes a ``requests`` batch answers it with ``{request_id}`` (the queued reply)."""
    batch = any(list(as_map(b.get("properties")) or {}) == ["requests"] for b in _flat_branches(inp))
    if not batch or any("request_id" in (as_map(b.get("properties")) or {}) for b in _flat_branches(out)):
        return
    queued: dict[str, Any] = {
        "type": "object",
        "contentType": "application/json",
        "properties": {"request_id": {"type": "string"}},
        "required": ["request_id"],
    }
    kind, _items = branches(out)
    if kind is None:
        whole = dict(out)
        out.clear()
        out["oneOf"] = [whole, queued]
        kind = "oneOf"
    else:
        (as_list(out[kind]) or []).append(queued)
    notes.append(
        f"/schema/output/{kind}: the input takes an async batch (`requests`), which the API answers with a "
        "request id; the published output has no branch for that reply, so one is added."
    )


def _integer_shapes(schema: dict[str, Any], notes: list[str]) -> None:
    for node, where in walk(schema, "/schema/output"):
        shape = as_map((as_map(node.get("properties")) or {}).get("shape"))
        items = as_map(shape.get("items")) if shape is not None else None
        if items is not None and items.get("type") == "number":
            items["type"] = "integer"
            notes.append(
                f"{where}/properties/shape/items: published as `number`, but the API returns the shape "
                "[count, dimension] as integers; typed `integer` so it decodes as int."
            )


def _free_form_outputs(schema: dict[str, Any]) -> None:
    """An output object that declares nothing about its keys says so: ``additionalProperties: {}``
    (the JSON Schema default, stated so that it is typed as a mapping, never as an empty struct)."""
    for branch in _flat_branches(schema):
        if (
            branch.get("type") == "object"
            and not branch.get("properties")
            and "additionalProperties" not in branch
            and branches(branch)[0] is None
        ):
            branch["additionalProperties"] = {}


# ------------------------------------------------------------------------------- output `required`


def _require(node: dict[str, Any], names: list[str]) -> None:
    props = as_map(node.get("properties")) or {}
    have = [n for n in as_list(node.get("required")) or [] if isinstance(n, str)]
    extra = [n for n in names if n in props and n not in have]
    if extra:
        node["required"] = [*have, *extra]


def _items_object(node: dict[str, Any] | None) -> dict[str, Any] | None:
    if node is None or node.get("type") != "array":
        return None
    items = as_map(node.get("items"))
    if items is None or not as_map(items.get("properties")):
        return None
    return items


def _is_string(node: dict[str, Any] | None) -> bool:
    return node is not None and node.get("type") == "string"


def require_outputs(task: str, output: dict[str, Any]) -> None:
    """Apply ``OUTPUT_REQUIRED_RULE`` to every JSON branch of an output schema (in place)."""
    for branch in _flat_branches(output):
        _require_branch(task, branch)


def _require_branch(task: str, branch: dict[str, Any]) -> None:
    listed = _items_object(branch)
    if listed is not None:
        keys = {"Object Detection": ["label", "score", "box"]}.get(task, ["label", "score"])
        if task in ("Text Classification", "Image Classification", "Object Detection"):
            _require(listed, keys)
        return
    props = as_map(branch.get("properties"))
    if not props:
        return
    if list(props) == ["request_id"]:
        _require(branch, ["request_id"])
        return
    if "choices" in props and "object" in props:
        _require(branch, ["id", "object", "created", "model", "choices"])
        return
    response = as_map(props.get("response"))
    if task == "Text Embeddings":
        if "data" in props:
            _require(branch, ["shape", "data"])
        scored = _items_object(response)
        if scored is not None:
            _require(branch, ["response"])
            _require(scored, ["id", "score"])
        elif response is not None and as_map(response.get("items")) and "shape" in props:
            _require(branch, ["response", "shape"])
        return
    if task == "Text Classification":
        scored = _items_object(response)
        if scored is not None:
            _require(branch, ["response"])
            _require(scored, ["id", "score"])
        return
    if task == "Text Generation":
        if _is_string(response):
            _require(branch, ["response"])
        return
    per_task = {
        "Automatic Speech Recognition": "text",
        "Translation": "translated_text",
        "Summarization": "summary",
        "Image-to-Text": "description",
        "Text-to-Image": "image",
        "Text-to-Speech": "audio",
    }
    name = per_task.get(task)
    if name is not None:
        _require(branch, [name])


# ------------------------------------------------------------------------------------------ titles


def variant_title(half: str, branch: dict[str, Any]) -> str | None:
    """The title ``TITLE_RULE`` gives one variant (None: the generator names it)."""
    props = as_map(branch.get("properties")) or {}
    if half == "input":
        for key, title in (
            ("requests", "Batch"),
            ("messages", "Messages"),
            ("prompt", "Prompt"),
            ("input", "Responses"),
        ):
            if key in props:
                return title
        return None
    if branch.get("type", "object") != "object" or not props:
        return None
    if list(props) == ["request_id"]:
        return "Async Response"
    choices = as_map(props.get("choices"))
    if choices is not None:
        item = as_map(choices.get("items")) or {}
        fields = as_map(item.get("properties")) or {}
        if "message" in fields:
            return "Chat Completion"
        if "text" in fields:
            return "Text Completion"
        return None
    if "output" in props and "created_at" in props:
        return "Responses"
    if list(props) == ["results"]:
        return "Batch Results"
    return None


def _title_union(half: str, parent: dict[str, Any]) -> None:
    kind, items = branches(parent)
    if kind is None:
        return
    titles = [variant_title(half, b) for b in items]
    for branch, title in zip(items, titles, strict=True):
        nested, _inner = branches(branch)
        if nested is not None and not as_map(branch.get("properties")):
            _title_union(half, branch)  # a wrapper around a nested union: title its branches instead
            continue
        if title is not None and titles.count(title) == 1:
            _put_first(branch, "title", title)
        requests = as_map((as_map(branch.get("properties")) or {}).get("requests"))
        items_schema = as_map(requests.get("items")) if requests is not None else None
        if half == "input" and items_schema is not None:
            _title_union(half, items_schema)


def _put_first(node: dict[str, Any], key: str, value: Any) -> None:
    rest = {k: v for k, v in node.items() if k != key}
    node.clear()
    node[key] = value
    node.update(rest)
