"""Tasks whose answer is text but not a chat (translation, summarization, image-to-text): ``.text`` on every
model's result, whatever the wire calls the field (``translated_text``, ``translations``, ``summary``,
``description``, ``answer``, ``caption``)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["GeneratedText", "GeneratedTextView", "ImageTextResult", "SummaryResult", "TranslationResult"]

# The wire fields that hold the text, in the order they are looked for.
_FIELDS = ("translated_text", "summary", "description", "answer", "caption", "response")


class GeneratedText(Protocol):
    """A result whose answer is one text."""

    @property
    def text(self) -> str: ...


class TranslationResult(GeneratedText, Protocol):
    """What every translation model's result offers: ``.text`` and ``.texts`` (one per input text)."""

    @property
    def texts(self) -> list[str]: ...


class SummaryResult(GeneratedText, Protocol):
    """What every summarization model's result offers."""


class ImageTextResult(GeneratedText, Protocol):
    """What every image-to-text model's result offers."""


class GeneratedTextView:
    """Mixin of the output structs of translation, summarization and image-to-text models."""

    __slots__ = ()

    @property
    def texts(self) -> list[str]:
        """Every text of the answer (a batch translation's list; else the one text)."""
        many: Any = getattr(self, "translations", None)
        if isinstance(many, list):
            return [t for t in many if isinstance(t, str)]  # pyright: ignore[reportUnknownVariableType]
        for name in _FIELDS:
            value = getattr(self, name, None)
            if isinstance(value, str):
                return [value]
        return []

    @property
    def text(self) -> str:
        """The answer's text (texts joined by newlines when the wire sent a list; ``""`` when none)."""
        return "\n".join(self.texts)
