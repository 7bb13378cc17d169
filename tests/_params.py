"""What a generated method accepts, read at run time: its written-out parameters and the keys of the
``TypedDict`` its ``**params: Unpack[...]`` names (resolved in the method's module)."""

from __future__ import annotations

import inspect
import sys
from typing import Any


def keywords(method: Any) -> dict[str, bool]:
    """Every argument ``method`` takes by name (``self`` aside) -> whether it is required."""
    out: dict[str, bool] = {}
    for name, param in inspect.signature(method).parameters.items():
        if name == "self":
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            typed = _params_dict(method, str(param.annotation))
            if typed is None:
                continue
            for key in typed.__annotations__:
                out[key] = key in typed.__required_keys__
        elif param.kind is not inspect.Parameter.VAR_POSITIONAL:
            out[name] = param.default is inspect.Parameter.empty
    return out


def _params_dict(method: Any, annotation: str) -> Any:
    if not (annotation.startswith("Unpack[") and annotation.endswith("]")):
        return None
    module = sys.modules[getattr(method, "__module__", "")]
    return getattr(module, annotation[len("Unpack[") : -1])
