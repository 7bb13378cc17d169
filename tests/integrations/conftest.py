"""The real client packages run offline: nothing here may reach the internet.

litellm fetches its model price map at import unless told to use the bundled one, and (for streamed
replies without usage) a Hugging Face tokenizer; Hugging Face libraries look up the Hub unless offline.
These are set before any test module imports a client."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A real local Ray cluster of 2 CPUs for one test module (Ray is imported only by the modules using it)."""
    import ray
    import ray.data

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()
