"""What telemetry costs per call, measured in one process against bench/_server.py.

``python bench/_otel.py MODE PORT ROUNDS`` prints one JSON object: client CPU seconds per call, per
sample, for ``floor`` (urllib3 + msgspec, no SDK), ``off`` (our client with ``telemetry=False``) and
``on`` (our client as installed: telemetry on by default), taking turns one sample each per round.

MODE says what the process has:

- ``noapi``: ``opentelemetry`` cannot be imported (a meta-path finder refuses it, as if it were not
  installed);
- ``api``: the API, no SDK configured (the global providers are the API's no-op proxies);
- ``sdk``: the SDK's ``TracerProvider`` with a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter``
  and a ``MeterProvider`` with an ``InMemoryMetricReader``, set as the global providers.

``python bench/_otel.py import MODE`` times a cold start (``import workers_ai``, a client, a model
handle) in seconds, under the same meta-path finder for both modes, and says whether any
``opentelemetry`` module was loaded.
"""

from __future__ import annotations

import json
import sys
from typing import Any


class _Refuse:
    """A meta-path finder refusing ``opentelemetry`` (or nothing: the same finder costs the same in both modes)."""

    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if self.refuse and (name == "opentelemetry" or name.startswith("opentelemetry.")):
            raise ModuleNotFoundError(name)
        return None


def _set_sdk() -> Any:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return exporter


def main() -> None:
    if sys.argv[1] == "import":
        sys.meta_path.insert(0, _Refuse(sys.argv[2] == "noapi"))
        import time

        t0 = time.perf_counter()
        from workers_ai import WorkersAI

        WorkersAI(account_id="a" * 32, api_token="t").model("@cf/baai/bge-m3")
        elapsed = time.perf_counter() - t0
        loaded = any(m.startswith("opentelemetry") for m in sys.modules)
        print(json.dumps({"seconds": elapsed, "otel_loaded": loaded}))
        return
    mode, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sys.meta_path.insert(0, _Refuse(mode == "noapi"))
    exporter = _set_sdk() if mode == "sdk" else None

    from _calls import ACCOUNT, CONTEXTS, MODEL, QUERY, TOKEN, build, measure
    from workers_ai import WorkersAI
    from workers_ai.models.cf.baai.bge_m3 import Context

    root = f"http://127.0.0.1:{port}/client/v4"
    contexts = [Context(text=t) for t in CONTEXTS]
    calls: dict[str, Any] = {"floor": build("floor", "small", port)[0]}
    for name, telemetry in (("off", False), ("on", True)):
        ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=root, rate_limit=None, telemetry=telemetry)
        bge = ai.model(MODEL)
        calls[name] = lambda bge=bge: bge.rank(query=QUERY, contexts=contexts)
    for call in calls.values():
        call()
    out: dict[str, Any] = measure(calls, rounds)
    out["meta"] = {
        "otel_loaded": any(m.startswith("opentelemetry") for m in sys.modules),
        "spans_exported": len(exporter.get_finished_spans()) if exporter is not None else 0,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
