"""Hostile model schemas: every string a schema can carry tries to become code in the output.

If any of it ever ran, it would create the file ``PWNED`` in the current directory (or import the
module ``pwned_module``, which does the same); tests run the generator and import the result with
a temporary working directory and then check that the file does not exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CANARY = "PWNED"
TOUCH = "__import__('pathlib').Path('PWNED').touch()"
JINJA = "{{ 7*191 }}{% for x in range(3) %}X{% endfor %}{{ self.__init__.__globals__ }}"
EVIL_TEXTS = [
    f'"""; {TOUCH}; """',
    f"'''; {TOUCH}; '''",
    f'"\n{TOUCH}\n"',
    "trailing backslash \\",
    f'\\"; {TOUCH} #',
    f"line\r\nbreaks\u2028and\u2029separators\x85{TOUCH}",
    "nul \x00 byte and \x0b\x0c controls",
    JINJA,
    f"# -*- coding: latin-1 -*-\n{TOUCH}",
    "emoji 😀 and ünïcödé",
]
EVIL_NAMES = [
    TOUCH,
    '"',
    "'''",
    "\\",
    "a\nb",
    "",
    "123",
    "class",
    "def",
    "None",
    "True",
    "self",
    "__init__",
    "__class__",
    "_private",
    "Meta",
    "Struct",
    "UNSET",
    "UnsetType",
    "field",
    "Usage",
    "usage",
    "str",
    "int",
    "list",
    "dict",
    "Any",
    "Literal",
    "ModelHandle",
    "ModelInfo",
    "INFO",
    "DECODER",
    "request",
    "headers",
    "名前",
    "a-b",
    "a_b",
    JINJA,
]
# Keywords some code generators read as instructions; here they must stay inert.
GENERATOR_EXTENSIONS: dict[str, Any] = {
    "x-python-import": {"module": "pwned_module", "name": "X"},
    "x-python-type": "pwned_module.X",
    "customTypePath": "pwned_module.X",
    "customBasePath": "pwned_module.X",
    "default_factory": TOUCH,
    "x-is-base-class": True,
    "javaType": "pwned_module.X",
}
PATTERN = "^(\"\"\"|'''|\\\\|\\n|{{|.)*$"
PWNED_MODULE = "import pathlib\npathlib.Path('PWNED').touch()\nX = int\n"


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required:
        out["required"] = required
    return out


def hostile_documents() -> dict[str, dict[str, Any]]:
    """File path (below a schemas folder) -> catalog-form document."""
    docs: dict[str, dict[str, Any]] = {}
    text_props: dict[str, Any] = {
        f"p{i}": {"type": "string", "description": t, "default": t, "pattern": PATTERN}
        for i, t in enumerate(EVIL_TEXTS)
    }
    text_props["evil_enum"] = {"type": "string", "enum": [*EVIL_TEXTS, *EVIL_NAMES], "description": EVIL_TEXTS[0]}
    text_props["evil_const"] = {"const": EVIL_TEXTS[1]}
    text_props["ext"] = {"type": "string", **GENERATOR_EXTENSIONS}
    text_props["number"] = {"type": "number", "minimum": -1e308, "maximum": 1e308, "default": 0.5}
    docs["@cf/evil/texts.json"] = {
        "name": "@cf/evil/texts",
        "description": EVIL_TEXTS[0] + EVIL_TEXTS[2] + JINJA,
        "task": {"name": EVIL_TEXTS[0], "description": JINJA},
        "properties": [
            {"property_id": "price", "value": [{"unit": EVIL_TEXTS[0], "price": 0.1, "currency": JINJA}]},
            {"property_id": EVIL_TEXTS[1], "value": EVIL_TEXTS[2]},
        ],
        "schema": {
            "input": _obj(text_props, ["p0"], title=EVIL_TEXTS[0], description=EVIL_TEXTS[2], **GENERATOR_EXTENSIONS),
            "output": {
                "oneOf": [
                    _obj({"response": {"type": "string", "description": EVIL_TEXTS[3]}}, title=EVIL_TEXTS[1]),
                    {"type": "string", "format": "binary", "contentType": f'audio/x"; {TOUCH}; "'},
                ]
            },
        },
    }
    name_props = {n: {"type": "string", "description": f"property {n!r}"} for n in EVIL_NAMES}
    name_props["Usage"] = _obj({"a": {"type": "integer"}})
    name_props["usage"] = _obj({"b": {"type": "string"}})
    name_props["Meta"] = _obj({"c": {"type": "integer"}})
    name_props["Struct"] = _obj({"d": {"type": "integer"}})
    name_props["ModelHandle"] = _obj({"e": {"type": "integer"}})
    name_props["model_handle"] = _obj({"f": {"type": "integer"}})
    name_props["event_stream"] = _obj({"g": {"type": "integer"}})
    name_props["names"] = _obj({"h": {"type": "integer"}})
    docs["@cf/evil/names.json"] = {
        "name": '@cf/evil/"""; ' + TOUCH + " #{{7*191}} names",
        "description": "Property names that are keywords, builtins, runtime names or not identifiers at all.",
        "task": {"name": "Text Generation"},
        "schema": {
            "input": _obj(name_props, [TOUCH, "class"]),
            "output": _obj({n: {"type": "string"} for n in EVIL_NAMES} | {"usage": _obj({"n": {"type": "integer"}})}),
        },
    }
    # A model id that normalises to the same module as another, and titles that are code.
    docs["@cf/evil/Names-2.json"] = {
        "name": "@cf/evil/names_2",
        "description": "",
        "task": "Text Generation",
        "schema": {
            "input": {
                "oneOf": [
                    _obj({"prompt": {"type": "string"}}, ["prompt"], title=EVIL_TEXTS[0]),
                    _obj(
                        {"messages": {"type": "array", "items": _obj({"role": {"type": "string"}})}},
                        ["messages"],
                        title=JINJA,
                    ),
                ]
            },
            "output": _obj({"response": {"type": "string"}}, title=TOUCH),
        },
    }
    docs["@cf/evil/names-2.json"] = {
        "name": "@cf/evil/names-2",
        "description": "",
        "task": {"name": "Translation"},
        "schema": {
            "input": _obj({"text": {"type": "string"}}, ["text"]),
            "output": _obj({"translated_text": {"type": "string"}}),
        },
    }
    return docs


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string", "description": TOUCH}
    for i in range(levels):
        node = _obj({f"level_{i}": node})
    return node


