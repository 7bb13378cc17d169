"""A local, schema-faithful Workers AI server for tests, demos and offline development.

``Emulator()`` serves the REST API on ``127.0.0.1`` for every model this package was generated for:
inputs are validated against each model's schema with ``jsonschema``, replies are synthesized to
fit the output schema (deterministic per input, with task-specific realism), and faults can be
injected. Needs the ``testing`` extra: ``pip install 'workers-ai[testing]'``.

    with Emulator() as emu:
        ai = WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url)

From a shell: ``workers-ai serve`` or ``python -m workers_ai.testing``. In pytest:
``pytest_plugins = ["workers_ai.testing.pytest_plugin"]`` gives the ``workers_ai_emulator`` fixture.
"""

from ._emulator import DEFAULT_ACCOUNT_ID, DEFAULT_API_TOKEN, Emulator, EmulatorStopped
from ._faults import FAULTS, Fault
from ._records import RecordedRequest, ServerError
from ._reply import Reply
from ._synth import Synthesizer
from ._validate import Validator

__all__ = [
    "DEFAULT_ACCOUNT_ID",
    "DEFAULT_API_TOKEN",
    "FAULTS",
    "Emulator",
    "EmulatorStopped",
    "Fault",
    "RecordedRequest",
    "Reply",
    "ServerError",
    "Synthesizer",
    "Validator",
]
