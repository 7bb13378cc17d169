"""``workers-ai listen FILE`` and ``workers-ai speak TEXT -o out.wav``: realtime sessions from the shell.

``listen`` streams a WAV file (or raw linear16 with ``--sample-rate``) to a speech-to-text model over
WebSocket and prints each transcript as it arrives: interim ones prefixed with ``~ ``, final ones plain.
``speak`` sends a text to a text-to-speech model and writes the audio as a playable WAV file.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Any

from .output import ENVIRONMENT, UsageError, add_base_url

__all__ = ["add_live_commands"]

LISTEN_MODEL = "@cf/deepgram/nova-3"
SPEAK_MODEL = "@cf/deepgram/aura-2-en"


def add_live_commands(sub: Any) -> None:
    p_listen = sub.add_parser(
        "listen", help="transcribe a WAV file live over WebSocket (interim and final lines)", epilog=ENVIRONMENT
    )
    p_listen.add_argument("file", type=Path, help="a PCM WAV file, or raw linear16 audio with --sample-rate")
    p_listen.add_argument("--model", default=LISTEN_MODEL, help=f"a realtime speech-to-text model ({LISTEN_MODEL})")
    p_listen.add_argument("--sample-rate", type=int, default=16000, help="for raw audio (a WAV file says its own)")
    p_listen.add_argument("--realtime", action="store_true", help="send the audio at its real pace")
    add_base_url(p_listen)
    p_listen.set_defaults(func=_cmd_listen)
    p_speak = sub.add_parser("speak", help="speak a text live over WebSocket into a WAV file", epilog=ENVIRONMENT)
    p_speak.add_argument("text", help="the text to speak")
    p_speak.add_argument("-o", "--output", type=Path, required=True, help="the WAV file to write")
    p_speak.add_argument("--model", default=SPEAK_MODEL, help=f"a realtime text-to-speech model ({SPEAK_MODEL})")
    p_speak.add_argument("--speaker", default=None, help="the model's voice (default: the model's own)")
    p_speak.add_argument("--sample-rate", type=int, default=24000, help="of the audio and the WAV file (default 24000)")
    add_base_url(p_speak)
    p_speak.set_defaults(func=_cmd_speak)


def _spec(handle: Any, kind: str) -> Any:
    """The model's realtime spec (its generated ``*_live`` module), or None when it has none of ``kind``."""
    try:
        module = importlib.import_module(type(handle).__module__ + "_live")
    except ImportError:
        return None
    spec = getattr(module, "SPEC", None)
    return spec if spec is not None and spec.kind == kind else None


def _cmd_listen(args: argparse.Namespace) -> int:
    from .. import WorkersAI
    from ..realtime import ListenSession, read_wav
    from ..realtime._audio import Pacer, audio_chunks, chunk_size, wav_info

    ai = WorkersAI(base_url=args.base_url)
    handle: Any = ai.model(str(args.model))
    spec = _spec(handle, "listen")
    if spec is None:
        raise UsageError(f"{args.model} is not a realtime speech-to-text model")
    try:
        with args.file.open("rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        raise UsageError(f"{args.file}: {exc.strerror or exc}") from None
    rate, channels = args.sample_rate, 1
    if wav_info(head) is not None:
        info, _ = read_wav(args.file)
        if info.bits != 16:
            raise UsageError(f"{args.file}: {info.bits}-bit WAV; only 16-bit PCM is streamed")
        rate, channels = info.sample_rate, info.channels
    wanted: dict[str, Any] = {"encoding": "linear16", "sample_rate": rate, "interim_results": True}
    if channels != 1:
        wanted["channels"] = channels
    fields = spec.options.__struct_fields__
    options = {k: v for k, v in wanted.items() if k in fields}
    show = _Printer(spec)
    listen: ListenSession[Any] = ListenSession(ai, spec, options, model_id=args.model)
    with listen as session:
        pacer = Pacer(session.core, args.realtime)
        for chunk in audio_chunks(args.file, chunk_size(session.core, 100)):
            wait = pacer.delay(len(chunk))
            if wait:
                time.sleep(wait)
            session.send(chunk)
            for event in session.poll():
                show(event)
        for event in session.close():
            show(event)
    return 0


class _Printer:
    """Final transcripts as plain lines; interim ones as ``~ `` lines, each only when its text changed."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.last = ""

    def __call__(self, event: Any) -> None:
        final = self.spec.final_text(event)
        if final is not None:
            if final:
                print(final, flush=True)
            self.last = ""
            return
        text = self.spec.transcript_of(event)
        if text and text != self.last:
            print(f"~ {text}", flush=True)
            self.last = text


def _cmd_speak(args: argparse.Namespace) -> int:
    from .. import WorkersAI
    from ..realtime import SpeakSession, write_wav

    if not args.text.strip():
        raise UsageError("the text is empty")
    ai = WorkersAI(base_url=args.base_url)
    handle: Any = ai.model(str(args.model))
    spec = _spec(handle, "speak")
    if spec is None:
        raise UsageError(f"{args.model} is not a realtime text-to-speech model")
    options: dict[str, Any] = {"encoding": "linear16", "sample_rate": args.sample_rate}
    if args.speaker:
        options["speaker"] = args.speaker
    speak: SpeakSession[Any] = SpeakSession(ai, spec, options, model_id=args.model)
    with speak as session:
        size = write_wav(args.output, session.speak(args.text), args.sample_rate)
    seconds = size / 2 / args.sample_rate
    print(f"wrote {args.output} ({seconds:.2f} s of audio)", file=sys.stderr)
    return 0
