"""The handle bases of models that can call tools: ``run_tools()`` once, typed by the generated class line.

A generated shape module's handle names its chat method's recipe (``_tools_op = _CHAT``) and its messages
and output types (``ToolModelHandle[Input, Output, Messages, ChatOutput]``); the signature a type checker
sees is the one the generated classes used to spell out themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from .._handles.aio import AsyncModelHandle
from .._handles.sync import ModelHandle

if TYPE_CHECKING:
    from .._handles.ops import Op
    from .toolloop import ToolRun

__all__ = ["AsyncToolModelHandle", "ToolModelHandle"]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
MessagesT = TypeVar("MessagesT")
ChatT = TypeVar("ChatT")


class ToolModelHandle(ModelHandle[InT, OutT], Generic[InT, OutT, MessagesT, ChatT]):
    """A typed handle with ``run_tools()`` over its chat method (``_tools_op``)."""

    _tools_op: ClassVar[Op[Any]]

    def run_tools(
        self,
        *,
        messages: MessagesT,
        tools: Sequence[Callable[..., Any]],
        max_rounds: int = 8,
        on_tool_error: Literal["report", "raise"] = "report",
        options: Mapping[str, Any] | None = None,
    ) -> ToolRun[ChatT]:
        """Call the chat method with ``tools`` (Python functions), run the functions the model asks for and
        send their results back until it answers in text; returns the final output and the transcript (see README)."""
        return self._run_tools(self._tools_op, messages, tools, max_rounds, on_tool_error, options)


class AsyncToolModelHandle(AsyncModelHandle[InT, OutT], Generic[InT, OutT, MessagesT, ChatT]):
    """:class:`ToolModelHandle`, awaited."""

    _tools_op: ClassVar[Op[Any]]

    async def run_tools(
        self,
        *,
        messages: MessagesT,
        tools: Sequence[Callable[..., Any]],
        max_rounds: int = 8,
        on_tool_error: Literal["report", "raise"] = "report",
        options: Mapping[str, Any] | None = None,
    ) -> ToolRun[ChatT]:
        """:meth:`ToolModelHandle.run_tools`, awaited (the functions are called as plain functions)."""
        return await self._run_tools(self._tools_op, messages, tools, max_rounds, on_tool_error, options)
