"""``embed_many(..., as_numpy=True)``: the same vectors as the list path, as one float32 array."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from workers_ai import errors
from workers_ai._batch.embed_plan import NUMPY_TEXTS_PER_BATCH
from workers_ai.testing import Emulator

BGE = "@cf/baai/bge-m3"


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(batch_polls=(0, 0)) as e:
        yield e


def _submissions(emu: Emulator, since: int) -> int:
    return sum(1 for r in emu.requests[since:] if r.params.get("queueRequest") and b'"requests"' in r.body)


def test_as_numpy_equals_the_list_path(emu: Emulator) -> None:
    bge = emu.client().model(BGE)
    texts = [f"passage {i} about topic {i % 11} and item {i % 5}" for i in range(1030)]
    lists = bge.embed_many(texts, poll_interval=0.01)
    before = len(emu.requests)
    array = bge.embed_many(texts, poll_interval=0.01, as_numpy=True)
    assert isinstance(array, np.ndarray) and array.dtype == np.float32 and array.flags.c_contiguous
    assert array.shape == (len(texts), len(lists[0])) == (1030, 1024)
    assert np.array_equal(array, np.asarray(lists, dtype=np.float32))
    assert not np.isnan(array).any() and np.abs(array).sum() > 0
    # Batches stay small, so no status reply is large: 1030 texts in batches of at most 400.
    assert _submissions(emu, before) == math.ceil(1030 / NUMPY_TEXTS_PER_BATCH)


def test_as_numpy_with_a_small_batch_size_and_options(emu: Emulator) -> None:
    bge = emu.client().model(BGE)
    texts = [f"t{i} words here" for i in range(37)]
    array = bge.embed_many(texts, batch_size=5, options={"truncate_inputs": True}, poll_interval=0.01, as_numpy=True)
    want = np.asarray(bge.embed_many(texts, batch_size=5, poll_interval=0.01), dtype=np.float32)
    assert np.array_equal(array, want)
    empty = bge.embed_many([], as_numpy=True)
    assert isinstance(empty, np.ndarray) and empty.dtype == np.float32 and empty.shape[0] == 0


def test_as_numpy_failed_request_leaves_nan_rows_and_names_the_texts(emu: Emulator) -> None:
    bge = emu.client().model(BGE)
    texts = [f"doc {i}" for i in range(250)]
    # The second request (texts 100..199) fails for good (bad input is not retried)...
    emu.inject("batch_item_error", item=1, model=BGE, code=5006, message="input rejected")
    with pytest.raises(errors.BatchItemsError) as caught:
        bge.embed_many(texts, poll_interval=0.01, as_numpy=True)
    err = caught.value
    assert sorted(err.failures) == list(range(100, 200))
    assert "5006" in err.failures[150] and "input rejected" in err.failures[150]
    rows = np.asarray(err.results)
    assert rows.dtype == np.float32 and rows.shape == (250, 1024)
    assert np.isnan(rows[100:200]).all() and not np.isnan(rows[:100]).any() and not np.isnan(rows[200:]).any()
    want = np.asarray(bge.embed_many(texts[:100], poll_interval=0.01), dtype=np.float32)
    assert np.array_equal(rows[:100], want)


def test_embed_rows_isolates_a_rejected_text_and_an_empty_one(emu: Emulator) -> None:
    from workers_ai._batch.embed_rows import embed_rows

    ai = emu.client()
    ai.max_retries = 0
    bge = ai.model(BGE)
    texts = [f"line {i}" for i in range(30)]
    texts[7] = "poison"
    texts[20] = ""
    on = [True]
    emu.inject(
        "internal_error", times=None, model=BGE, match=lambda r: on[0] and b"poison" in r.body, status=400, code=5006
    )
    before = len(emu.requests)
    try:
        vectors, errors = embed_rows(bge, texts, batch_size=10)
    finally:
        on[0] = False
        emu.clear_faults()
    assert [i for i, e in enumerate(errors) if e is not None] == [7, 20]
    assert "non-empty" in str(errors[20]) and "InvalidInputError" in str(errors[7])
    assert vectors.dtype == np.float32 and vectors.shape == (30, 1024)
    assert np.isnan(vectors[[7, 20]]).all()
    good = [i for i in range(30) if i not in (7, 20)]
    assert np.array_equal(vectors[good], np.asarray(bge.embed(text=[texts[i] for i in good]).data, dtype=np.float32))
    # The empty text was never sent; the poisoned request was split until the bad text stood alone.
    sent = [r.json()["text"] for r in emu.requests[before:] if r.model == BGE]
    assert all("" not in batch for batch in sent) and ["poison"] in sent


def test_as_numpy_sends_an_item_that_failed_for_capacity_again_as_batch_many_does(emu: Emulator) -> None:
    bge = emu.client().model(BGE)
    texts = [f"doc {i}" for i in range(250)]
    emu.inject("batch_item_error", item=1, model=BGE)  # 3040: capacity, worth another try
    before = dict(emu.batch_items_received)
    array = bge.embed_many(texts, poll_interval=0.01, as_numpy=True)
    assert not np.isnan(np.asarray(array)).any()
    sent = sum(emu.batch_items_received.values()) - sum(before.values())
    assert sent == 4  # three requests, and the failed one once more
