"""Fine-tunes (LoRA adapters) of an account: ``ai.finetunes``.

``upload`` checks an adapter against the documented limits before sending anything (the LoRA docs page,
last updated April 2026; the emulator uses the same constants): rank ``r`` of at most :data:`MAX_RANK`,
files smaller than :data:`MAX_ADAPTER_BYTES`, ``model_type`` one of :data:`MODEL_TYPES`.
"""

from __future__ import annotations

import builtins
import os
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import msgspec

from .._core.config import SessionConfig, api_url, remember
from .._core.envelope import unwrap
from .._core.flow import Flow
from .._core.form import encode_form
from .._core.jsonview import as_object
from .._core.requests import get_json_flow, request_flow

if TYPE_CHECKING:
    from .._aio.session import AsyncSession
    from .._sync.session import Session
from ..errors import ConfigurationError, ResponseDecodeError, WorkersAIError

__all__ = [
    "AsyncFinetunes",
    "FinetuneFlows",
    "ASSET_FILES",
    "MAX_ADAPTER_BYTES",
    "MAX_FINETUNES",
    "MAX_RANK",
    "MODEL_TYPES",
    "AdapterError",
    "Finetune",
    "Finetunes",
    "check_adapter",
]

T = TypeVar("T")
FilePath: TypeAlias = "str | os.PathLike[str]"
_JSON = "application/json"

MAX_RANK = 8
"""Largest LoRA rank ``r`` an adapter may have."""
MAX_ADAPTER_BYTES = 100 * 1024 * 1024
"""Adapter files must be smaller than this (100 MB)."""
MAX_FINETUNES = 30
"""Fine-tunes one account may have."""
MODEL_TYPES = frozenset({"mistral", "gemma", "llama"})
"""``model_type`` values ``adapter_config.json`` may declare."""
ASSET_FILES = ("adapter_model.safetensors", "adapter_config.json")
"""The names the API stores the two adapter files under."""


