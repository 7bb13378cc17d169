"""The per-model reference `make docs` builds: a page for every model id, naming every method and parameter,
printed from the plan; and a site whose navigation reaches every topic page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codegen.load import load_schemas
from codegen.plan import ModelPlan, plan_models
from codegen.reference import page_path, reference_pages, split_annotation

ROOT = Path(__file__).resolve().parents[2]
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
    assert "| Batches | `batch()` (async queue) |" in page
    assert re.search(r"\| Price \| [0-9.]+ USD per M input tokens \|", page)
    assert "- `shape`: `list[int]`, **required**. Size of the result" in page
    assert "### `EmbeddingOutput`\n\nWith its task's view, `EmbeddingView`" in page
    chat = catalog[1]["cf/meta/llama-3-8b-instruct.md"]
    assert "| Streaming | `generate_stream()`, `chat_stream()` |" in chat


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
