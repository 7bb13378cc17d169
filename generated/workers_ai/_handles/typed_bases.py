"""Handle bases for the methods whose signature differs between shapes only in its types, written once
here rather than printed per shape: ``run_tools()`` (:class:`ToolsHandle`) and the ``batch()`` and
``batch_many()`` of a one-variant batch (:class:`BatchHandle`), each with its async twin, printed from it. A
shape names the types in its base (``ToolsHandle[In, Out, Message, Reply]``); only the shapes that have these
methods import this module."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from .aio import AsyncModelHandle
from .sync import ModelHandle

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._batch.jobs import AsyncBatchJob, BatchItem, BatchJob, BatchRequest
    from .._batch.many import BatchManyOptions
    from .._tools.toolloop import ToolRun

__all__ = ["AsyncBatchHandle", "AsyncToolsHandle", "BatchHandle", "ToolsHandle"]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
MsgT = TypeVar("MsgT")
ChatT = TypeVar("ChatT")
ItemT = TypeVar("ItemT")
ResT = TypeVar("ResT")


class ToolsHandle(ModelHandle[InT, OutT], Generic[InT, OutT, MsgT, ChatT]):
    """A handle whose ``chat()`` takes Python functions as tools (``MsgT``: a message, ``ChatT``: its reply):
    ``run_tools()`` runs the tool loop over the ``Op`` its class names with ``tools=``."""

    def run_tools(
        self,
        *,
        messages: Sequence[MsgT],
        tools: Sequence[Callable[..., Any]],
        max_rounds: int = 8,
        on_tool_error: Literal["report", "raise"] = "report",
        options: Mapping[str, Any] | None = None,
    ) -> ToolRun[ChatT]:
        """Call ``chat()`` with ``tools`` (Python functions), run the functions the model asks for and send
        their results back until it answers in text; returns the final output and the transcript
        (docs/structured-tools.md, "Tools"). The functions are called as plain functions."""
        from .._tools.toolloop import tools_flow  # here: only tool loops need it

        args = self._tool_loop_options(self._tools_op, messages, tools, max_rounds, on_tool_error, options)
        run: ToolRun[ChatT] = self._drive(tools_flow(self, self._tools_op.expect, **args))
        return run


class AsyncToolsHandle(AsyncModelHandle[InT, OutT], Generic[InT, OutT, MsgT, ChatT]):
    """:class:`ToolsHandle`, awaited."""

    # generated from _handles/typed_bases.py:ToolsHandle by codegen.twins, to the end of the class
    async def run_tools(
        self,
        *,
        messages: Sequence[MsgT],
        tools: Sequence[Callable[..., Any]],
        max_rounds: int = 8,
        on_tool_error: Literal["report", "raise"] = "report",
        options: Mapping[str, Any] | None = None,
    ) -> ToolRun[ChatT]:
        """Call ``chat()`` with ``tools`` (Python functions), run the functions the model asks for and send
        their results back until it answers in text; returns the final output and the transcript
        (docs/structured-tools.md, "Tools"). The functions are called as plain functions."""
        from .._tools.toolloop import tools_flow  # here: only tool loops need it

        args = self._tool_loop_options(self._tools_op, messages, tools, max_rounds, on_tool_error, options)
        run: ToolRun[ChatT] = await self._drive(tools_flow(self, self._tools_op.expect, **args))
        return run


class BatchHandle(ModelHandle[InT, OutT], Generic[InT, OutT, ItemT, ResT]):
    """A handle whose model takes one kind of request (``ItemT``, answered with ``ResT``) in the async batch
    API: ``batch()`` and ``batch_many()``."""

    def batch(self, requests: Sequence[ItemT | BatchRequest[ItemT]]) -> BatchJob[ResT]:
        """Queue ``requests`` (structs or dicts; ``BatchRequest(r, external_reference=...)`` labels one) with the
        async batch API; ``.wait()`` on the job gives the results, typed by the requests' variant
        (docs/batches-streaming.md, "Batches")."""
        job: BatchJob[ResT] = self._submit_batch(requests)
        return job

    def batch_many(
        self, requests: Sequence[ItemT | BatchRequest[ItemT]], **options: Unpack[BatchManyOptions]
    ) -> list[BatchItem[ResT]]:
        """Any number of requests through the async batch API: split under 10 MB, submitted, polled, failed
        items retried; one ``BatchItem`` per request in input order (docs/bulk-queue.md). ``journal=PATH``
        makes a re-run after a crash poll what was queued and send only the rest."""
        items: list[BatchItem[ResT]] = self._batch_many(requests, options)
        return items


class AsyncBatchHandle(AsyncModelHandle[InT, OutT], Generic[InT, OutT, ItemT, ResT]):
    """:class:`BatchHandle`, awaited: ``job = await h.batch([...])``, then ``await job.wait()``."""

    # generated from _handles/typed_bases.py:BatchHandle by codegen.twins, to the end of the class
    async def batch(self, requests: Sequence[ItemT | BatchRequest[ItemT]]) -> AsyncBatchJob[ResT]:
        """Queue ``requests`` (structs or dicts; ``BatchRequest(r, external_reference=...)`` labels one) with the
        async batch API; ``await job.wait()`` gives the results, typed by the requests' variant
        (docs/batches-streaming.md, "Batches")."""
        job: AsyncBatchJob[ResT] = await self._submit_batch(requests)
        return job

    async def batch_many(
        self, requests: Sequence[ItemT | BatchRequest[ItemT]], **options: Unpack[BatchManyOptions]
    ) -> list[BatchItem[ResT]]:
        """Any number of requests through the async batch API: split under 10 MB, submitted, polled, failed
        items retried; one ``BatchItem`` per request in input order (docs/bulk-queue.md). ``journal=PATH``
        makes a re-run after a crash poll what was queued and send only the rest."""
        items: list[BatchItem[ResT]] = await self._batch_many(requests, options)
        return items
