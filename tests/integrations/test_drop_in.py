"""Adding a model is dropping its schema file in ``schemas/`` and regenerating: nothing else is edited.

The new model is called through the emulator of the regenerated package, and a small user file is
type-checked against it with mypy to show the typing flows from the schema to the caller.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests._codegen_util import ROOT, build, importable, write_schema

PACKAGE = "dropin_pkg"
MODEL = "@cf/acme/tone-detector"
NEW_SCHEMA: dict[str, Any] = {
    "name": MODEL,
    "description": "Tells whether a short text sounds friendly, neutral or hostile.",
    "task": {"name": "Text Classification", "description": "Sorts text into categories."},
    "properties": [
        {"property_id": "price", "value": [{"unit": "per M input tokens", "price": 0.02, "currency": "USD"}]}
    ],
    "schema": {
        "input": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "description": "The text to judge."},
                "language": {"type": "string", "enum": ["en", "de", "fr"], "default": "en"},
            },
            "required": ["text"],
        },
        "output": {
            "type": "object",
            "contentType": "application/json",
            "properties": {
                "tone": {"type": "string", "enum": ["friendly", "neutral", "hostile"]},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["tone", "confidence"],
        },
    },
}

USER_FILE = f'''
from {PACKAGE} import WorkersAI

ai = WorkersAI(account_id="a" * 32, api_token="tok")
detector = ai.model("{MODEL}")
result = detector.classify(text="thanks a lot!", language="de")
reveal_type(detector)
reveal_type(result)
tone: str = result.tone
confidence: float = result.confidence
detector.classify(text="x", language="es")  # not in the enum: a type error
'''


def test_drop_in_schema_becomes_a_typed_callable_model(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "out"
    shutil.copytree(ROOT / "schemas", schemas)
    write_schema(schemas, "@cf/acme/tone-detector.json", NEW_SCHEMA)  # the only change
    build(schemas, out, PACKAGE, with_testing=True)  # a package not named workers_ai is lean unless asked

    with importable(out, PACKAGE):
        pkg = importlib.import_module(PACKAGE)
        testing = importlib.import_module(f"{PACKAGE}.testing")
        with testing.Emulator(models=[MODEL]) as emu:
            ai = pkg.WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url)
            detector = ai.model(MODEL)
            module = importlib.import_module(f"{PACKAGE}.models.cf.acme.tone_detector")
            assert type(detector) is module.ToneDetector
            result = detector.classify(text="thanks a lot!", language="de")
            assert isinstance(result, module.TextClassificationOutput)
            assert result.tone in ("friendly", "neutral", "hostile") and 0 <= result.confidence <= 1
            sent = next(r for r in emu.requests if r.path.endswith(f"/ai/run/{MODEL}"))
            assert sent.json() == {"text": "thanks a lot!", "language": "de"}
            assert module.INFO.price == ({"unit": "per M input tokens", "price": 0.02, "currency": "USD"},)

    user = tmp_path / "user_code.py"
    user.write_text(USER_FILE, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports", "silent", str(user)],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(out)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.splitlines()
    revealed = [line.split("Revealed type is ", 1)[1] for line in lines if "Revealed type is" in line]
    assert len(revealed) == 2, proc.stdout
    assert revealed[0] == f'"{PACKAGE}.models.cf.acme.tone_detector.ToneDetector"', proc.stdout
    # The output struct is its shape's (models/_shapes/<task>_<hash>), re-exported by the model's module.
    shape = rf'"{PACKAGE}\.models\._shapes\.text_classification_[a-p]{{6}}\.TextClassificationOutput"'
    assert re.fullmatch(shape, revealed[1]), proc.stdout
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 1 and "user_code.py:11:" in errors[0] and '"language"' in errors[0], proc.stdout
