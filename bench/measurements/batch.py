"""Many texts through the chunking helper and the batch API, as floats, as one float32 array and on Ray
(``bench/_batch.py``)."""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.paths import BENCH, PY
from bench.processes import background, run, run_json


def measure(ctx: Context) -> dict[str, Any]:
    """10,000 texts through the chunking helper and the batch API, against the emulator in another
    process with fast queue settings: client CPU, wall time and peak RSS of the client process."""
    texts = ctx.pick(quick=1000, full=10_000)
    python = PY  # the emulator needs the [testing] extra, which the footprint venv must not have
    probe = run([python, str(BENCH / "_batch.py"), "probe"], check=False).strip()
    if not probe.startswith("ok"):
        return {"error": probe or "the emulator is not available"}
    with background([python, str(BENCH / "_batch.py"), "serve"], "EMULATOR ", timeout=60) as spec:
        out: dict[str, Any] = run_json([python, str(BENCH / "_batch.py"), "client", spec, str(texts)], timeout=400)
        # The same texts as one float32 array (a fresh process, so its peak RSS is its own), then on Ray.
        for key, cmd in (("numpy", ["client", spec, str(texts), "numpy"]), ("ray", ["ray", spec, str(texts)])):
            try:
                out[key] = run_json([python, str(BENCH / "_batch.py"), *cmd], timeout=600)
            except Exception as exc:  # numpy/Ray missing (the `ray` extra) or a failed run: say so, go on
                out[key] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        return out
