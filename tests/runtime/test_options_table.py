"""The client's options are one table (``workers_ai._core.options.OPTIONS``: name, type, default, one-line
doc); the forms type checkers need written out are held to it here: the constructor's signature (both
clients take ``SessionConfig.__init__``'s), ``ClientOptions`` and ``ClientOptionsDict``. The constructor's
docstring (``help(WorkersAI)``) is printed from the table."""

from __future__ import annotations

import ast
import inspect
import pydoc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from workers_ai import AsyncWorkersAI, ClientOptions, Gateway, WorkersAI
from workers_ai._core import options as options_module
from workers_ai._core.config import SessionConfig
from workers_ai._core.options import OPTIONS
from workers_ai._core.ratelimit import RateBudget

from tests.conftest import ACCOUNT, TOKEN

Table = tuple[tuple[str, str, Any, str], ...]
# Options whose ClientOptions field is what the constructor resolved them to (given: None -> resolved value).
RESOLVED = {"base_url": str, "gateway": Gateway}


def signature_problems(init: Any, table: Table) -> list[str]:
    """How ``init``'s signature differs from ``table``: names and order, kinds, defaults, annotations."""
    params = list(inspect.signature(init).parameters.values())[1:]  # self
    problems: list[str] = []
    if [p.name for p in params] != [row[0] for row in table]:
        problems.append(f"names: {[p.name for p in params]} != {[row[0] for row in table]}")
    for param, (name, kind, default, _) in zip(params, table, strict=False):
        if param.default != default or type(param.default) is not type(default):
            problems.append(f"{name}: default {param.default!r} != {default!r}")
        if param.annotation != kind:
            problems.append(f"{name}: annotated {param.annotation!r} != {kind!r}")
        expected_kind = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if name in ("account_id", "api_token")
            else inspect.Parameter.KEYWORD_ONLY
        )
        if param.kind is not expected_kind:
            problems.append(f"{name}: {param.kind} parameter")
    return problems


def struct_problems(table: Table) -> list[str]:
    """How ``ClientOptions`` differs from ``table``: every option but the account id and token, in order,
    with the table's default (a resolved option has none: it is always set)."""
    rows = [row for row in table if row[0] not in ("account_id", "api_token")]
    fields = msgspec.structs.fields(ClientOptions)
    problems: list[str] = []
    if [f.name for f in fields] != [row[0] for row in rows]:
        problems.append(f"fields: {[f.name for f in fields]} != {[row[0] for row in rows]}")
    for field, (name, _, default, _) in zip(fields, rows, strict=False):
        if name in RESOLVED:
            continue
        if field.default != default:
            problems.append(f"{name}: ClientOptions default {field.default!r} != {default!r}")
    return problems


def typed_dict_problems(table: Table) -> list[str]:
    """How ``ClientOptionsDict`` (declared for type checkers only, so read from the source) differs."""
    tree = ast.parse(Path(options_module.__file__).read_text(encoding="utf-8"))
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "ClientOptionsDict")
    declared = [
        (n.target.id, ast.unparse(n.annotation))
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    wanted = [(row[0], row[1]) for row in table]
    return [] if declared == wanted else [f"ClientOptionsDict {declared} != {wanted}"]


def test_every_option_has_one_row_with_a_one_line_doc() -> None:
    names = [row[0] for row in OPTIONS]
    assert len(names) == len(set(names)) == 24
    for name, kind, _, doc in OPTIONS:
        assert kind and doc.strip() and "\n" not in doc and len(doc) <= 110 and doc.endswith("."), name


@pytest.mark.parametrize("init", [SessionConfig.__init__, WorkersAI.__init__, AsyncWorkersAI.__init__])
def test_the_constructor_signature_is_the_table(init: Any) -> None:
    assert signature_problems(init, OPTIONS) == []


def test_client_options_and_the_with_options_keywords_are_the_table() -> None:
    assert struct_problems(OPTIONS) == []
    assert typed_dict_problems(OPTIONS) == []


def test_the_checks_catch_a_table_that_drifted() -> None:
    renamed = tuple(("timeouts", *row[1:]) if row[0] == "timeout" else row for row in OPTIONS)
    retyped = tuple((row[0], "int", *row[2:]) if row[0] == "timeout" else row for row in OPTIONS)
    redefaulted = tuple((*row[:2], 5, row[3]) if row[0] == "max_retries" else row for row in OPTIONS)
    added = (*OPTIONS, ("new_option", "bool", False, "A new option."))
    for table in (renamed, retyped, redefaulted, added):
        assert signature_problems(SessionConfig.__init__, table)
    for table in (renamed, retyped, added):  # a TypedDict has no defaults
        assert typed_dict_problems(table)
    for table in (renamed, redefaulted, added):  # ClientOptions holds values, typed as resolved
        assert struct_problems(table)


@pytest.mark.parametrize("client", [WorkersAI, AsyncWorkersAI])
def test_help_shows_every_argument_with_its_doc_from_the_table(client: type[Any]) -> None:
    text = pydoc.render_doc(client, renderer=pydoc.plaintext)
    init_doc = inspect.getdoc(client.__init__) or ""
    for name, kind, default, doc in OPTIONS:
        assert f"{name} : {kind}, default {default!r}\n    {doc}" in init_doc, name
        assert doc in text, name
    # What a client keeps beside its methods is documented too.
    class_doc = inspect.getdoc(client) or ""
    for attribute in ("``usage``", "``options``", "``last_response``"):
        assert attribute in class_doc, attribute


def test_each_option_given_reaches_ai_options() -> None:
    budget = RateBudget(120)
    given: dict[str, Any] = {
        "base_url": "http://127.0.0.1:9/client/v4",
        "gateway": "gw-1",
        "timeout": 7.5,
        "max_retries": 5,
        "headers": {"x-a": "1"},
        "max_connections": 3,
        "max_response_bytes": 1000,
        "max_event_bytes": 500,
        "stream_idle_timeout": 4.0,
        "stream_timeout": 9.0,
        "compress": True,
        "session_affinity": "conv",
        "rate_limit": budget,
        "strict_inputs": True,
        "proxy": "http://127.0.0.1:8",
        "trust_env": False,
        "telemetry": False,
        "tracer_provider": object(),
        "meter_provider": object(),
        "log_bodies": True,
    }
    skipped = {"account_id", "api_token", "transport", "verify"}  # not options / exclusive with proxy=
    assert set(given) | skipped == {row[0] for row in OPTIONS}
    ai = WorkersAI(ACCOUNT, TOKEN, **given)
    try:
        for name, value in given.items():
            kept = getattr(ai.options, name)
            if name == "gateway":
                assert kept == Gateway(id="gw-1"), name
            else:
                assert kept == value, name
    finally:
        ai.close()
