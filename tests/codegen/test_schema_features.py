"""Every JSON Schema feature real catalog schemas use, in one synthetic model: generate, import,
type-check, decode, round-trip, and call it over HTTP with binary data going both ways.
"""

from __future__ import annotations

import base64
import importlib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from workers_ai.testing._synth import Synthesizer

from codegen.load import load_schemas
from codegen.plan import plan_models
from codegen.variants import variant_schemas
from tests._codegen_util import build, importable, mypy_strict, write_schema
from tests._server import Reply, ScriptedServer, ok
from tests.conftest import ACCOUNT, TOKEN

PACKAGE = "zoo_pkg"
MODEL = "@cf/test/zoo"
LONG_ENUM = [f"voice-{i:03d}" for i in range(300)]
MANY = {
    f"knob_{i:03d}": {"type": "integer", "minimum": 0, "maximum": i + 1, "description": f"Knob {i}."}
    for i in range(250)
}

ZOO: dict[str, Any] = {
    "name": MODEL,
    "description": "A synthetic model that uses every schema feature the generator must handle.",
    "task": {"name": "Image-to-Text", "description": "Describes images."},
    "properties": [{"property_id": "price", "value": [{"unit": "per image", "price": 0.25, "currency": "USD"}]}],
    "schema": {
        "input": {
            "$defs": {
                "Point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                },
                "Tree": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
                    },
                },
            },
            "definitions": {"Mode": {"type": "string", "enum": ["fast", "careful"]}},
            "oneOf": [
                {"type": "string", "format": "binary", "description": "The image as the raw request body."},
                {
                    "title": "Image Request",
                    "type": "object",
                    "required": ["image", "class"],
                    "properties": {
                        "image": {
                            "type": "array",
                            "items": {"type": "number"},
                            "description": "Image bytes as integers 0-255.",
                        },
                        "image_b64": {"type": "string", "description": "The image, base64-encoded."},
                        "class": {"type": "string", "description": "A keyword as a property name."},
                        "max-tokens": {"type": "integer", "default": 64},
                        "2nd": {"type": "boolean"},
                        "mode": {"$ref": "#/definitions/Mode"},
                        "origin": {"$ref": "#/$defs/Point"},
                        "tree": {"$ref": "#/$defs/Tree"},
                        "voice": {"type": "string", "enum": LONG_ENUM},
                        "fixed": {"const": "v1"},
                        "nullable": {"type": ["string", "null"]},
                        "multi": {"type": ["string", "integer", "null"]},
                        "labels": {"type": "object", "additionalProperties": {"type": "number"}},
                        "extra": {"type": "object"},
                        "anything": {},
                        "both": {
                            "allOf": [
                                {"$ref": "#/$defs/Point"},
                                {"type": "object", "properties": {"z": {"type": "number"}}},
                            ]
                        },
                        "content": {
                            "oneOf": [
                                {"type": "string"},
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "type": {"type": "string", "enum": ["text"]},
                                            "text": {"type": "string"},
                                        },
                                    },
                                },
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "type": {"type": "string", "enum": ["image_url"]},
                                            "image_url": {"type": "object", "properties": {"url": {"type": "string"}}},
                                        },
                                    },
                                },
                            ]
                        },
                        "tool": {
                            "anyOf": [
                                {
                                    "type": "object",
                                    "properties": {"name": {"type": "string"}, "parameters": {"type": "object"}},
                                },
                                {
                                    "type": "object",
                                    "properties": {
                                        "type": {"const": "function"},
                                        "function": {"type": "object", "properties": {"name": {"type": "string"}}},
                                    },
                                },
                            ]
                        },
                        **MANY,
                    },
                },
            ],
        },
        "output": {
            "oneOf": [
                {
                    "type": "object",
                    "title": "Description",
                    "contentType": "application/json",
                    "properties": {
                        "description": {"type": "string"},
                        "boxes": {"type": "array", "items": {"$ref": "#/$defs/Box"}},
                        "scores": {"type": "object", "additionalProperties": {"type": "number"}},
                    },
                    "required": ["description"],
                },
                {"type": "string", "format": "binary", "contentType": "image/png"},
            ],
            "$defs": {
                "Box": {
                    "type": "object",
                    "properties": {"xmin": {"type": "number"}, "label": {"type": ["string", "null"]}},
                }
            },
        },
    },
}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    base = tmp_path_factory.mktemp("zoo")
    write_schema(base / "schemas", "@cf/test/zoo.json", ZOO)
    build(base / "schemas", base / "out", PACKAGE)
    with importable(base / "out", PACKAGE):
        yield base, importlib.import_module(f"{PACKAGE}.models.cf.test.zoo")


