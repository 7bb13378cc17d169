"""Fine-tunes (LoRA) in the emulator: create, list, upload adapter files (multipart), public list, the
documented limits, and ``lora`` on run requests (5005 for models without adapters, 3039 for missing files)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from workers_ai.testing import Emulator
from workers_ai.testing._finetunes import MAX_FINETUNES, MAX_RANK

from tests.emulator._calls import call, error, result

LORA_MODEL = "@cf/mistral/mistral-7b-instruct-v0.2-lora"
PLAIN = "@cf/meta/llama-3-8b-instruct"
CONFIG = json.dumps({"r": 8, "lora_alpha": 16, "model_type": "mistral"}).encode()


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator() as emulator:
        spec = emulator.catalog.get(LORA_MODEL)
        assert spec is not None and spec.properties["lora"] == "true"  # the catalog marks it LoRA-capable
        yield emulator


def _create(emu: Emulator, name: str, model: str = LORA_MODEL) -> dict[str, Any]:
    made: dict[str, Any] = result(call(emu, "POST", "ai/finetunes", {"model": model, "name": name}))
    return made


def _upload(emu: Emulator, key: str, file_name: str, data: bytes) -> Any:
    return call(
        emu, "POST", f"ai/finetunes/{key}/finetune-assets", fields={"file_name": file_name, "file": (file_name, data)}
    )


def test_create_list_upload_and_run_with_the_adapter(emu: Emulator) -> None:
    made = _create(emu, "sql-helper")
    assert made["name"] == "sql-helper" and made["model"] == LORA_MODEL and made["public"] is False and made["id"]
    assert [f["id"] for f in result(call(emu, "GET", "ai/finetunes"))] == [made["id"]]
    run = {"prompt": "SELECT", "lora": "sql-helper", "raw": True}
    assert error(call(emu, "POST", f"ai/run/{LORA_MODEL}", run))[:2] == (400, 3039)  # no files yet
    assert result(_upload(emu, made["id"], "adapter_model.safetensors", b"\x00" * 64))["id"] == made["id"]
    assert error(call(emu, "POST", f"ai/run/{LORA_MODEL}", run))[:2] == (400, 3039)  # still no config
    result(_upload(emu, "sql-helper", "adapter_config.json", CONFIG))  # by name works too
    assert result(call(emu, "POST", f"ai/run/{LORA_MODEL}", run))["response"]
    stored = emu.state.finetunes.find("sql-helper")
    assert stored is not None and stored.assets["adapter_config.json"] == CONFIG


def test_lora_on_a_model_without_adapters_is_5005(emu: Emulator) -> None:
    status, code, message = error(call(emu, "POST", f"ai/run/{PLAIN}", {"prompt": "x", "lora": "anything"}))
    assert (status, code) == (405, 5005) and PLAIN in message
    assert error(call(emu, "POST", "ai/finetunes", {"model": PLAIN, "name": "n"}))[:2] == (405, 5005)
    assert result(call(emu, "POST", f"ai/run/{PLAIN}", {"prompt": "x"}))["response"]  # without lora: fine


def test_upload_errors_and_limits(emu: Emulator) -> None:
    made = _create(emu, "t")
    assets = f"ai/finetunes/{made['id']}/finetune-assets"
    assert error(call(emu, "POST", assets, fields={"file_name": "adapter_config.json"}))[:2] == (400, 3039)
    assert error(_upload(emu, made["id"], "weights.bin", b"x"))[:2] == (400, 3039)
    assert error(call(emu, "POST", assets, {"file_name": "adapter_config.json"}))[:2] == (400, 3039)  # not multipart
    too_wide = json.dumps({"r": MAX_RANK * 2, "model_type": "mistral"}).encode()
    status, code, message = error(_upload(emu, made["id"], "adapter_config.json", too_wide))
    assert (status, code) == (400, 5006) and f"r={MAX_RANK * 2}" in message
    assert error(_upload(emu, made["id"], "adapter_config.json", b'{"model_type": "gpt"}'))[:2] == (400, 5006)
    assert error(_upload(emu, "no-such-finetune", "adapter_config.json", CONFIG))[0] == 404
    assert error(call(emu, "POST", "ai/finetunes", {"model": LORA_MODEL, "name": "t"}))[:2] == (400, 1000)  # taken
    assert error(call(emu, "POST", "ai/finetunes", {"model": "@cf/x/none", "name": "u"}))[:2] == (400, 5007)
    for i in range(MAX_FINETUNES - 1):
        _create(emu, f"more-{i}")
    assert error(call(emu, "POST", "ai/finetunes", {"model": LORA_MODEL, "name": "one-too-many"}))[:2] == (400, 1000)
    emu.reset()
    assert result(call(emu, "GET", "ai/finetunes")) == []


def test_public_finetunes_page(emu: Emulator) -> None:
    everything = result(call(emu, "GET", "ai/finetunes/public"))
    assert len(everything) >= 2 and all(f["public"] is True for f in everything)
    assert result(call(emu, "GET", "ai/finetunes/public?limit=1&offset=1")) == everything[1:2]
    assert error(call(emu, "POST", "ai/finetunes/public", {}))[:2] == (405, 7001)
