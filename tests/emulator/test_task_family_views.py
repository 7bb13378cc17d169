"""Family conformance for the tasks beyond text, embeddings, ASR and media: every generated model of
classification, object detection, reranking, translation, summarization and image-to-text, on one shared
emulator, answers with its family's view, its fields present, typed and filled from the wire; and a
model that can answer raw media or base64 JSON returns one type (bytes) whichever the wire was."""

from __future__ import annotations

import base64
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workers_ai import BinaryOutput, Classifications, Detections, WorkersAI, _registry
from workers_ai.families import GeneratedTextView, RerankView
from workers_ai.testing import Emulator

from tests._server import Reply, ScriptedServer, ok
from tests.conftest import ACCOUNT

MODULES = {mid: module for mid, (module, _handle) in _registry.MODELS.items()}
TASKS = {mid: str(importlib.import_module(f"workers_ai.{mod}").INFO.task) for mid, mod in sorted(MODULES.items())}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def of_task(*tasks: str) -> list[str]:
    return [m for m, t in TASKS.items() if t in tasks]


CLASSIFIERS = [m for m in of_task("Text Classification", "Image Classification") if "reranker" not in m]
RERANKERS = [m for m in of_task("Text Classification") if "reranker" in m]
DETECTORS = of_task("Object Detection")
TEXT_OUT = of_task("Translation", "Summarization", "Image-to-Text")


def test_the_families_cover_the_catalog() -> None:
    assert len(CLASSIFIERS) >= 2 and RERANKERS and DETECTORS and len(TEXT_OUT) >= 6, TASKS


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0)) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def ai(emu: Emulator) -> Iterator[WorkersAI]:
    with emu.client() as client:
        yield client


def _is_text(model_id: str) -> bool:
    return TASKS[model_id] == "Text Classification"


def _call(ai: WorkersAI, model_id: str) -> Any:
    """The model's family method with the arguments its family shares."""
    handle: Any = ai.model(model_id)
    if model_id in CLASSIFIERS:
        return handle.classify(text="What a lovely day") if _is_text(model_id) else handle.classify(PNG)
    if model_id in DETECTORS:
        return handle.detect(PNG)
    if model_id in RERANKERS:
        return handle.rank(query="llamas", contexts=[{"text": "a llama"}, {"text": "a cloud"}, {"text": "rain"}])
    if model_id == "@cf/ai4bharat/indictrans2-en-indic-1B":
        return handle.translate(text=["Hello, friend", "Good night"], target_language="hin_Deva")
    if hasattr(handle, "translate"):
        return handle.translate(text="Hello, friend", target_lang="fr")
    if hasattr(handle, "summarize"):
        return handle.summarize(input_text="A long story about llamas. " * 20)
    if model_id.startswith("@cf/moondream/"):
        return handle.describe(task="caption", image="data:image/png;base64," + base64.b64encode(PNG).decode())
    return handle.describe(PNG)  # the image as the raw body


@pytest.mark.parametrize("model_id", CLASSIFIERS)
def test_every_classifier_has_the_top_label_and_score(model_id: str, ai: WorkersAI) -> None:
    out = _call(ai, model_id)
    assert isinstance(out, Classifications) and isinstance(out, list) and out, (model_id, out)
    top = max(out, key=lambda c: c.score)
    assert out.label == top.label and isinstance(out.label, str) and out.label
    assert out.score == top.score and type(out.score) is float
    assert out.classes == out.raw == list(out) and type(out.raw) is list  # the wire list, nothing lost
    again = ai.run(model_id, {"text": "fine"} if _is_text(model_id) else {"image": list(PNG)})
    assert isinstance(again, Classifications)  # generic run gets the view too


