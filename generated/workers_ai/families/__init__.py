"""Task families: one uniform, typed view of a result per task, whatever the model's wire shape.

Each module holds one task's view once: a mixin (``__slots__ = ()``, properties only) that the generator
adds as an extra base of that task's output structs, and a ``Protocol`` a user types a function with so it
takes any model's result. The wire struct is the result itself, so nothing the API sent is lost. Tasks that
answer with a JSON list (classifiers, detectors) get a ``list`` subclass instead (:data:`LIST_VIEWS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .automatic_speech_recognition import (
    TimedText,
    TimedTranscriptView,
    TimedWord,
    TimingView,
    TranscriptResult,
    TranscriptView,
)
from .classification import ClassificationResult, Classifications, ScoredLabel
from .detection import BoundingBox, DetectedObject, DetectionResult, Detections
from .generated_text import GeneratedText, GeneratedTextView, ImageTextResult, SummaryResult, TranslationResult
from .media import MediaResult, MediaView
from .reranking import Ranked, RerankResult, RerankView
from .text_embeddings import EmbeddingResult, EmbeddingView
from .text_generation import ResponsesUsageView, TextResult, TextView, TokenUsage

__all__ = [
    "LIST_VIEWS",
    "BoundingBox",
    "ClassificationResult",
    "Classifications",
    "DetectedObject",
    "DetectionResult",
    "Detections",
    "EmbeddingResult",
    "EmbeddingView",
    "GeneratedText",
    "GeneratedTextView",
    "ImageTextResult",
    "MediaResult",
    "MediaView",
    "Ranked",
    "RerankResult",
    "RerankView",
    "ResponsesUsageView",
    "ScoredLabel",
    "SummaryResult",
    "TextResult",
    "TextView",
    "TimedText",
    "TimedTranscriptView",
    "TimedWord",
    "TimingView",
    "TokenUsage",
    "TranscriptResult",
    "TranscriptView",
    "TranslationResult",
    "family_result",
    "list_view",
]

# The list subclass a task's JSON-list answer is handed back as (by lower-cased task name); the generator
# names the same class in the method's return type (``codegen.views.LIST_VIEWS`` mirrors this table).
LIST_VIEWS: dict[str, Callable[[list[Any]], list[Any]]] = {
    "text classification": Classifications,
    "image classification": Classifications,
    "object detection": Detections,
}


def list_view(task: str, value: object) -> object:
    """``value`` as its task's list view when it is a plain JSON list of a listed task; else unchanged."""
    view = LIST_VIEWS.get(task.lower())
    if view is not None and type(value) is list:
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return view(items)
    return value


def family_result(task: str, value: object) -> object:
    """A decoded answer as its family hands it back: a JSON list of a listed task as its list view. (A typed
    media method that may get raw bytes or base64 JSON turns the JSON into bytes itself, ``as_binary``; the
    generic ``run()`` keeps what was sent.)"""
    return list_view(task, value)
