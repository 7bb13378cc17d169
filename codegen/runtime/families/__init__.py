"""Task families: one uniform, typed view of a result per task, whatever the model's wire shape.

Each module holds one task's view once: a mixin (``__slots__ = ()``, properties only) that the generator
adds as an extra base of that task's output structs, and a ``Protocol`` a user types a function with so it
takes any model's result. The wire struct is the result itself, so nothing the API sent is lost.
"""

from __future__ import annotations

from .automatic_speech_recognition import TranscriptResult, TranscriptView
from .media import MediaResult, MediaView
from .text_embeddings import EmbeddingResult, EmbeddingView
from .text_generation import ResponsesUsageView, TextResult, TextView, TokenUsage

__all__ = [
    "EmbeddingResult",
    "EmbeddingView",
    "MediaResult",
    "MediaView",
    "ResponsesUsageView",
    "TextResult",
    "TextView",
    "TokenUsage",
    "TranscriptResult",
    "TranscriptView",
]
