"""The twins :mod:`.twin_printer` prints: which sync source becomes which async region, and the explicit rules
(renames, awaits, ``async for``/``async with``, prose) that make it async. Every rule must be used by some
twin (``python -m codegen.twins --check`` reports one that is not)."""

from __future__ import annotations

from .twin_printer import Twin, async_def, async_for, awaits, methods, names, texts

__all__ = ["TWINS"]

# The async client's names for the sync client's: its session, its jobs, its streams.
_CLIENT = names({"Session": "AsyncSession", "BatchJob": "AsyncBatchJob"})

_JOB = names({"BatchTarget": "AsyncBatchTarget"})

# The realtime sessions: the thread things of _sync become the task things _aio defines under the same names.
_REALTIME = names(
    {
        "Iterator": "AsyncIterator",
        "__enter__": "__aenter__",
        "__exit__": "__aexit__",
        "__iter__": "__aiter__",
    }
)

TWINS: tuple[Twin, ...] = (
    Twin(
        "_handles/sync.py:ModelHandle",
        "_handles/aio.py:AsyncModelHandle",
        (
            *_CLIENT,
            *names({"EventStream": "AsyncStreamRequest"}),
            *awaits("self.client._drive"),
            *texts({"``with h.stream(...) as events``": "``async with h.stream(...) as events``"}),
        ),
        skip=("_open_stream",),
    ),
    Twin(
        "_handles/typed_bases.py:ToolsHandle",
        "_handles/typed_bases.py:AsyncToolsHandle",
        awaits("self._drive"),
    ),
    Twin(
        "_handles/typed_bases.py:BatchHandle",
        "_handles/typed_bases.py:AsyncBatchHandle",
        (
            *_CLIENT,
            *awaits("self._submit_batch", "self._batch_many"),
            *texts({"``.wait()`` on the job": "``await job.wait()``"}),
        ),
    ),
    Twin("_batch/jobs.py:BatchJob", "_batch/jobs.py:AsyncBatchJob", (*_JOB, *awaits("self.handle.client._drive"))),
    Twin(
        "_clients/sync.py:BaseClient",
        "_clients/aio.py:AsyncBaseClient",
        (
            *_CLIENT,
            *names(
                {
                    "GenericHandle": "AsyncGenericHandle",
                    "UniversalHandle": "AsyncUniversalHandle",
                    "ModelHandle": "AsyncModelHandle",
                    "Finetunes": "AsyncFinetunes",
                    "__enter__": "__aenter__",
                    "__exit__": "__aexit__",
                }
            ),
            *methods({"close": "aclose"}),
            *awaits("self._drive", "self.close"),
        ),
    ),
    Twin(
        "realtime/_sync.py:SyncSession",
        "realtime/_aio.py:AsyncSession",
        (
            *_REALTIME,
            *awaits(
                "open_socket",
                "stop",
                "take",
                "self._inbox.put",
                "self._done.wait",
                "ws.send",
                "self._ws.close",
                "self._connected().send",
            ),
            *async_for("ws"),
            *async_def("poll"),
        ),
    ),
    Twin(
        "realtime/_sync.py:ListenSession",
        "realtime/_aio.py:AsyncListenSession",
        (*_REALTIME, *awaits("sleep")),
    ),
    Twin(
        "realtime/_sync.py:SpeakSession",
        "realtime/_aio.py:AsyncSpeakSession",
        (*_REALTIME, *async_for("self.until_flushed()")),
    ),
    Twin(
        "realtime/__init__.py:listen_sync,speak_sync",
        "realtime/__init__.py",
        (
            *names({"listen_sync": "listen_async", "speak_sync": "speak_async"}),
            *names({"ListenSession": "AsyncListenSession", "SpeakSession": "AsyncSpeakSession"}),
            *texts({"with ``with``": "with ``async with``"}),
        ),
    ),
    Twin(
        "_account/finetunes.py:Finetunes",
        "_account/finetunes.py:AsyncFinetunes",
        (*_CLIENT, *awaits("self._session._drive")),
    ),
)
