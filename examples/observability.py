"""See a call's log line and its span (docs/observability.md; type-checked by ``make check``).

Runs against the local emulator, so it needs no account: ``python examples/observability.py``. Needs
``pip install 'workers-ai[otel]' opentelemetry-sdk``.
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from workers_ai.testing import Emulator

# The log line: one DEBUG line per HTTP attempt on the "workers_ai.http" logger
# (or, without code: WORKERS_AI_LOG=debug python app.py).
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
logging.getLogger("workers_ai").setLevel(logging.DEBUG)

# The span: any OpenTelemetry SDK set as the global tracer provider (here printing to the console).
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)

with Emulator() as emu, emu.client() as ai:
    out = ai.model("@cf/meta/llama-3.1-8b-instruct").chat(messages=[{"role": "user", "content": "hi"}])
    print(out.response)