class AdapterError(WorkersAIError, ValueError):
    """An adapter breaks a documented limit; found before anything was sent. ``path`` names the file."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class Finetune(msgspec.Struct, frozen=True):
    """A fine-tune as the API lists it."""

    id: str
    name: str
    model: str = ""
    description: str | None = None
    public: bool = False
    created_at: str | None = None
    modified_at: str | None = None


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise AdapterError(path, f"cannot read it: {exc.strerror or exc}") from None


def check_adapter(adapter_model: str | os.PathLike[str], adapter_config: str | os.PathLike[str]) -> dict[str, Any]:
    """Check both files against the limits; the decoded ``adapter_config.json``. Raises :class:`AdapterError`."""
    model_path, config_path = os.fspath(adapter_model), os.fspath(adapter_config)
    for path in (model_path, config_path):
        size = _size(path)
        if size >= MAX_ADAPTER_BYTES:
            raise AdapterError(path, f"{size} bytes; adapter files must be under {MAX_ADAPTER_BYTES} bytes (100 MB)")
    try:
        with open(config_path, "rb") as fh:
            config = as_object(msgspec.json.decode(fh.read()))
    except (msgspec.DecodeError, UnicodeDecodeError):
        config = None
    if config is None:
        raise AdapterError(config_path, "is not a JSON object (expected a PEFT adapter_config.json)")
    rank = config.get("r")
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise AdapterError(config_path, f"needs the LoRA rank as an integer `r`, got {rank!r}")
    if rank > MAX_RANK:
        raise AdapterError(config_path, f"rank r={rank} is over the limit of {MAX_RANK}; retrain with r <= {MAX_RANK}")
    model_type = config.get("model_type")
    if model_type not in MODEL_TYPES:
        allowed = ", ".join(sorted(MODEL_TYPES))
        raise AdapterError(config_path, f"model_type must be one of {allowed} (add it if missing), got {model_type!r}")
    return config


class FinetuneFlows:
    """The fine-tune API's rules, once, as flows (run by the sync or the async client's driver)."""

    def __init__(self, session: SessionConfig) -> None:
        self._session = session

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def _result_flow(
        self, method: str, path: str, body: bytes | None, content_type: str | None, what: str
    ) -> Flow[Any]:
        s = self._session
        reply = yield from request_flow(s, method, api_url(s, path), body, content_type=content_type)
        result, messages = unwrap(reply.status, reply.headers, reply.data, model_id=None, what=what)
        remember(s, reply.status, reply.headers, messages)
        return result

    def _list_flow(self) -> Flow[list[Finetune]]:
        return _convert(
            (yield from self._result_flow("GET", "ai/finetunes", None, None, "fine-tune list")), list[Finetune]
        )

    def _public_flow(self, limit: int | None, offset: int | None) -> Flow[list[Finetune]]:
        env = yield from get_json_flow(self._session, "ai/finetunes/public", {"limit": limit, "offset": offset})
        return _convert(env.get("result"), list[Finetune])

    def _create_flow(self, model: str, name: str, description: str | None, public: bool) -> Flow[Finetune]:
        if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("a fine-tune needs a non-empty name")
        data: dict[str, Any] = {"model": model, "name": name, "public": public}
        if description is not None:
            data["description"] = description
        body = msgspec.json.encode(data)
        return _convert((yield from self._result_flow("POST", "ai/finetunes", body, _JSON, "fine-tune")), Finetune)

    def _upload_flow(self, finetune: Finetune | str, adapter_model: FilePath, adapter_config: FilePath) -> Flow[None]:
        check_adapter(adapter_model, adapter_config)
        key = finetune.id if isinstance(finetune, Finetune) else finetune
        if not key or "/" in key:
            raise ConfigurationError(f"fine-tune {key!r}: expected its id or name")
        path = f"ai/finetunes/{key}/finetune-assets"
        for file_name, source in zip(ASSET_FILES, (adapter_model, adapter_config), strict=True):
            with open(source, "rb") as fh:
                data = fh.read()
            if len(data) >= MAX_ADAPTER_BYTES:  # it grew since the check
                raise AdapterError(os.fspath(source), f"adapter files must be under {MAX_ADAPTER_BYTES} bytes")
            kind = _JSON if file_name.endswith(".json") else "application/octet-stream"
            body, content_type = encode_form([("file_name", file_name), ("file", (file_name, data, kind))])
            yield from self._result_flow("POST", path, body, content_type, "fine-tune upload")


class Finetunes(FinetuneFlows):
    """``ai.finetunes``: list, create, upload adapter files, and the public fine-tunes."""

    _session: Session

    def list(self) -> list[Finetune]:
        """The account's fine-tunes."""
        return self._drive(self._list_flow())

    def public(self, *, limit: int | None = None, offset: int | None = None) -> builtins.list[Finetune]:
        """Public fine-tunes anyone may use as ``lora=``."""
        return self._drive(self._public_flow(limit, offset))

    def create(self, model: str, name: str, *, description: str | None = None, public: bool = False) -> Finetune:
        """A new, empty fine-tune of base ``model`` (a LoRA-capable model); upload its files next."""
        return self._drive(self._create_flow(model, name, description, public))

    def upload(self, finetune: Finetune | str, *, adapter_model: FilePath, adapter_config: FilePath) -> None:
        """Upload both adapter files to ``finetune`` (a :class:`Finetune`, its id or its name).

        Both are checked first (:func:`check_adapter`); nothing is sent when one breaks a limit.
        """
        self._drive(self._upload_flow(finetune, adapter_model, adapter_config))

    def _drive(self, flow: Flow[T]) -> T:
        return self._session._drive(flow)  # pyright: ignore[reportPrivateUsage]


class AsyncFinetunes(FinetuneFlows):
    """``AsyncWorkersAI().finetunes``: the methods of :class:`Finetunes`, awaited."""

    # generated from _account/finetunes.py:Finetunes by codegen.twins, to the end of the class
    _session: AsyncSession

    async def list(self) -> list[Finetune]:
        """The account's fine-tunes."""
        return await self._drive(self._list_flow())

    async def public(self, *, limit: int | None = None, offset: int | None = None) -> builtins.list[Finetune]:
        """Public fine-tunes anyone may use as ``lora=``."""
        return await self._drive(self._public_flow(limit, offset))

    async def create(self, model: str, name: str, *, description: str | None = None, public: bool = False) -> Finetune:
        """A new, empty fine-tune of base ``model`` (a LoRA-capable model); upload its files next."""
        return await self._drive(self._create_flow(model, name, description, public))

    async def upload(self, finetune: Finetune | str, *, adapter_model: FilePath, adapter_config: FilePath) -> None:
        """Upload both adapter files to ``finetune`` (a :class:`Finetune`, its id or its name)."""
        await self._drive(self._upload_flow(finetune, adapter_model, adapter_config))

    async def _drive(self, flow: Flow[T]) -> T:
        return await self._session._drive(flow)  # pyright: ignore[reportPrivateUsage]


def _convert(value: Any, kind: type[T]) -> T:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise ResponseDecodeError(f"finetunes: unexpected reply shape: {exc}") from None
