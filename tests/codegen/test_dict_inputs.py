"""Dict literals for nested inputs are validated before sending exactly like structs: the same body on
the wire for equal inputs, the same error (model, field path) for a bad one, and nothing sent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from workers_ai import WorkersAI, errors
from workers_ai.models.cf.baai.bge_m3 import Context
from workers_ai.models.cf.meta.llama_3_8b_instruct import Message
from workers_ai.testing import Emulator


def _posts(emu: Emulator) -> list[Any]:
    return [r for r in emu.requests if r.method == "POST"]


def test_dicts_and_structs_send_the_same_body() -> None:
    with Emulator() as emu, WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
        llama = ai.model("@cf/meta/llama-3-8b-instruct")
        llama.chat(messages=[Message(role="user", content="hi")], max_tokens=8)
        llama.chat(messages=[{"role": "user", "content": "hi"}], max_tokens=8)
        bge = ai.model("@cf/baai/bge-m3")
        bge.rank(query="q", contexts=[Context(text="a")])
        bge.rank(query="q", contexts=[{"text": "a"}])
        bodies = [json.loads(r.body) for r in _posts(emu)]
    assert bodies[0] == bodies[1] == {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    assert bodies[2] == bodies[3] == {"query": "q", "contexts": [{"text": "a"}]}


@pytest.mark.parametrize(
    ("model", "method", "kwargs", "path"),
    [
        (
            "@cf/meta/llama-3-8b-instruct",
            "chat",
            {"messages": [{"role": "user", "content": 42}]},
            "$.messages[0].content",
        ),
        ("@cf/meta/llama-3-8b-instruct", "chat", {"messages": [{"role": "user"}]}, "$.messages[0]"),
        ("@cf/baai/bge-m3", "rank", {"query": "q", "contexts": [{"text": "a"}, {"text": ""}]}, "$.contexts[1].text"),
        ("@cf/baai/bge-m3", "rank", {"query": "q", "contexts": [{"text": 1.5}]}, "$.contexts[0].text"),
    ],
)
def test_a_bad_dict_is_refused_before_sending_naming_the_field(
    model: str, method: str, kwargs: dict[str, Any], path: str
) -> None:
    with Emulator() as emu, WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
        call = getattr(ai.model(model), method)
        with pytest.raises(errors.InputValidationError) as info:
            call(**kwargs)
        assert _posts(emu) == []
    assert info.value.path == path and model in str(info.value)


def test_a_bad_dict_in_a_batch_item_is_refused_before_sending() -> None:
    with Emulator() as emu, WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url) as ai:
        bge = ai.model("@cf/baai/bge-m3")
        with pytest.raises(errors.InputValidationError) as info:
            bge.batch([{"text": "a"}, {"text": 3}])
        assert _posts(emu) == []
    assert info.value.path.startswith("$.requests[1]")
