"""The per-model reference `make docs` builds: a page for every model id, naming every method and parameter,
printed from the plan; and a site whose navigation reaches every topic page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codegen.load import load_schemas
from codegen.plan import ModelPlan, plan_models
from codegen.reference import page_path, price_words, reference_pages, split_annotation

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "0123456789abcdef0123456789abcdef"
Catalog = tuple[list[ModelPlan], dict[str, str]]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    loaded = load_schemas(ROOT / "schemas")
    plans, shared = plan_models(loaded.models, [])
    return plans, reference_pages(plans, shared)


def test_every_model_has_a_page_naming_its_methods_and_parameters(catalog: Catalog) -> None:
    plans, pages = catalog
    assert set(pages) == {"index.md"} | {page_path(p.model_id) for p in plans}
    for plan in plans:
        page = pages[page_path(plan.model_id)]
        assert page.startswith(f"# `{plan.model_id}`\n"), plan.model_id
        assert f"| Task | {plan.task} |" in page
        for method in plan.methods:
            assert f"### `{method.name}(" in page, (plan.model_id, method.name)
            for param in method.params:
                assert f"- `{param.name}`: `" in page, (plan.model_id, method.name, param.name)
        assert f"[`{plan.model_id}`]({page_path(plan.model_id)})" in pages["index.md"]


def test_a_page_states_types_defaults_constraints_streams_batches_and_price(
    catalog: Catalog,
) -> None:
    page = catalog[1]["cf/baai/bge-m3.md"]
    assert "- `query`: `str`, **required**, `min_length=1`." in page
    assert "- `truncate_inputs`: `bool`, default `False`." in page
    assert "| Batches | `batch()`, `batch_many()`, `embed_many()` (async queue) |" in page
    assert "| Price | $0.0118 per million input tokens |" in page
    assert "- `shape`: `list[int]`, **required**. Size of the result" in page
    assert "### `EmbeddingOutput`\n\nWith its task's view, `EmbeddingView`" in page
    chat = catalog[1]["cf/meta/llama-3-8b-instruct.md"]
    assert "| Streaming | `generate_stream()`, `chat_stream()` |" in chat


# Models of different kinds: a batch-queue chat model, a classic chat model, embeddings with and without a
# reranking variant, a summarizer, an image model priced per tile and step, speech priced per audio minute,
# an image classifier priced per request.
KINDS = [
    "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
    "@cf/meta/llama-3-8b-instruct",
    "@cf/openai/gpt-oss-120b",
    "@cf/baai/bge-m3",
    "@cf/baai/bge-base-en-v1.5",
    "@cf/facebook/bart-large-cnn",
    "@cf/black-forest-labs/flux-2-dev",
    "@cf/deepgram/nova-3",
    "@cf/microsoft/resnet-50",
]
RUNTIME = ("run_tools", "batch_many", "embed_many")


def _runtime_methods(model_id: str) -> set[str]:
    """What the runtime's handle for ``model_id`` offers of RUNTIME: ``embed_many`` is on every handle but
    works only where a batch request takes a list of texts (``text_batch_limit`` raises otherwise)."""
    from workers_ai import WorkersAI
    from workers_ai._batch.embed_plan import text_batch_limit
    from workers_ai.errors import ConfigurationError

    handle = WorkersAI(account_id=ACCOUNT, api_token="t").model(model_id)
    found = {name for name in ("run_tools", "batch_many") if callable(getattr(handle, name, None))}
    try:
        text_batch_limit(handle)
        found.add("embed_many")
    except ConfigurationError:
        pass
    return found


def test_pages_name_run_tools_batch_many_and_embed_many_where_the_runtime_has_them(catalog: Catalog) -> None:
    plans, pages = catalog
    for plan in plans:
        page = pages[page_path(plan.model_id)]
        named = {name for name in RUNTIME if f"### `{name}(" in page}
        assert named == _runtime_methods(plan.model_id), plan.model_id
    assert {n for m in KINDS for n in RUNTIME if f"### `{n}(" in pages[page_path(m)]} == set(RUNTIME)
    llama = pages["cf/meta/llama-3.3-70b-instruct-fp8-fast.md"]
    assert "| Batches | `batch()`, `batch_many()` (async queue) |" in llama
    assert "Returns `ToolRun[TextGenerationOutput]`. Calls `chat()` with Python functions" in llama
    assert "[Tools](../../../docs/structured-tools.md#tools)" in llama
    assert "Returns `list[BatchItem[TextGenerationOutput]]`." in llama
    assert (
        "`run_tools(" in pages["cf/meta/llama-3-8b-instruct.md"]
        and "_many(" not in pages["cf/meta/llama-3-8b-instruct.md"]
    )
    bart = pages["cf/facebook/bart-large-cnn.md"]
    assert not any(f"`{n}(" in bart for n in RUNTIME) and "| Batches | no |" in bart
    assert "| rank, embed, embed_contexts, batch, batch_many, embed_many |" in pages["index.md"]


def test_the_calls_a_page_shows_are_the_runtimes_signatures(catalog: Catalog) -> None:
    """run_tools() and embed_many() are written out with their keywords and defaults: as the runtime has them."""
    import inspect

    from workers_ai._handles.sync import ModelHandle
    from workers_ai._handles.typed_bases import ToolsHandle

    page = catalog[1]["cf/baai/bge-m3.md"] + catalog[1]["cf/meta/llama-3-8b-instruct.md"]
    for method in (ToolsHandle.run_tools, ModelHandle.embed_many):
        call = re.search(rf"### `({method.__name__}\(.*\))`", page)
        assert call is not None, method.__name__
        shown = [p.strip() for p in call[1].removeprefix(f"{method.__name__}(").removesuffix(")").split(", ")]
        real = [
            p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}".replace("'", '"')
            for p in inspect.signature(method).parameters.values()
            if p.name != "self"
        ]
        assert shown == real, method.__name__


@pytest.mark.parametrize(
    ("model_id", "price"),
    [
        ("@cf/meta/llama-3.3-70b-instruct-fp8-fast", "$0.29 per million input tokens; $2.25 per million output tokens"),
        ("@cf/microsoft/resnet-50", "$2.51 per million requests"),
        ("@cf/deepgram/nova-3", "$0.0052 per audio minute"),
        ("@cf/black-forest-labs/flux-2-dev", "$0.413 per 1,000 input 512x512 tiles, per step"),
        ("@cf/deepgram/aura-2-en", "$0.03 per 1,000 characters"),
    ],
)
def test_prices_read_as_people_read_them(catalog: Catalog, model_id: str, price: str) -> None:
    page = catalog[1][page_path(model_id)]
    row = next(line for line in page.splitlines() if line.startswith("| Price |"))
    assert price in row, row
    assert "e-0" not in row and "USD" not in row and " M " not in row


def test_price_words_scales_a_unit_until_four_decimals_are_enough() -> None:
    assert price_words(2.51e-06, "USD", "per inference request") == "$2.51 per million requests"
    assert price_words(0.000011, "USD", "per neuron") == "$0.011 per 1,000 neurons"
    assert price_words(0.011, "USD", "per 1k neurons") == "$0.011 per 1,000 neurons"
    assert price_words(0.00011, "USD", "per step") == "$0.11 per 1,000 steps"
    assert price_words(0.0052, "USD", "per audio minute") == "$0.0052 per audio minute"
    assert price_words(0.3, "USD", "per M output tokens") == "$0.30 per million output tokens"
    assert price_words(0, "USD", "per step") == "$0 per step"
    assert price_words(0.5, "EUR", "") == "0.50 EUR"


def test_annotations_lose_their_metadata_and_keep_their_constraints() -> None:
    assert split_annotation('Annotated[Literal["a,]b"], Meta(title="t")] | UnsetType') == ('Literal["a,]b"]', [])
    assert split_annotation("list[Annotated[str, Meta(min_length=1)]] | Annotated[int, Meta(ge=1, le=5)]") == (
        "list[str] | int",
        ["str: min_length=1", "int: ge=1, le=5"],
    )


def test_the_site_navigation_lists_every_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")]
    pages += ["docs/networks.md", "docs/observability.md", "README.md", "CONTRIBUTING.md", "bench/README.md"]
    assert [p for p in pages if f"- {p}\n" not in nav and f": {p}\n" not in nav] == []
    assert "reference/index.md" in nav


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300
    commands = lines[lines.index("```sh") + 1 : lines.index("```", lines.index("```sh"))]
    assert [c.split("#")[0].strip() for c in commands] == ["make demo", "make test"]
    assert lines.index("```sh") <= 3


def test_the_readme_links_every_topic_page() -> None:
    readme = (ROOT / "README.md").read_text()
    pages = [f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")] + ["docs/networks.md", "docs/observability.md"]
    assert [p for p in pages if f"]({p})" not in readme] == []
