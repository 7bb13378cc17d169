"""Fine-tunes (LoRA adapters): ``/ai/finetunes`` (create, list), ``/ai/finetunes/{id}/finetune-assets``
(upload), ``/ai/finetunes/public``, and the ``lora`` check of a run request.

Limits are the documented ones, one constant each (the LoRA docs page, last updated April 2026; older
and third-party sources give other numbers). The emulator's 10 MB request limit applies to uploads too,
so an adapter between 10 and 100 MB gets 413 here where the API would take it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import msgspec

from .._core.jsonview import as_object
from ._catalog import Catalog, ModelSpec, stable_id
from ._multipart import Part, parse_form
from ._records import RecordedRequest
from ._reply import APIError, Reply, json_reply
from ._run import decode_json
from ._state import Finetune, Finetunes

__all__ = [
    "ASSET_FILES",
    "MAX_ADAPTER_BYTES",
    "MAX_FINETUNES",
    "MAX_RANK",
    "MODEL_TYPES",
    "check_lora",
    "create",
    "listing",
    "public",
    "upload",
]

MAX_RANK = 8
"""Largest LoRA rank ``r`` an adapter may have."""
MAX_ADAPTER_BYTES = 100 * 1024 * 1024
"""Adapter files must be smaller than this (100 MB)."""
MAX_FINETUNES = 30
"""Fine-tunes (adapters) one account may have."""
ASSET_FILES = ("adapter_model.safetensors", "adapter_config.json")
"""The two files of an adapter, named exactly so."""
MODEL_TYPES = frozenset({"mistral", "gemma", "llama"})
"""``model_type`` values ``adapter_config.json`` may declare."""

_MISSING_FILES = "Finetune is missing required files (model.safetensors and config.json)"
_PUBLIC: tuple[tuple[str, str, str], ...] = (
    ("emulator-public-sql", "@cf/mistral/mistral-7b-instruct-v0.2-lora", "An emulated public adapter for SQL"),
    ("emulator-public-haiku", "@cf/google/gemma-7b-it-lora", "An emulated public adapter for short poems"),
)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lora_capable(spec: ModelSpec) -> bool:
    """Whether the catalog marks the model as taking LoRA adapters (property ``lora``)."""
    return str(spec.properties.get("lora", "")).lower() == "true"


def create(catalog: Catalog, store: Finetunes, body: bytes) -> Reply:
    data = decode_json(body)
    model, name = data.get("model"), data.get("name")
    if not isinstance(model, str) or not model:
        raise APIError(400, 5006, "AiError: Bad input: /model: a base model id (string) is required")
    if not isinstance(name, str) or not name:
        raise APIError(400, 5006, "AiError: Bad input: /name: a fine-tune name (string) is required")
    spec = catalog.get(model)
    if spec is None:
        raise APIError(400, 5007, f"No such model {model} or task")
    if not lora_capable(spec):
        raise APIError(405, 5005, f"The model `{model}` does not support LoRa inference")
    if store.named(name):
        raise APIError(400, 1000, f"A fine-tune named {name!r} already exists in this account")
    description = data.get("description")
    when = _now()
    item = Finetune(
        id=str(uuid.uuid4()),
        name=name,
        model=model,
        description=description if isinstance(description, str) else "",
        public=data.get("public") is True,
        created_at=when,
        modified_at=when,
    )
    if not store.add(item, MAX_FINETUNES):
        raise APIError(400, 1000, f"An account may have at most {MAX_FINETUNES} fine-tunes")
    return json_reply(item.record())


def listing(store: Finetunes) -> Reply:
    return json_reply([item.record() for item in store.snapshot()])


def public(params: Mapping[str, str]) -> Reply:
    """The public fine-tunes (a fixed, emulated list), with ``limit`` and ``offset``."""
    items = [
        {
            "id": stable_id("finetune:" + name),
            "name": name,
            "model": model,
            "description": description,
            "public": True,
            "created_at": "2025-01-01T00:00:00.000000Z",
            "modified_at": "2025-01-01T00:00:00.000000Z",
        }
        for name, model, description in _PUBLIC
    ]
    offset = _int(params.get("offset"), 0)
    limit = _int(params.get("limit"), len(items))
    return json_reply(items[offset : offset + limit])


def _int(raw: str | None, default: int) -> int:
    try:
        return max(0, int(raw)) if raw is not None else default
    except ValueError:
        return default


def upload(store: Finetunes, key: str, rec: RecordedRequest) -> Reply:
    """One asset file (form fields ``file_name`` and ``file``) of fine-tune ``key`` (its id or name)."""
    item = store.find(key)
    if item is None:
        raise APIError(404, 1000, f"No fine-tune {key!r} in this account")
    try:
        parts = parse_form(rec.headers.get("content-type", ""), rec.body)
    except ValueError as exc:
        raise APIError(400, 3039, f"{_MISSING_FILES}: {exc}") from None
    fields = {p.name: p for p in parts}
    file = fields.get("file")
    named = fields.get("file_name")
    file_name = named.text().strip() if named is not None else (file.filename if file is not None else None)
    if file is None or not file_name:
        raise APIError(400, 3039, f"{_MISSING_FILES}: send the form fields file_name and file")
    if file_name not in ASSET_FILES:
        raise APIError(400, 3039, f"{_MISSING_FILES}: file_name must be one of {', '.join(ASSET_FILES)}")
    if len(file.data) >= MAX_ADAPTER_BYTES:
        raise APIError(413, 3006, f"Request is too large: {file_name} must be under {MAX_ADAPTER_BYTES} bytes")
    if file_name == "adapter_config.json":
        _check_config(file)
    store.put_asset(item, file_name, file.data, _now())
    return json_reply(item.record())


def _check_config(file: Part) -> None:
    try:
        config = as_object(msgspec.json.decode(file.data))
    except (msgspec.DecodeError, UnicodeDecodeError):
        config = None
    if config is None:
        raise APIError(400, 5006, "AiError: Bad input: adapter_config.json is not a JSON object")
    rank = config.get("r")
    if isinstance(rank, int) and not isinstance(rank, bool) and rank > MAX_RANK:
        raise APIError(400, 5006, f"AiError: Bad input: adapter_config.json: rank r={rank} is over {MAX_RANK}")
    model_type = config.get("model_type")
    if model_type is not None and model_type not in MODEL_TYPES:
        allowed = ", ".join(sorted(MODEL_TYPES))
        raise APIError(400, 5006, f"AiError: Bad input: adapter_config.json: model_type must be one of {allowed}")


def check_lora(spec: ModelSpec, payload: Any, store: Finetunes) -> None:
    """405/5005 for ``lora`` on a model that takes no adapters; 400/3039 for a fine-tune of this account
    whose files are not all uploaded. Other names (public adapters, ids the emulator never saw) pass."""
    data = as_object(payload)
    lora = data.get("lora") if data is not None else None
    if lora is None:
        return
    if not lora_capable(spec):
        raise APIError(405, 5005, f"The model `{spec.model_id}` does not support LoRa inference")
    item = store.find(lora) if isinstance(lora, str) else None
    if item is not None and any(name not in item.assets for name in ASSET_FILES):
        raise APIError(400, 3039, _MISSING_FILES)