@pytest.mark.parametrize("model_id", DETECTORS)
def test_every_detector_has_objects_with_float_boxes(model_id: str, ai: WorkersAI) -> None:
    out = _call(ai, model_id)
    assert isinstance(out, Detections) and out
    assert out.labels == [o.label for o in out] and all(out.labels)
    for obj in out.objects:
        box = (obj.box.xmin, obj.box.ymin, obj.box.xmax, obj.box.ymax)
        assert all(type(v) is float for v in box) and type(obj.score) is float, (model_id, obj)
    assert out.best is not None and out.best.score == max(o.score for o in out)


@pytest.mark.parametrize("model_id", RERANKERS)
def test_every_reranker_ranks_the_contexts(model_id: str, ai: WorkersAI) -> None:
    out = _call(ai, model_id)
    assert isinstance(out, RerankView)
    ranking = out.ranking
    assert sorted(r.index for r in ranking) == [0, 1, 2] and all(type(r.index) is int for r in ranking)
    assert [r.score for r in ranking] == sorted((r.score for r in ranking), reverse=True)
    assert out.best == ranking[0].index


@pytest.mark.parametrize("model_id", TEXT_OUT)
def test_every_text_answering_model_has_text(model_id: str, ai: WorkersAI) -> None:
    out = _call(ai, model_id)
    assert isinstance(out, GeneratedTextView), (model_id, type(out))
    assert isinstance(out.text, str) and "\n".join(out.texts) == out.text
    if not model_id.startswith("@cf/moondream/"):  # its text fields are optional (one per task); see below
        assert out.text and out.texts, (model_id, out)


def test_the_text_view_reads_each_wire_name() -> None:
    import msgspec
    from workers_ai.models.cf.ai4bharat.indictrans2_en_indic_1b import TranslationOutput as Many
    from workers_ai.models.cf.facebook.bart_large_cnn import SummarizationOutput
    from workers_ai.models.cf.meta.m2m100_1_2b import TranslationOutput as One

    assert msgspec.convert({"translations": ["un", "deux"]}, Many).texts == ["un", "deux"]
    assert msgspec.convert({"translations": ["un", "deux"]}, Many).text == "un\ndeux"
    assert msgspec.convert({"translated_text": "bonjour"}, One).text == "bonjour"
    assert msgspec.convert({"summary": "short"}, SummarizationOutput).text == "short"
    from workers_ai.models.cf.moondream.moondream3_1_9b_a2b import ImageToTextOutput as Moon

    timing = {"prefill_time_ms": 1.0, "decode_time_ms": 1.0, "ttft_ms": 1.0}
    metrics = {"finish_reason": "stop", "metrics": {"input_tokens": 3, "output_tokens": 2, **timing}}

    assert msgspec.convert({"caption": "a llama", **metrics}, Moon).text == "a llama"
    assert msgspec.convert({"answer": "two", **metrics}, Moon).text == "two"


def test_classifications_read_the_best_class_whatever_the_wire_order() -> None:
    from workers_ai.models.cf.microsoft.resnet_50 import ImageClassification

    out = Classifications([ImageClassification(label="cat", score=0.2), ImageClassification(label="dog", score=0.7)])
    assert (out.label, out.score) == ("dog", 0.7)
    with pytest.raises(IndexError):
        _ = Classifications[ImageClassification]().label


# ------------------------------------------------------------------ media: one return type


@pytest.mark.parametrize("wire", ["binary", "json"])
def test_melotts_speak_returns_bytes_whichever_the_wire(wire: str, server: ScriptedServer, tmp_path: Path) -> None:
    audio = b"ID3\x03\x00\x00\x00" + bytes(range(200))
    if wire == "binary":
        server.script(Reply(200, audio, {"content-type": "audio/mpeg"}))
    else:
        server.script(ok({"audio": base64.b64encode(audio).decode()}))
    with WorkersAI(account_id=ACCOUNT, api_token="t", base_url=server.base_url, max_retries=0) as client:
        out = client.model("@cf/myshell-ai/melotts").speak(text="hello")
    assert type(out) is BinaryOutput and out.data == audio and out.content_type == "audio/mpeg"
    out.save(tmp_path / "a.mp3")
    assert (tmp_path / "a.mp3").read_bytes() == audio
