"""Without the ``realtime`` extra (no ``websockets``), ``listen()`` on either client and ``workers-ai
listen`` end in a ``WorkersAIError`` naming the extra to install, not a ``ModuleNotFoundError`` traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ACCOUNT = "0123456789abcdef0123456789abcdef"
# ``sys.modules[name] = None`` makes every import of it fail, as when it is not installed.
_WITHOUT = "import sys; sys.modules['websockets'] = None\n"


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        CLOUDFLARE_ACCOUNT_ID=ACCOUNT,
        CLOUDFLARE_API_TOKEN="t",
        CLOUDFLARE_BASE_URL="http://127.0.0.1:9",  # nothing listens: the call must fail before connecting
    )
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("client", ["WorkersAI", "AsyncWorkersAI"])
def test_listen_names_the_extra(client: str) -> None:
    code = (
        f"from workers_ai import {client}, errors\n"
        f"ai = {client}()\n"
        "try:\n"
        "    ai.model('@cf/deepgram/nova-3').listen(encoding='linear16', sample_rate=16000)\n"
        "except errors.WorkersAIError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert "pip install 'workers-ai[realtime]'" in done.stdout and "ConfigurationError" in done.stdout


def test_workers_ai_listen_names_the_extra(tmp_path: Path) -> None:
    audio = tmp_path / "a.raw"
    audio.write_bytes(b"\0" * 3200)
    done = _python("from workers_ai._cli.main import main; sys.exit(main())", "listen", str(audio))
    assert done.returncode == 1, done.stderr
    assert "pip install 'workers-ai[realtime]'" in done.stderr and "Traceback" not in done.stderr