def test_module_carries_task_description_and_price(zoo: tuple[Path, Any]) -> None:
    _, module = zoo
    assert module.INFO.task == "Image-to-Text"
    assert module.INFO.description == ZOO["description"]
    assert module.INFO.price == ({"unit": "per image", "price": 0.25, "currency": "USD"},)
    assert MODEL in (module.__doc__ or "")


def test_every_variant_decodes_and_round_trips(zoo: tuple[Path, Any]) -> None:
    base, module = zoo
    loaded = load_schemas(base / "schemas")
    (plan,), _shared = plan_models(loaded.models, [])
    src = plan.source
    for raw, variants in ((src.input, [v for v in plan.inputs if v.class_name]), (src.output, plan.json_outputs)):
        branches = variant_schemas(raw)
        for v in variants:
            tp = getattr(module, v.class_name)
            msgspec.json.Decoder(tp)
            synth = Synthesizer({**branches[v.index], "$defs": src.definitions})
            for optional in (0.0, 1.0):
                example = synth.generate(seed=f"zoo{optional}", optional=optional)
                value = msgspec.convert(example, tp)
                wire = msgspec.json.decode(msgspec.json.encode(value))
                assert synth.validator.first_error(wire) is None
                assert msgspec.convert(wire, tp) == value


def test_names_keywords_and_unions_map_to_python(zoo: tuple[Path, Any]) -> None:
    _, module = zoo
    cls = module.ImageRequestInput
    fields = {f.encode_name: f for f in msgspec.structs.fields(cls)}
    assert fields["class"].name == "class_"
    assert fields["max-tokens"].name.isidentifier() and fields["2nd"].name.isidentifier()
    assert len(fields) == 18 + len(MANY)
    hints = typing.get_type_hints(cls, include_extras=False)
    voice = typing.get_args(hints["voice"])[0]
    assert list(typing.get_args(voice)) == LONG_ENUM
    request = cls(image=[1, 2], class_="cat", nullable=None, labels={"a": 1.0}, **{fields["2nd"].name: True})
    body = msgspec.json.decode(msgspec.json.encode(request))
    assert body == {"image": [1, 2], "class": "cat", "nullable": None, "labels": {"a": 1.0}, "2nd": True}
    # Alternatives msgspec could not tell apart are merged, so the nested unions still decode.
    value = msgspec.convert(
        {
            "image": [],
            "class": "c",
            "content": [{"type": "image_url", "image_url": {"url": "u"}}],
            "tool": {"type": "function"},
        },
        cls,
    )
    assert value.content[0].image_url.url == "u"


def test_binary_goes_out_raw_or_encoded_and_comes_back_as_bytes(
    zoo: tuple[Path, Any], server: ScriptedServer, tmp_path: Path
) -> None:
    _ = zoo  # the generated package is importable while the fixture is active
    client_module = importlib.import_module(PACKAGE)
    ai = client_module.WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, max_retries=0)
    zoo_model = ai.model(MODEL)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    image = tmp_path / "cat.jpg"
    image.write_bytes(b"\xff\xd8raw-jpeg")
    server.script(
        Reply(200, png, content_type="image/png"),
        ok({"description": "a cat", "boxes": [{"xmin": 1.5, "label": None}]}),
    )
    out = zoo_model.describe(image)  # a path: the file's bytes are the raw body
    assert bytes(out) == png and out.content_type == "image/png"
    raw = server.requests[0]
    assert raw.body == b"\xff\xd8raw-jpeg"
    assert raw.headers["content-type"] == "application/octet-stream"
    assert raw.path == f"/client/v4/accounts/{ACCOUNT}/ai/run/{MODEL}"
    methods = [
        name
        for name in vars(type(zoo_model).__mro__[1])  # the shape's handle has the methods
        if not name.startswith("_") and callable(getattr(zoo_model, name))
    ]
    json_method = next(m for m in methods if m != "describe")
    reply = getattr(zoo_model, json_method)(image=b"\x00\x01\xff", image_b64=b"hi!", class_="cat")
    assert reply.description == "a cat" and reply.boxes[0].xmin == 1.5
    sent = server.requests[1].json()
    assert sent["image"] == [0, 1, 255]  # bytes for an integer-array field: one number per byte
    assert sent["image_b64"] == base64.b64encode(b"hi!").decode()  # bytes for a base64 string field
    assert sent["class"] == "cat"


def test_generated_feature_package_passes_mypy_strict(zoo: tuple[Path, Any], tmp_path: Path) -> None:
    base, _ = zoo
    assert mypy_strict(base / "out", PACKAGE, tmp_path / "cache") == []