def raw_documents() -> dict[str, str]:
    """Files written as raw text: numbers JSON allows but Python and msgspec do not, deep nesting, odd ids."""
    numbers = (
        '{"name": "@cf/evil/numbers", "task": "Translation", "schema": {"input": {"type": "object", "properties": {'
        '"a": {"type": "integer", "minimum": 1.0, "maximum": 1e400, "exclusiveMinimum": 0.5, "multipleOf": 0.5},'
        '"b": {"type": "string", "minLength": 100000000000000000000, "maxLength": 9223372036854775808},'
        '"c": {"type": "number", "default": 1e400, "enum": [1e400, 1.5], "maximum": 1e400},'
        '"d": {"type": "integer", "maximum": 100000000000000000000000, "default": 100000000000000000000000},'
        '"e": {"type": "string", "default": null}, "f": {"type": "boolean", "default": "yes"}'
        '}}, "output": {"type": "object", "properties": {"x": {"type": "number", "minimum": -1e400}}}}}'
    )
    long_id = "@cf/evil/" + "very-long-model-name-" * 15
    return {
        "@cf/evil/numbers.json": numbers,
        "@cf/evil/deep.json": json.dumps({"name": "@cf/evil/deep", "schema": {"input": _deep(90), "output": _deep(5)}}),
        "@cf/evil/long.json": json.dumps(
            {"name": long_id, "schema": {"input": _obj({"t": {"type": "string"}}), "output": _obj({})}}
        ),
        "@cf/evil/unicode.json": json.dumps(
            {"name": "@cf/évil/模型-名前", "schema": {"input": _obj({"名前": {"type": "string"}}), "output": _obj({})}}
        ),
    }


def write_hostile(folder: Path) -> list[Path]:
    paths: list[Path] = []
    for rel, doc in hostile_documents().items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        paths.append(path)
    for rel, text in raw_documents().items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
