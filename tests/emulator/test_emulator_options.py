"""``Emulator(...)`` and ``workers-ai serve`` take one set of options, with the same names (issue 28)."""

from __future__ import annotations

import inspect
import io

import pytest
from workers_ai.testing import Emulator
from workers_ai.testing.__main__ import build_parser, emulator_options
from workers_ai.testing._options import OPTIONS

BGE = "@cf/baai/bge-m3"


def test_the_constructor_and_the_table_agree_name_for_name_and_default_for_default() -> None:
    params = inspect.signature(Emulator).parameters
    assert list(params) == [o.name for o in OPTIONS]
    assert {n: p.default for n, p in params.items()} == {o.name: o.default for o in OPTIONS}


def test_every_option_but_the_python_only_ones_is_a_serve_option_of_the_same_name() -> None:
    parser = build_parser()
    flags = {a.dest: a.option_strings for a in parser._actions if a.dest != "help"}
    cli = [o for o in OPTIONS if o.cli]
    assert set(flags) == {o.name for o in cli}
    for o in cli:
        assert o.flag in flags[o.name], (o.name, flags[o.name])
    assert {o.name for o in OPTIONS if not o.cli} == {"log", "start"}  # a stream; the constructor's own
    given = emulator_options(build_parser().parse_args([]))
    assert given["port"] == 8787 and given["quiet"] is False  # serve's two defaults of its own
    assert {k: v for k, v in given.items() if k not in ("port", "quiet")} == {
        o.name: o.default for o in cli if o.name not in ("port", "quiet")
    }


def test_quiet_and_single_number_pairs_work_in_python() -> None:
    with Emulator(quiet=True, batch_delay=30, batch_polls=2) as emu:
        assert emu.batch_delay == (30.0, 30.0) and emu.batch_polls == (2, 2)
        assert emu.log is None
    out = io.StringIO()
    with Emulator(quiet=False, log=out) as emu:
        emu.client().model(BGE).embed(text="a")
    assert BGE in out.getvalue()
    with pytest.raises(ValueError, match="one number for both"):
        Emulator(batch_delay="30", start=False)  # type: ignore[arg-type]


def test_serve_takes_the_same_forms() -> None:
    parser = build_parser()
    one = emulator_options(parser.parse_args(["--batch-delay", "30", "--quiet", "--api-token", "t"]), parser)
    assert (one["batch_delay"], one["quiet"], one["api_token"]) == (30.0, True, "t")
    two = emulator_options(parser.parse_args(["--batch-polls", "0", "2", "--token", "u", "--no-shuffle-batches"]))
    assert (two["batch_polls"], two["api_token"], two["shuffle_batches"]) == ((0, 2), "u", False)
    with Emulator(**{**one, "port": 0}) as emu:
        assert emu.batch_delay == (30.0, 30.0) and emu.log is None
    with pytest.raises(SystemExit):
        emulator_options(parser.parse_args(["--batch-delay", "1", "2", "3"]), parser)
