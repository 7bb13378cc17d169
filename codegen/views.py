"""Which task-family view (a mixin of ``workers_ai.families``) each output struct gets.

Decided by the model's task and the struct's own wire keys, never by model id, so a schema file of a
known task dropped into ``schemas/`` gets its family's view with no code change, and a struct shared by
several models (``models/_shapes/<task>_types``) gets the same view from each of them. A wire field whose name a view
uses for its uniform property (a classic reply's ``tool_calls``) keeps its wire name and is renamed in
Python (``tool_calls_``), so the view's property is what ``.tool_calls`` means.
"""

from __future__ import annotations

__all__ = ["LIST_VIEWS", "VIEW_PROPERTIES", "list_view_for", "view_for"]

# The properties each view defines (a field with one of these names would hide the view's property).
VIEW_PROPERTIES: dict[str, frozenset[str]] = {
    "TextView": frozenset({"text", "tool_calls", "finish_reason", "reasoning"}),
    "ResponsesUsageView": frozenset({"prompt_tokens", "completion_tokens"}),
    "EmbeddingView": frozenset({"vectors", "dimensions"}),
    "TranscriptView": frozenset({"text"}),  # a wire `words` field (Flux, untimed) is the words: it stays
    "TimedTranscriptView": frozenset({"text", "words", "segments"}),
    "TimingView": frozenset({"words", "segments"}),
    "MediaView": frozenset({"data", "content_type", "save"}),
    "RerankView": frozenset({"ranking", "best"}),
    "GeneratedTextView": frozenset({"text", "texts"}),
}

# Tasks answered with a JSON list of items: the list subclass the method returns (``families.LIST_VIEWS``
# hands the decoded list back as it at run time).
LIST_VIEWS: dict[str, str] = {
    "text classification": "Classifications",
    "image classification": "Classifications",
    "object detection": "Detections",
}

# Tasks whose answer is one text under a task-specific wire name.
_TEXT_TASKS = ("translation", "summarization", "image-to-text")
_TEXT_KEYS = frozenset({"translated_text", "translations", "summary", "description", "answer", "caption"})


def list_view_for(task: str) -> str | None:
    """The list view class a list answer of ``task`` is returned as (None: a plain list)."""
    return LIST_VIEWS.get(task.lower())


def view_for(task: str, keys: frozenset[str], output_root: bool) -> str | None:
    """The view mixin for a struct with wire ``keys`` in a model of ``task`` (None: no view)."""
    task = task.lower()
    if task == "text generation":
        if output_root and ("response" in keys or "choices" in keys or {"output", "created_at"} <= keys):
            return "TextView"
        if {"input_tokens", "output_tokens"} <= keys and "prompt_tokens" not in keys:
            return "ResponsesUsageView"
        return None
    if not output_root:
        return None
    if task == "text embeddings" and "shape" in keys and ("data" in keys or "response" in keys):
        return "EmbeddingView"
    if task == "automatic speech recognition" and "text" not in keys:
        if "results" in keys:
            return "TimedTranscriptView"  # nova-3
        return "TranscriptView" if "transcript" in keys else None  # Flux's turn events
    if task == "automatic speech recognition" and keys & {"words", "segments"}:
        return "TimingView"  # whisper: the wire `text` is the transcript
    if task in ("text classification", "text embeddings") and keys == frozenset({"response"}):
        return "RerankView"  # bge-reranker, and bge-m3's rank(): {response: [{id, score}]}
    if task in _TEXT_TASKS and keys & _TEXT_KEYS and not keys & {"text", "texts"}:
        return "GeneratedTextView"
    if task in ("text-to-image", "text-to-speech") and keys & {"image", "audio"} and "data" not in keys:
        return "MediaView"
    return None
