# Type-checking bridge, never copied (render copies .py files only). In a generated package
# `_client.py` is rendered from templates/client.py.jinja: `WorkersAI` is `BaseClient` plus one typed
# `model()`/`run()` overload per model, ending in the model-independent ones below. The runtime calls
# the client with model ids it does not know statically, so checking it where it lives
# (codegen/runtime) sees only those.
from typing import Any, Literal, overload

from typing_extensions import Unpack

from ._batch.jobs import BatchJob
from ._clients.run_options import AnyRun, RunOptions
from ._clients.sync import BaseClient
from ._handles.sync import ModelHandle
from ._sync.stream import EventStream

class WorkersAI(BaseClient):
    def model(self, model_id: str) -> ModelHandle[Any, Any]: ...
    @overload
    def run(
        self,
        model_id: str,
        payload: Any,
        *,
        stream: Literal[True],
        queue_request: Literal[False] = False,
        **options: Unpack[RunOptions],
    ) -> EventStream: ...
    @overload
    def run(
        self,
        model_id: str,
        payload: Any,
        *,
        queue_request: Literal[True],
        stream: Literal[False] = False,
        **options: Unpack[RunOptions],
    ) -> BatchJob[Any]: ...
    @overload
    def run(self, model_id: str, payload: Any, **options: Unpack[AnyRun]) -> Any: ...
