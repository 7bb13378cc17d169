# Type-checking bridge, never copied (render copies .py files only). In a generated package
# `_aio_client.py` is rendered from templates/client.py.jinja with `aio=True`: `AsyncWorkersAI` is
# `AsyncBaseClient` plus one typed `model()`/`run()` overload per model. Checking the runtime where it
# lives (codegen/runtime) sees only the model-independent ones below.
from collections.abc import Mapping
from typing import Any

from ._clients.aio import AsyncBaseClient
from ._handles.aio import AsyncModelHandle

class AsyncWorkersAI(AsyncBaseClient):
    def model(self, model_id: str) -> AsyncModelHandle[Any, Any]: ...
    def run(
        self,
        model_id: str,
        payload: Any,
        *,
        stream: bool = False,
        queue_request: bool = False,
        headers: Mapping[str, str] | None = None,
        session_affinity: str | None = None,
    ) -> Any: ...
