"""The emulator's options, defined once: ``Emulator(name=...)`` and ``workers-ai serve --name`` (the same
name with dashes) take the same set, with the same meanings and defaults (``serve`` differs only where
listed: its port and that it prints a line per request). ``Emulator.__init__`` spells them out for type
checkers; ``tests/emulator/test_emulator_options.py`` holds it to this table.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_ACCOUNT_ID", "DEFAULT_API_TOKEN", "OPTIONS", "Option", "add_options", "options_from"]

DEFAULT_ACCOUNT_ID = "0123456789abcdef0123456789abcdef"
DEFAULT_API_TOKEN = "emulator-token"

_UNSET: Any = object()


@dataclass(frozen=True)
class Option:
    """One option. ``kind``: ``str``, ``int``, ``float``, ``bool`` (``--x``/``--no-x``), ``pair_int`` or
    ``pair_float`` (one number for both, or two), ``list`` (one or more values), ``rate_limits`` (``published``,
    a number, or ``NAME=RPM`` pairs: :func:`._limits.parse_rate_limits`); ``cli=False`` for a
    Python-only one (a stream, ``start``)."""

    name: str
    default: Any
    help: str
    kind: str = "str"
    metavar: str | None = None
    serve_default: Any = _UNSET
    cli: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def cli_default(self) -> Any:
        return self.default if self.serve_default is _UNSET else self.serve_default


OPTIONS: tuple[Option, ...] = (
    Option("host", "127.0.0.1", "address to listen on"),
    Option("port", 0, "port (0 picks a free one)", "int", serve_default=8787),
    Option("account_id", DEFAULT_ACCOUNT_ID, "account id clients must use (32 hex characters)"),
    Option("api_token", DEFAULT_API_TOKEN, "API token clients must send", aliases=("--token",)),
    Option("models", None, "serve only these model ids", "list", metavar="MODEL"),
    Option("schemas", None, "also serve the model schemas in this folder"),
    Option(
        "batch_polls",
        (1, 1),
        "polls a batch answers 'queued', then 'running', before its results (one number for both)",
        "pair_int",
        metavar="N",
    ),
    Option(
        "batch_delay",
        None,
        "seconds a batch stays queued, then running, instead of counting polls (one number for both)",
        "pair_float",
        metavar="SECONDS",
    ),
    Option("shuffle_batches", True, "return batch items in any order, as the API does", "bool"),
    Option("stream_interval", 0.0, "seconds between streamed events", "float"),
    Option("check_outputs", False, "validate every reply against the model's output schema", "bool"),
    Option(
        "quiet",
        True,
        "print no line per request (the default in Python; `serve` prints them unless --quiet)",
        "bool",
        serve_default=False,
    ),
    Option("log", None, "where the lines per request go (a text stream; turns them on)", cli=False),
    Option("keep_requests", 10_000, "requests remembered", "int"),
    Option("keep_jobs", 10_000, "batch jobs remembered", "int"),
    Option("workers", 8, "requests computed at once", "int"),
    Option(
        "rate_limits",
        None,
        "hold models to requests/min, answering 429 (code 3021) with Retry-After: 'published' (Workers AI's "
        "limits), one number for every model, or MODEL_OR_TASK=RPM pairs",
        "rate_limits",
        metavar="LIMIT",
    ),
    Option(
        "latency",
        None,
        "seconds every model reply takes: one number, or LOW HIGH for a random time in that range",
        "pair_float",
        metavar="SECONDS",
    ),
    Option("start", True, "start serving in the constructor", "bool", cli=False),
)


def add_options(parser: argparse.ArgumentParser) -> None:
    """Every option with ``cli`` as a command-line option whose ``dest`` is its name."""
    for opt in OPTIONS:
        if not opt.cli:
            continue
        shown = opt.cli_default
        text = opt.help + ("" if shown is None or opt.kind == "bool" else f" (default {_shown(shown)})")
        names = [opt.flag, *opt.aliases]
        if opt.kind == "bool":
            parser.add_argument(*names, dest=opt.name, action=argparse.BooleanOptionalAction, default=shown, help=text)
        elif opt.kind in ("pair_int", "pair_float"):
            number = int if opt.kind == "pair_int" else float
            parser.add_argument(*names, dest=opt.name, type=number, nargs="+", metavar=opt.metavar, default=shown,
                                help=text)  # fmt: skip
        elif opt.kind in ("list", "rate_limits"):
            parser.add_argument(*names, dest=opt.name, nargs="+", metavar=opt.metavar, default=shown, help=text)
        else:
            number_or_text: Any = {"int": int, "float": float}.get(opt.kind, str)
            parser.add_argument(*names, dest=opt.name, type=number_or_text, default=shown, help=text)


def options_from(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The ``Emulator(...)`` keywords that parsed ``args`` give; a pair given three numbers is refused."""
    options: dict[str, Any] = {}
    for opt in OPTIONS:
        if not opt.cli:
            continue
        value: Any = getattr(args, opt.name)
        if opt.kind in ("pair_int", "pair_float") and isinstance(value, list):
            numbers: list[Any] = list(value)  # pyright: ignore[reportUnknownArgumentType]
            if len(numbers) > 2:
                parser.error(f"{opt.flag} takes one number (for both) or two, got {len(numbers)}")
            value = (numbers[0], numbers[1]) if len(numbers) == 2 else numbers[0]
        if opt.kind == "rate_limits" and isinstance(value, list):
            from ._limits import parse_rate_limits

            words: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
            try:
                value = parse_rate_limits([str(v) for v in words])
            except ValueError as exc:
                parser.error(f"{opt.flag}: {exc}")
        options[opt.name] = value
    return options


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        items: tuple[Any, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return " ".join(str(v) for v in items)
    return str(value)
