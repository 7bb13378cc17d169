"""Did you mean: a model id or input key that is a slip of a known one is named with the known one; unknown
model ids stay allowed (a model newer than the package is not in its registry).

The model-id rule (``_core/suggest.slip_of``) is held against the real ids: every registry id (and catalog
id, where the catalog is present) taken out of the registry and asked about, as a model newer than the
package would be, must not be called a slip of another; nor the ids published after the catalog. Typing
slips in letters (a letter dropped, doubled, swapped with its neighbour, replaced or added) must be found.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import string
import warnings

import pytest
from workers_ai import AsyncWorkersAI, WorkersAI, _registry, errors
from workers_ai._clients.base import planned_end_passed
from workers_ai._core.suggest import near_key, near_models, slip_of
from workers_ai.testing import Emulator

from tests._catalog import catalog_dir

KNOWN = sorted(_registry.MODELS)
# Published after the catalog these tests read (its README names them): new versions of known models.
NEWER = [
    "@cf/deepseek-ai/deepseek-v4-flash-0731",
    "@cf/zai-org/glm-5.2",
    "@cf/zai-org/glm-5.3",
    "@cf/zai-org/glm-5.3-flash",
    "@cf/moonshotai/kimi-k2.6",
    "@cf/moonshotai/kimi-k2.7-code",
    "@cf/qwen/qwen3.8-27b",
    # and ids that only could come: another size, language, precision or suffix of a known model
    "@cf/meta/llama-3.3-8b-instruct",
    "@cf/meta/llama-3-8b-instruct-fp8",
    "@cf/deepgram/aura-2-fr",
    "@cf/openai/whisper-tiny-es",
    "@cf/baai/bge-m4",
    "@cf/meta/llama-3.1-8b-instruct-batch",
    "@cf/google/gemma-3-12b-pt",
]
LLAMA = "@cf/meta/llama-3-8b-instruct"


def _leave_one_out(ids: list[str]) -> list[tuple[str, str]]:
    flagged = []
    for model_id in ids:
        found = slip_of(model_id, [k for k in ids if k != model_id])
        if found is not None:
            flagged.append((model_id, found))
    return flagged


def test_no_registry_id_is_taken_for_a_slip_of_another() -> None:
    assert _leave_one_out(KNOWN) == []
    assert [(n, slip_of(n, KNOWN)) for n in NEWER if slip_of(n, KNOWN)] == []


def test_no_catalog_id_is_taken_for_a_slip_of_another() -> None:
    ids = sorted({json.loads(p.read_text(encoding="utf-8"))["name"] for p in catalog_dir().glob("*.json")} | set(KNOWN))
    assert len(ids) > len(KNOWN)
    assert _leave_one_out(ids) == []


def _slips(model_id: str, rnd: random.Random) -> list[str]:
    """Typing slips in the letters of the model name (after the namespace)."""
    start = model_id.index("/", 4) + 1
    out = []
    for i in range(start, len(model_id)):
        c = model_id[i]
        if not c.isalpha():
            continue
        out.append(model_id[:i] + model_id[i + 1 :])  # dropped
        out.append(model_id[:i] + c + model_id[i:])  # doubled
        out.append(model_id[:i] + rnd.choice(string.ascii_lowercase.replace(c, "")) + model_id[i + 1 :])
        if i + 1 < len(model_id) and model_id[i + 1].isalpha() and model_id[i + 1] != c:
            out.append(model_id[:i] + model_id[i + 1] + c + model_id[i + 2 :])  # swapped
    slips = [s for s in out if s not in _registry.MODELS]
    return rnd.sample(slips, min(len(slips), 12))  # a dozen per id: the run stays short


def test_slips_in_letters_are_found_and_never_named_wrongly() -> None:
    rnd = random.Random(36)
    found = wrong = total = 0
    for model_id in KNOWN:
        for slip in _slips(model_id, rnd):
            total += 1
            named = slip_of(slip, KNOWN)
            found += named == model_id
            wrong += named not in (None, model_id)
    assert total > 1000
    assert found / total > 0.9, found / total  # the misses: slips in words of one or two letters (en, it, 8b)
    assert wrong <= total // 500, wrong  # a slip that is one letter off another real id is that id's slip


@pytest.mark.parametrize(
    ("given", "known"),
    [
        ("@cf/meta/llama-3-8b-instruk", LLAMA),
        ("@cf/meta/llama-3-8b-instrcut", LLAMA),
        ("@cf/meta/Llama-3-8b-instruct", LLAMA),
        ("@cf/mata/llama-3-8b-instruct", LLAMA),
        ("@cf/meta/llama-3-8b_instruct", LLAMA),
        ("@cf/baai/bge-m3", None),  # a known id is no slip
        ("@cf/openai/whisperr", "@cf/openai/whisper"),
    ],
)
def test_slips_of_known_ids(given: str, known: str | None) -> None:
    assert slip_of(given, KNOWN) == known


def test_near_models_and_keys() -> None:
    assert near_models("@cf/meta/llama-3-8b-instruk", KNOWN) == [LLAMA]
    assert "@cf/deepgram/aura-2-en" in near_models("@cf/deepgram/aura-2-fr", KNOWN)  # the API said: no such model
    assert near_models("@cf/nobody/nothing-at-all", KNOWN) == []
    for key, want in [("promt", "prompt"), ("contnet", "content"), ("txet", "text"), ("max_token", "max_tokens")]:
        assert near_key(key, ["prompt", "messages", "content", "text", "max_tokens", "role"]) == want
    assert near_key("zzz", ["prompt", "messages"]) is None


# --------------------------------------------------------------------------- model(): a warning, once


def test_model_warns_of_a_slip_once_per_client_and_never_of_a_new_id(workers_ai_emulator: Emulator) -> None:
    for ai in (workers_ai_emulator.client(), workers_ai_emulator.client()):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ai.model("@cf/meta/llama-3-8b-instruk")
            ai.model("@cf/meta/llama-3-8b-instruk")
        assert [w.category for w in seen] == [errors.UnknownModelWarning]
        assert f"did you mean {LLAMA!r}?" in str(seen[0].message)
        assert issubclass(errors.UnknownModelWarning, errors.WorkersAIWarning)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for new in NEWER:
                ai.model(new)  # used as given, without a word


def test_async_model_warns_of_a_slip(workers_ai_emulator: Emulator) -> None:
    async def main() -> None:
        async with workers_ai_emulator.async_client() as ai:
            with pytest.warns(errors.UnknownModelWarning, match="did you mean"):
                ai.model("@cf/meta/llama-3-8b-instrct")
            with pytest.raises(errors.ModelNotFoundError, match=f"did you mean {LLAMA!r}"):
                await ai.run("@cf/meta/llama-3-8b-instrct", {"prompt": "hi"})

    asyncio.run(main())


# --------------------------------------------------------------------------- input keys


def test_a_misspelt_input_key_is_named_with_the_known_one(workers_ai_emulator: Emulator) -> None:
    ai = workers_ai_emulator.client()
    llama = ai.model(LLAMA)
    with pytest.raises(errors.InputValidationError, match="did you mean 'prompt' instead of 'promt'"):
        ai.run(LLAMA, {"promt": "hi"})
    with pytest.raises(errors.ArgumentError, match=r"unexpected keyword argument 'promt' \(did you mean 'prompt'\?\)"):
        llama.generate(promt="hi")  # type: ignore[call-arg]
    with pytest.raises(errors.InputValidationError, match="did you mean 'content' instead of 'contnet'") as info:
        ai.run(LLAMA, {"messages": [{"role": "user", "contnet": "hi"}]})
    assert info.value.path == "$.messages[0]"
    with pytest.warns(errors.UnknownInputWarning, match=r"\$\.max_token \(did you mean 'max_tokens'\?\)"):
        ai.run(LLAMA, {"prompt": "hi", "max_token": 5})
    with pytest.warns(errors.UnknownInputWarning, match=r"\$\.messages\[0\]\.contnet \(did you mean 'content'\?\)"):
        llama.chat(messages=[{"role": "user", "content": "hi", "contnet": "x"}])  # type: ignore[typeddict-unknown-key]
    strict = workers_ai_emulator.client().with_options(strict_inputs=True)
    with pytest.raises(errors.InputValidationError, match=r"unknown key \(did you mean 'max_tokens'\?\)") as info:
        strict.run(LLAMA, {"prompt": "hi", "max_token": 5})
    assert info.value.path == "$.max_token"
    assert len(workers_ai_emulator.requests) == 2  # only the two that warned were sent (as given)


def test_async_input_keys_say_the_same(workers_ai_emulator: Emulator) -> None:
    async def main() -> None:
        async with workers_ai_emulator.async_client() as ai:
            with pytest.raises(errors.InputValidationError, match="did you mean 'prompt' instead of 'promt'"):
                await ai.run(LLAMA, {"promt": "hi"})
            with pytest.raises(errors.ArgumentError, match=r"\(did you mean 'prompt'\?\)"):
                await ai.model(LLAMA).generate(promt="hi")  # type: ignore[call-arg]

    asyncio.run(main())


# --------------------------------------------------------------------------- deprecation at model()


@pytest.mark.parametrize("make", ["sync", "async"])
def test_a_model_past_its_planned_end_logs_a_warning_at_model_once_per_client(
    workers_ai_emulator: Emulator, caplog: pytest.LogCaptureFixture, make: str
) -> None:
    old = "@cf/qwen/qwen1.5-7b-chat-awq"  # planned_deprecation_date 2025-10-01 in its catalog entry
    caplog.set_level(logging.WARNING, logger="workers_ai")
    clients: list[WorkersAI | AsyncWorkersAI] = (
        [workers_ai_emulator.client(), workers_ai_emulator.client()]
        if make == "sync"
        else [workers_ai_emulator.async_client(), workers_ai_emulator.async_client()]
    )
    for ai in clients:
        ai.model(old)
        ai.model(old)
        ai.model("@cf/baai/bge-m3")  # no planned end: nothing
    lines = [r for r in caplog.records if r.name == "workers_ai" and r.levelno == logging.WARNING]
    assert [r.getMessage() for r in lines] == [
        f"{old} is deprecated: its planned end of service was 2025-10-01; switch to a newer model"
    ] * 2
    assert workers_ai_emulator.requests == []  # said at model(), before any call


def test_the_planned_end_is_compared_with_today() -> None:
    props = {"planned_deprecation_date": "2026-05-30"}
    assert planned_end_passed(props, "2026-05-29") is None
    assert planned_end_passed(props, "2026-05-30") == "2026-05-30"
    assert planned_end_passed(props, "2027-01-01") == "2026-05-30"
    assert planned_end_passed({"planned_deprecation_date": "soon"}, "2027-01-01") is None
    assert planned_end_passed(None, "2027-01-01") is None
