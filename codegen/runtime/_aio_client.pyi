# Type-checking bridge, never copied (render copies .py files only). In a generated package
# `_aio_client.py` is rendered from templates/client.py.jinja with `aio=True`: `AsyncWorkersAI` is
# `AsyncBaseClient` plus one typed `model()`/`run()` overload per model. Checking the runtime where it
# lives (codegen/runtime) sees only the model-independent ones below.
from typing import Any

from typing_extensions import Unpack

from ._clients.aio import AsyncBaseClient
from ._clients.run_options import AnyRun
from ._handles.aio import AsyncModelHandle

class AsyncWorkersAI(AsyncBaseClient):
    def model(self, model_id: str) -> AsyncModelHandle[Any, Any]: ...
    def run(self, model_id: str, payload: Any, **options: Unpack[AnyRun]) -> Any: ...
