"""The workers-ai generator: schemas/ -> load -> plan -> render -> write -> generated/ (``python -m codegen``)."""

from .cli import generate, main

__all__ = ["generate", "main"]
