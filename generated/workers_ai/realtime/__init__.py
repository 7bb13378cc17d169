"""Realtime speech over WebSocket: live transcription (``listen``) and live speech (``speak_live``).

Sessions come from the handles of realtime models (``ai.model("@cf/deepgram/nova-3").listen(...)``);
the functions here open them from a client, a spec (a generated ``*_live`` module's ``SPEC``) and the
options, and are what those methods call. Needs the ``realtime`` extra (``websockets``), imported only
when a session opens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ._aio import AsyncListenSession, AsyncSpeakSession
from ._audio import Transcript, WavInfo, read_wav, wav_header, write_wav
from ._core import Limits, SessionCore
from ._spec import RawEvent, RealtimeSpec
from ._sync import ListenSession, SpeakSession

__all__ = [
    "AsyncListenSession",
    "AsyncSpeakSession",
    "Limits",
    "ListenSession",
    "RawEvent",
    "RealtimeSpec",
    "SessionCore",
    "SpeakSession",
    "Transcript",
    "WavInfo",
    "listen_async",
    "listen_sync",
    "read_wav",
    "speak_async",
    "speak_sync",
    "wav_header",
    "write_wav",
]

Options = Mapping[str, Any] | msgspec.Struct


def listen_sync(handle: Any, spec: RealtimeSpec, options: Options, limits: Limits | None = None) -> ListenSession[Any]:
    """A speech-to-text session of ``handle``'s model (not yet connected: use it with ``with``)."""
    return ListenSession(handle.client, spec, options, model_id=str(handle.model_id), limits=limits)


def speak_sync(handle: Any, spec: RealtimeSpec, options: Options, limits: Limits | None = None) -> SpeakSession[Any]:
    """A text-to-speech session of ``handle``'s model (not yet connected: use it with ``with``)."""
    return SpeakSession(handle.client, spec, options, model_id=str(handle.model_id), limits=limits)


# generated from realtime/__init__.py:listen_sync,speak_sync by codegen.twins, to the end of the module
def listen_async(
    handle: Any, spec: RealtimeSpec, options: Options, limits: Limits | None = None
) -> AsyncListenSession[Any]:
    """A speech-to-text session of ``handle``'s model (not yet connected: use it with ``async with``)."""
    return AsyncListenSession(handle.client, spec, options, model_id=str(handle.model_id), limits=limits)


def speak_async(
    handle: Any, spec: RealtimeSpec, options: Options, limits: Limits | None = None
) -> AsyncSpeakSession[Any]:
    """A text-to-speech session of ``handle``'s model (not yet connected: use it with ``async with``)."""
    return AsyncSpeakSession(handle.client, spec, options, model_id=str(handle.model_id), limits=limits)
