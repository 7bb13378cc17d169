"""Task families: one uniform, typed view of a result per task, whatever the model's wire shape.

Each module holds one task's view once: a mixin (``__slots__ = ()``, properties only) that the generator
adds as an extra base of that task's output structs, and a ``Protocol`` a user types a function with so it
takes any model's result. The wire struct is the result itself, so nothing the API sent is lost. Tasks that
answer with a JSON list (classifiers, detectors) get a ``list`` subclass instead (:data:`LIST_VIEWS`).

A family module loads when one of its names is first used (PEP 562): a model module that imports
``EmbeddingView`` from here loads the embeddings family alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

    # The list subclass a task's JSON-list answer is handed back as (by lower-cased task name); the
    # generator names the same class in the method's return type (``codegen.views.LIST_VIEWS`` mirrors it).
    LIST_VIEWS: dict[str, Callable[[list[Any]], list[Any]]]

# Each view's family module (below this package).
_HOMES: dict[str, str] = {
    "BoundingBox": "detection",
    "ClassificationResult": "classification",
    "Classifications": "classification",
    "DetectedObject": "detection",
    "DetectionResult": "detection",
    "Detections": "detection",
    "EmbeddingResult": "text_embeddings",
    "EmbeddingView": "text_embeddings",
    "GeneratedText": "generated_text",
    "GeneratedTextView": "generated_text",
    "ImageTextResult": "generated_text",
    "MediaResult": "media",
    "MediaView": "media",
    "Ranked": "reranking",
    "RerankResult": "reranking",
    "RerankView": "reranking",
    "ResponsesUsageView": "text_generation",
    "ScoredLabel": "classification",
    "SummaryResult": "generated_text",
    "TextResult": "text_generation",
    "TextView": "text_generation",
    "TimedText": "automatic_speech_recognition",
    "TimedTranscriptView": "automatic_speech_recognition",
    "TimedWord": "automatic_speech_recognition",
    "TimingView": "automatic_speech_recognition",
    "TokenUsage": "text_generation",
    "TranscriptResult": "automatic_speech_recognition",
    "TranscriptView": "automatic_speech_recognition",
    "TranslationResult": "generated_text",
}

# ``LIST_VIEWS`` as (family module, class name) by lower-cased task: a reply of another task loads nothing.
_LIST_VIEW_HOMES: dict[str, tuple[str, str]] = {
    "text classification": ("classification", "Classifications"),
    "image classification": ("classification", "Classifications"),
    "object detection": ("detection", "Detections"),
}


def _load(module: str, name: str) -> Any:
    return getattr(importlib.import_module(f".{module}", __name__), name)


if not TYPE_CHECKING:  # type checkers see the imports above: a misspelt name stays an error, not Any

    def __getattr__(name: str) -> Any:
        if name == "LIST_VIEWS":
            value = {task: _load(*home) for task, home in _LIST_VIEW_HOMES.items()}
        elif name in _HOMES:
            value = _load(_HOMES[name], name)
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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


def list_view(task: str, value: object) -> object:
    """``value`` as its task's list view when it is a plain JSON list of a listed task; else unchanged."""
    if type(value) is not list:  # the usual answer, a struct: no task to look up
        return value
    items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
    home = _LIST_VIEW_HOMES.get(task.lower())
    if home is None:
        return items
    view: Callable[[list[Any]], list[Any]] = _load(*home)
    return view(items)


def family_result(task: str, value: object) -> object:
    """A decoded answer as its family hands it back: a JSON list of a listed task as its list view. (A typed
    media method that may get raw bytes or base64 JSON turns the JSON into bytes itself, ``as_binary``; the
    generic ``run()`` keeps what was sent.)"""
    return list_view(task, value)
