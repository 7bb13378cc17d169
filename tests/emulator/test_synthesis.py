"""The emulator's schema machinery without HTTP: the synthesizer, the relaxed validator, task outputs, media.

The conformance test runs every model file of the public catalog (read in place, never copied): an
example input built for each input variant must fit the input schema, and the reply the emulator
computes for it must fit the output schema, checked with the same (real ``jsonschema``) validator.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from workers_ai.testing import Synthesizer, Validator
from workers_ai.testing._catalog import EXAMPLE_SKIP, ModelSpec
from workers_ai.testing._embeddings import embed
from workers_ai.testing._media import jpeg, media_for, mp3, png, wav
from workers_ai.testing._outputs import branches, run_model
from workers_ai.testing._synth import MISSING, Unsatisfiable, input_variants, regex_example
from workers_ai.testing._validate import relax, sanitize

from tests._catalog import catalog_dir, catalog_files

ROOT = Path(__file__).resolve().parents[2]


def _has_schema(path: Path) -> bool:
    schema = json.loads(path.read_text()).get("schema") or {}
    return bool(schema.get("input") and schema.get("output"))


def _catalog_files() -> list[Path | None]:
    # Files without a usable schema are not models to emulate; the generator reports them
    # (tests/integrations/test_catalog_conformance.py checks that each gives one exit-2 line).
    files: list[Path | None] = [p for p in catalog_files() if _has_schema(p)]
    return files or [None]


def _valid(validator: Validator, value: Any) -> None:
    problem = validator.first_error(value)
    assert problem is None, problem


# --------------------------------------------------------------------------- catalog conformance


@pytest.mark.parametrize("path", _catalog_files(), ids=lambda p: p.name if p else "no-catalog")
def test_catalog_model_examples_and_outputs_fit_their_schemas(path: Path | None) -> None:
    catalog_dir()  # skips, with the reason, when the catalog is not there
    assert path is not None
    doc = json.loads(path.read_text())
    spec = ModelSpec(doc["name"], doc)
    variants = input_variants(spec.inputs)
    assert variants, f"{path.name}: no input variants found"
    declared = {b.content_type for b in branches(spec)}
    checked = 0
    for label, variant in variants:
        if label == "binary":
            assert spec.accepts_binary
            result = run_model(spec, None, raw=b"\x00\x01" * 64)
        else:
            example = spec.inputs.generate(variant, seed=f"{path.name}:{label}", skip=EXAMPLE_SKIP)
            _valid(spec.inputs.validator, example)
            if isinstance(example, dict) and "requests" in example:
                continue  # the async batch wrapper; its items are ordinary variants, checked on their own
            result = run_model(spec, example)
        if result.kind == "json":
            _valid(spec.outputs.validator, result.value)
        elif result.kind == "binary":
            assert result.content_type in declared
            assert result.data
        else:
            assert "text/event-stream" in declared
            assert result.events and all(isinstance(e, dict) for e in result.events)
        checked += 1
    assert checked


def test_conformance_covers_the_whole_catalog() -> None:
    root = catalog_dir()
    usable = 0
    for path in sorted(root.glob("*.json")):
        schema = json.loads(path.read_text()).get("schema") or {}
        usable += bool(schema.get("input") and schema.get("output"))
    assert usable >= 95  # about 100 models carry both schemas


# --------------------------------------------------------------------------- the synthesizer


def _make(schema: Any, seed: str = "s", **kw: Any) -> Any:
    synth = Synthesizer(schema)
    value = synth.generate(seed=seed, **kw)
    _valid(synth.validator, value)
    return value


def test_objects_get_required_and_bounded_values() -> None:
    schema = {
        "type": "object",
        "required": ["n", "s", "items", "flag"],
        "properties": {
            "n": {"type": "integer", "minimum": 5, "maximum": 7},
            "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "s": {"type": "string", "minLength": 3, "maxLength": 4},
            "items": {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3},
            "flag": {"type": "boolean"},
            "step": {"type": "number", "multipleOf": 0.5, "minimum": 2.1},
        },
        "additionalProperties": False,
    }
    value = _make(schema, optional=1.0)
    assert 5 <= value["n"] <= 7 and 3 <= len(value["s"]) <= 4 and len(value["items"]) == 3
    assert 0 < value["x"] < 1 and value["step"] == 2.5


def test_enum_const_type_arrays_and_nullable() -> None:
    schema = {
        "type": "object",
        "required": ["e", "c", "t", "n"],
        "properties": {
            "e": {"type": "string", "enum": ["alpha", "beta"]},
            "c": {"const": 42},
            "t": {"type": ["null", "integer"], "minimum": 3},
            "n": {"type": "string", "nullable": True, "minLength": 2},
        },
    }
    value = _make(schema)
    assert value["e"] == "alpha" and value["c"] == 42 and value["t"] >= 3 and len(value["n"]) >= 2


def test_refs_into_defs_and_definitions_and_all_of() -> None:
    schema = {
        "$defs": {"name": {"type": "string", "minLength": 2}},
        "definitions": {"pos": {"type": "integer", "minimum": 1}},
        "type": "object",
        "required": ["name", "count", "both"],
        "properties": {
            "name": {"$ref": "#/$defs/name"},
            "count": {"$ref": "#/definitions/pos"},
            "both": {"allOf": [{"type": "integer", "minimum": 10}, {"maximum": 12}]},
        },
    }
    value = _make(schema)
    assert len(value["name"]) >= 2 and value["count"] >= 1 and 10 <= value["both"] <= 12


def test_one_of_takes_the_first_branch_that_can_be_built() -> None:
    schema = {"oneOf": [{"type": "string", "format": "binary"}, {"type": "string", "pattern": "^\\d+$"}]}
    assert _make(schema).isdigit()  # the raw-binary branch is a last resort inside JSON
    impossible = {"oneOf": [{"type": "integer", "minimum": 5, "maximum": 1}, {"type": "boolean"}]}
    assert _make(impossible) is False
    with pytest.raises(Unsatisfiable):
        Synthesizer({"type": "integer", "minimum": 5, "maximum": 1}).generate(seed="x")


@pytest.mark.parametrize(
    "pattern",
    ["^\\s*(clef|clef-flash)\\s*$", "^[0-9]+$", "[a-zA-Z0-9]{9}", "^data:*", "^[Dd][Aa][Tt][Aa]:", "^(?:a|b)+c?$"],
)
def test_regex_examples_match(pattern: str) -> None:
    text = regex_example(pattern)
    assert text is not None
    import re

    assert re.search(pattern, text)


def test_same_seed_same_instance_and_seeds_vary() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(6)}}
    synth = Synthesizer(schema)
    first = synth.generate(seed="one")
    assert synth.generate(seed="one") == first
    assert any(synth.generate(seed=f"seed-{i}") != first for i in range(5))


def test_hints_are_kept_where_they_fit_and_replaced_where_not() -> None:
    schema = {
        "type": "object",
        "required": ["label", "score"],
        "properties": {
            "label": {"type": "string", "enum": ["POSITIVE", "NEGATIVE"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "note": {"type": "string", "maxLength": 5},
        },
        "additionalProperties": False,
    }
    synth = Synthesizer(schema)
    value = synth.generate(seed="h", hint={"label": "NEGATIVE", "score": 7, "note": "much too long", "extra": 1})
    _valid(synth.validator, value)
    assert value["label"] == "NEGATIVE" and 0 <= value["score"] <= 1 and value["note"] == "much "
    assert "extra" not in value
    assert synth.generate(seed="h", hint=MISSING) == synth.generate(seed="h")


# --------------------------------------------------------------------------- the validator


def test_overlapping_one_of_branches_are_accepted_like_the_api_does() -> None:
    schema = {
        "type": "object",
        "oneOf": [
            {"properties": {"text": {"type": "string"}}, "required": ["text"]},
            {"properties": {"text": {"type": "string"}, "pooling": {"type": "string"}}},
        ],
    }
    payload = {"text": "hello"}
    assert not jsonschema.Draft7Validator(schema).is_valid(payload)  # strict oneOf: two branches match
    assert Validator(schema).first_error(payload) is None
    assert "oneOf" not in json.dumps(relax(schema))


def test_errors_name_the_json_path_inside_the_matching_branch() -> None:
    bge = json.loads((ROOT / "schemas/@cf/baai/bge-m3.json").read_text())["schema"]["input"]
    v = Validator(bge)
    assert v.first_error({"text": ""}) == "/text: '' should be non-empty"
    assert v.first_error({"text": ["ok", ""]}) == "/text/1: '' should be non-empty"
    assert v.first_error({"contexts": [{"text": 3}], "query": "q"}) == "/contexts/0/text: 3 is not of type 'string'"
    assert v.first_error({"text": "a", "truncate_inputs": "yes"}) == "/truncate_inputs: 'yes' is not of type 'boolean'"
    missing = v.first_error({})
    assert missing is not None and missing.startswith("/: required properties missing") and "'text'" in missing


def test_required_written_inside_properties_is_repaired() -> None:
    broken = {
        "type": "object",
        "properties": {"prompt": {"type": "string"}, "required": ["prompt"]},
    }
    fixed = sanitize(broken)
    assert fixed["required"] == ["prompt"] and "required" not in fixed["properties"]
    assert Validator(broken).first_error({}) == "/: 'prompt' is a required property"


# --------------------------------------------------------------------------- task realism and media


def _spec(model_id: str) -> ModelSpec:
    return ModelSpec(model_id, json.loads((ROOT / "schemas" / f"{model_id}.json").read_text()))


@pytest.mark.parametrize(
    ("model_id", "dim"),
    [("@cf/baai/bge-base-en-v1.5", 768), ("@cf/baai/bge-small-en-v1.5", 384), ("@cf/baai/bge-m3", 1024)],
)
def test_embeddings_are_unit_vectors_of_the_model_dimension(model_id: str, dim: int) -> None:
    spec = _spec(model_id)
    result = run_model(spec, {"text": ["the cat sat", "a dog ran"]})
    assert result.value["shape"] == [2, dim]
    for vec in result.value["data"]:
        assert len(vec) == dim and math.isclose(math.sqrt(sum(x * x for x in vec)), 1.0, abs_tol=1e-4)
    assert run_model(spec, {"text": ["the cat sat", "a dog ran"]}).value == result.value


def test_texts_sharing_words_score_higher_and_ranks_are_sorted() -> None:
    near = sum(a * b for a, b in zip(embed("red cat sleeps", 1024), embed("the red cat", 1024), strict=True))
    far = sum(a * b for a, b in zip(embed("red cat sleeps", 1024), embed("quantum tax law", 1024), strict=True))
    assert near > far
    spec = _spec("@cf/baai/bge-m3")
    ctx = [{"text": "tax law"}, {"text": "a cat"}, {"text": "the red cat sleeps"}]
    scores = run_model(spec, {"query": "red cat sleeps", "contexts": ctx}).value["response"]
    assert scores[0]["id"] == 2
    assert [s["score"] for s in scores] == sorted((s["score"] for s in scores), reverse=True)


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", (0, 0)
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return size[0], size[1], zlib.decompress(idat)


def test_png_is_a_real_png_of_the_requested_size() -> None:
    width, height, raw = _png_pixels(png(70, 33, "seed"))
    assert (width, height) == (70, 33) and len(raw) == height * (1 + 3 * width)
    assert png(70, 33, "seed") == png(70, 33, "seed") != png(70, 33, "other")


def test_jpeg_is_a_well_formed_baseline_jpeg() -> None:
    data = jpeg(100, 70, "seed")
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"
    pos, markers = 2, []
    while True:
        assert data[pos] == 0xFF
        marker = data[pos + 1]
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        markers.append(marker)
        if marker == 0xC0:
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            assert (width, height) == (100, 70)
        pos += 2 + length
        if marker == 0xDA:
            break
    assert markers == [0xE0, 0xDB, 0xC0, 0xC4, 0xDA]
    scan = data[pos:-2]
    assert scan and all(scan[i + 1] == 0 for i in range(len(scan) - 1) if scan[i] == 0xFF)  # stuffed


def test_mp3_is_a_sequence_of_valid_mpeg1_layer3_frames() -> None:
    data = mp3(1.0)
    frame = 144 * 128000 // 44100
    assert len(data) % frame == 0 and len(data) // frame == round(1.0 / (1152 / 44100))
    for offset in range(0, len(data), frame):
        b1, b2, b3 = data[offset + 1], data[offset + 2], data[offset + 3]
        assert data[offset] == 0xFF and (b1 & 0xE0) == 0xE0  # frame sync
        assert (b1 >> 3) & 3 == 3 and (b1 >> 1) & 3 == 1  # MPEG-1, Layer III
        assert b2 >> 4 == 9 and (b2 >> 2) & 3 == 0 and b3 >> 6 == 3  # 128 kbit/s, 44.1 kHz, mono


def test_wav_and_other_content_types() -> None:
    data = wav(0.5)
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE" and struct.unpack("<I", data[4:8])[0] == len(data) - 8
    assert media_for("image/png; charset=binary", seed="x", width=8, height=8)[:4] == b"\x89PNG"
    assert media_for("audio/mpeg", seed="x")[:2] == b"\xff\xfb"
    assert media_for("application/x-unknown", seed="x")


def test_root_branches_are_chosen_by_the_keys_an_object_uses() -> None:
    spec = _spec("@cf/baai/bge-m3")
    good = run_model(spec, {"text": ["a b", "c"]}).value
    assert spec.outputs.validator.first_error(good) is None
    bad = {**good, "data": [[*good["data"][0][:-1], "x"]]}
    # Every branch of this output requires nothing, so a plain anyOf would let the "Query" branch accept this.
    assert spec.outputs.validator.first_error(bad) == "/data/0/1023: 'x' is not of type 'number'"
    assert spec.outputs.validator.first_error({"request_id": 5}) == "/request_id: 5 is not of type 'string'"
