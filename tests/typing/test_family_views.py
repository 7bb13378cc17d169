"""The family views as a user types them: ``family_views.py`` (one function per family over the exported
Protocols, no narrowing) passes mypy --strict and pyright strict and runs on the emulator; and a file that
hands every generated text and embedding model's result to those functions type-checks with 0 errors."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

from workers_ai import WorkersAI, _registry
from workers_ai.testing import Emulator

HERE = Path(__file__).parent


def _mypy(path: Path, cache: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


def _pyright(path: Path, tmp: Path) -> list[str]:
    config = tmp / "pyrightconfig.json"
    venv = Path(sys.executable).parents[1]
    config.write_text(
        json.dumps(
            {"typeCheckingMode": "strict", "pythonVersion": "3.10", "venvPath": str(venv.parent), "venv": venv.name}
        )
    )
    pyright = Path(sys.executable).parent / "pyright"
    proc = subprocess.run([str(pyright), "--outputjson", "-p", str(config), str(path)], capture_output=True, text=True)
    report = json.loads(proc.stdout)
    return [d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error"]


def test_the_family_user_file_is_clean_under_mypy_and_pyright(tmp_path: Path) -> None:
    assert _mypy(HERE / "family_views.py", tmp_path / "cache") == []
    assert _pyright(HERE / "family_views.py", tmp_path) == []


def test_the_family_user_file_runs_on_the_emulator(tmp_path: Path) -> None:
    sys.path.insert(0, str(HERE))
    try:
        import family_views
    finally:
        sys.path.remove(str(HERE))
    with Emulator() as emu:
        with WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
            report = family_views.main(ai, tmp_path)
    for reply in report["replies"]:
        assert reply["text"] and type(reply["tokens"]) is int and reply["tokens"] > 0
        assert reply["total"] == reply["tokens"]
    assert isinstance(report["city"], str) and report["city"]
    assert report["old"] and report["streamed"]
    assert report["dims"][0] == 1024 and report["dims"][1] == 384
    assert all(isinstance(t, str) and t for t in report["transcripts"])
    assert all("@0.00-" in t for t in report["transcripts"])  # every ASR model's first word, timed
    assert all(label and 0 < score <= 1 for label, score in report["classes"])
    assert report["objects"] and all(label and area > 0 for label, area in report["objects"])
    assert sorted(report["order"]) == [0, 1]
    assert all(isinstance(t, str) and t for t in report["texts"])
    assert all(n > 0 for n in report["media"])
    assert {p.name for p in tmp_path.iterdir()} >= {"a.jpg", "b", "c.mp3", "d.mp3"}


def _method(module: str, handle: str, names: tuple[str, ...]) -> str | None:
    cls = getattr(importlib.import_module(f"workers_ai.{module}"), handle)
    return next((n for n in names if hasattr(cls, n)), None)


# The call each family makes; the families whose arguments differ by model name them per model.
_PER_MODEL = {
    "@cf/meta/m2m100-1.2b": 'translate(text="hi", target_lang="fr")',
    "@cf/ai4bharat/indictrans2-en-indic-1B": 'translate(text="hi", target_language="hin_Deva")',
    "@cf/facebook/bart-large-cnn": 'summarize(input_text="a")',
    "@cf/moondream/moondream3.1-9B-A2B": 'describe(task="caption", image="data:image/png;base64,")',
}
_FAMILY_CALLS = {
    "Automatic Speech Recognition": ("transcript", 'transcribe(b"RIFF")'),
    "Text-to-Speech": ("media", 'speak(text="hi")'),
    "Text-to-Image": ("media", 'generate_image(prompt="a cat")'),
    "Text Embeddings": ("vectors", 'embed(text=["a"])'),
    "Image Classification": ("classes", 'classify(b"PNG")'),
    "Text Classification": ("classes", 'classify(text="a")'),
    "Object Detection": ("objects", 'detect(b"PNG")'),
    "Translation": ("said", ""),
    "Summarization": ("said", ""),
    "Image-to-Text": ("said", 'describe(b"PNG")'),
}


def test_every_model_of_every_family_fits_its_family_protocol(tmp_path: Path) -> None:
    """Generated from the registry: a dropped-in model of a known task is covered with no edit here."""
    lines = [
        "from typing import Any",
        "from workers_ai import (ClassificationResult, DetectionResult, EmbeddingResult, ImageTextResult,",
        "    MediaResult, RerankResult, SummaryResult, TextResult, TranscriptResult, TranslationResult, WorkersAI)",
        "def text(r: TextResult) -> str:",
        "    return r.text + str(r.usage.total_tokens) + str([c.arguments for c in r.tool_calls])",
        "def vectors(e: EmbeddingResult) -> int:",
        "    return e.dimensions",
        "def transcript(t: TranscriptResult) -> str:",
        "    return t.text + str([w.start for w in t.words]) + str([s.text for s in t.segments])",
        "def media(m: MediaResult) -> int:",
        "    return len(m.data) + len(m.content_type)",
        "def classes(c: ClassificationResult) -> float:",
        "    return c.score + len(c.label)",
        "def objects(d: DetectionResult) -> float:",
        "    return sum(o.box.xmin + o.score for o in d.objects)",
        "def ranked(r: RerankResult) -> int:",
        "    return r.best + r.ranking[0].index",
        "def said(t: TranslationResult | SummaryResult | ImageTextResult) -> str:",
        "    return t.text",
        "def main(ai: WorkersAI, m: list[Any]) -> None:",
    ]
    counted: dict[str, int] = {}
    for model_id, (module, handle) in sorted(_registry.MODELS.items()):
        task = importlib.import_module(f"workers_ai.{module}").INFO.task
        if task == "Text Generation" and not model_id.startswith(("@cf/cloudflare/clef", "@cf/cloudflare/clairic")):
            method = _method(module, handle, ("chat", "generate"))
            call = ("text", "chat(messages=m)" if method == "chat" else 'generate(prompt="hi")')
        elif model_id == "@cf/deepgram/flux":
            continue  # WebSocket only
        elif "reranker" in model_id:
            call = ("ranked", 'rank(query="q", contexts=[{"text": "a"}])')
        elif task in _FAMILY_CALLS:
            family, default = _FAMILY_CALLS[task]
            call = (family, _PER_MODEL.get(model_id, default))
        else:
            continue
        lines.append(f'    {call[0]}(ai.model("{model_id}").{call[1]})')
        counted[task] = counted.get(task, 0) + 1
    assert counted["Text Generation"] >= 50 and counted["Text Embeddings"] >= 8, counted
    assert len(counted) >= 11, counted  # every family with a view
    path = tmp_path / "every_family_model.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _mypy(path, tmp_path / "cache") == []
