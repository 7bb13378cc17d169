"""What ``workers-ai`` prints: binary replies only to a file or a pipe, a progress bar on a terminal
(plain lines otherwise), and, printed by ``main`` alone, usage errors and the usage line at the end."""

from __future__ import annotations

import argparse
import base64
import binascii
import sys
from typing import IO, TYPE_CHECKING, Any, NoReturn

import msgspec

from .._batch.embed_plan import BatchProgress
from .._core.accounting import UsageMeter
from .._core.jsonview import as_object

if TYPE_CHECKING:
    from .._client import WorkersAI

__all__ = [
    "ENVIRONMENT",
    "Parser",
    "ProgressBar",
    "UsageError",
    "add_base_url",
    "binary_refusal",
    "media_of",
    "new_client",
    "print_json",
    "usage_line",
]


class UsageError(Exception):
    """Bad command-line input: an option or argument that does not fit, a file that cannot be read, a
    reply that cannot go where it was sent. ``main`` prints it, and only it: one line, ``workers-ai
    COMMAND: message``, exit status 2."""

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are usage errors like the commands' own (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)", self.prog)


# The end of the help of every command that calls the API: where its account, token and URL come from.
ENVIRONMENT = (
    "environment: CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN (the account and an API token with the Workers"
    " AI permission), CLOUDFLARE_BASE_URL (optional: the API's base URL; `workers-ai serve` prints all three for"
    " the local emulator); WORKERS_AI_LOG=debug|info|warning|error logs to stderr"
)


def add_base_url(parser: argparse.ArgumentParser) -> None:
    """``--base-url``, as every command that calls the API takes it."""
    parser.add_argument(
        "--base-url",
        default=None,
        help="the API's base URL (default: CLOUDFLARE_BASE_URL, else https://api.cloudflare.com/client/v4)",
    )


def new_client(args: argparse.Namespace, **options: Any) -> WorkersAI:
    """The command's client (``--base-url``); ``main`` prints its usage line when the command ends."""
    from .. import WorkersAI

    ai = WorkersAI(base_url=args.base_url, **options)
    args.usage_meter = ai.usage
    return ai


def binary_refusal(content_type: str, size: int | None = None) -> str:
    """The message for binary data that would go to a terminal."""
    ext = content_type.split("/")[-1].split(";")[0].split("+")[0].strip() or "bin"
    what = f"{size} bytes of {content_type}" if size is not None else content_type
    return (
        f"the reply is {what}, not text, and stdout is a terminal; "
        f"write it to a file with -o out.{ext} (or redirect: > out.{ext})"
    )


_MEDIA_FIELDS = frozenset({"image", "audio", "video"})


def media_of(result: object) -> bytes | None:
    """The bytes of a reply that carries one medium as base64 inside JSON (flux-1-schnell's ``{"image":
    ...}``, melotts' ``{"audio": ...}``, a ``data:`` URL too), or None for any other reply."""
    data = msgspec.to_builtins(result) if isinstance(result, msgspec.Struct) else result
    obj = as_object(data)
    if obj is None:
        return None
    found = [v for k, v in obj.items() if k in _MEDIA_FIELDS and isinstance(v, str) and v]
    if len(found) != 1:
        return None
    text: str = found[0]
    if text.startswith("data:") and ";base64," in text:
        text = text.split(";base64,", 1)[1]
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def usage_line(meter: UsageMeter) -> str:
    return f"workers-ai: usage: {meter.summary()}"


class ProgressBar:
    """``[#####.....]  520/1000 texts  3/5 batches  12.3s`` redrawn in place on a terminal; on anything
    else one plain line whenever another batch finishes."""

    def __init__(self, stream: IO[str] | None = None, width: int = 30, unit: str = "texts") -> None:
        self.stream: IO[str] = stream or sys.stderr
        self.unit = unit
        self.tty = self.stream.isatty()
        self.width = width
        self.drawn = False
        self.last: tuple[int, int] | None = None

    def __call__(self, progress: BatchProgress) -> None:
        filled = int(self.width * progress.fraction)
        text = (
            f"{progress.done}/{progress.total} {self.unit}  {progress.batches_done}/{progress.batches} batches  "
            f"{progress.elapsed:.1f}s"
        )
        if self.tty:
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r[{bar}] {text}")
            self.stream.flush()
            self.drawn = True
        elif (progress.done, progress.batches_done) != self.last:
            self.stream.write(f"progress: {text}\n")
            self.stream.flush()
        self.last = (progress.done, progress.batches_done)

    def end(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")


def print_json(value: Any) -> None:
    """A result on stdout: bytes as they are, anything else as indented JSON."""
    if isinstance(value, (bytes, bytearray)):
        sys.stdout.buffer.write(bytes(value))
        return
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
