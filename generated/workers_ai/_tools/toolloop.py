"""``run_tools``: call the model, run the functions it asks for, send the results back, until it answers.

Each round the model's tool calls are read (either reply shape, :func:`tool_calls`), every call's
arguments are validated against its function's signature (``msgspec.convert`` into the Struct built
from it) and the function is run; the assistant's calls and the results are appended in the form the
model family takes back: classic Workers AI models ``{"role": "assistant", "content": "", "tool_calls":
[{name, arguments}]}`` and ``{"role": "tool", "name": ..., "content": ...}``; OpenAI-shaped ones (calls
with an ``id``) ``{"role": "assistant", "content": "", "tool_calls": [{id, type, function}]}`` and
``{"role": "tool", "tool_call_id": ..., "content": ...}``. (Never ``"content": null``: OpenAI's API takes
it, but Workers AI's ``/ai/v1`` answers 400.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, cast

import msgspec

from .._core.decode import split_error
from .._core.flow import Flow
from .._core.jsonview import as_list, as_object
from .._core.telemetry import active, telemetry_of
from .._core.toolcall import ToolCall, tool_calls
from ..errors import ConfigurationError, InputValidationError, ToolLoopError
from .tooldefs import ToolDef, ToolForm, tool_def

if TYPE_CHECKING:
    from .._core.telemetry import Telemetry

__all__ = ["ToolRun", "reply_text", "tool_flow", "tools_flow", "tool_messages"]

OutT = TypeVar("OutT")
OnToolError = Literal["report", "raise"]


def reply_text(output: Any) -> str:
    """The text of a reply: ``response`` (classic) or ``choices[0].message.content`` (OpenAI-shaped)."""
    value: Any = msgspec.to_builtins(output) if isinstance(output, msgspec.Struct) else output
    obj = as_object(value) or {}
    response = obj.get("response")
    if isinstance(response, str):
        return response
    choices = as_list(obj.get("choices"))
    if choices:
        message = as_object((as_object(choices[0]) or {}).get("message")) or {}
        content = message.get("content")
        if isinstance(content, str):
            return content
        text = (as_object(choices[0]) or {}).get("text")
        if isinstance(text, str):
            return text
    if response is not None:
        return msgspec.json.encode(response).decode()
    return ""


@dataclass
class ToolRun(Generic[OutT]):
    """The end of a tool loop: the model's final ``output`` (typed), its text (``response``), the whole
    conversation (``messages``: the caller's, every call and result, the final answer), the number of
    tool ``rounds`` and every ``calls`` made."""

    output: OutT
    messages: list[dict[str, Any]]
    rounds: int
    calls: list[ToolCall] = field(default_factory=list[ToolCall])

    @property
    def response(self) -> str:
        return reply_text(self.output)


def _as_message(m: Any) -> dict[str, Any]:
    value: object = msgspec.to_builtins(m) if isinstance(m, msgspec.Struct) else m
    obj = as_object(dict(cast("Mapping[str, Any]", value)) if isinstance(value, Mapping) else value)
    if obj is None:
        raise InputValidationError("", "$.messages", f"a message must be a mapping or struct, got {type(m).__name__}")
    return obj


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except TypeError:
        return str(value)


def tool_messages(calls: Sequence[ToolCall], results: Sequence[str]) -> list[dict[str, Any]]:
    """The assistant turn carrying ``calls`` and one ``tool`` message per result, in the calls' family form."""
    if any(c.id for c in calls):
        out: list[dict[str, Any]] = [
            {"role": "assistant", "content": "", "tool_calls": [c.openai_form() for c in calls]}
        ]
        out += [
            {"role": "tool", "tool_call_id": c.openai_form()["id"], "name": c.name, "content": r}
            for c, r in zip(calls, results, strict=True)
        ]
        return out
    out = [{"role": "assistant", "content": "", "tool_calls": [c.legacy_form() for c in calls]}]
    out += [{"role": "tool", "name": c.name, "content": r} for c, r in zip(calls, results, strict=True)]
    return out


def _run_one(call: ToolCall, index: int, defs: Mapping[str, ToolDef], model_id: str, on_error: OnToolError) -> str:
    tool = defs.get(call.name)
    if tool is None or tool.function is None:
        if on_error == "raise":
            raise ConfigurationError(f"{model_id}: the model called {call.name!r}, which is not one of the tools")
        return f"error: there is no tool named {call.name!r}"
    if call.arguments_error is not None:  # the model's text is no JSON object: it is told so, or it raises
        if on_error == "raise":
            where = f"$.tool_calls[{index}].arguments"
            raise InputValidationError(model_id, where, f"{call.name}: {call.arguments_error}: {call.raw_arguments!r}")
        return f"error: {call.arguments_error}"
    try:
        kwargs = tool.convert(call.arguments)
    except msgspec.ValidationError as exc:
        path, message = split_error(exc)
        if on_error == "raise":
            where = f"$.tool_calls[{index}].arguments{path.removeprefix('$')}"
            raise InputValidationError(model_id, where, f"{call.name}: {message}") from None
        return f"error: invalid arguments for {call.name} at {path}: {message}"
    try:
        return _result_text(tool.function(**kwargs))
    except Exception as exc:
        if on_error == "raise":
            raise
        return f"error: {type(exc).__name__}: {exc}"


class _Loop:
    """The state of one tool loop, shared by the sync and async drivers (they only differ in how they call)."""

    def __init__(
        self,
        model_id: str,
        messages: Sequence[Any],
        tools: Sequence[Callable[..., Any] | ToolDef],
        form: ToolForm,
        max_rounds: int,
        on_tool_error: OnToolError,
        options: Mapping[str, Any] | None,
    ) -> None:
        if max_rounds < 0:
            raise ConfigurationError("run_tools: max_rounds must be 0 or more")
        if on_tool_error not in ("report", "raise"):
            raise ConfigurationError(f"run_tools: on_tool_error must be 'report' or 'raise', not {on_tool_error!r}")
        self.defs: dict[str, ToolDef] = {}
        for tool in tools:
            d = tool_def(tool, model_id)
            if d.function is None:
                raise ConfigurationError(f"run_tools: tool {d.name!r} is not a function, so it cannot be run")
            if d.name in self.defs:
                raise ConfigurationError(f"run_tools: two tools are named {d.name!r}")
            self.defs[d.name] = d
        self.extra = dict(options or {})
        for key in ("messages", "tools", "stream"):
            if key in self.extra:
                raise ConfigurationError(f"run_tools: options cannot set {key!r}")
        self.model_id = model_id
        self.max_rounds = max_rounds
        self.on_tool_error: OnToolError = on_tool_error
        self.convo = [_as_message(m) for m in messages]
        self.specs = [d.request(form) for d in self.defs.values()]
        self.calls: list[ToolCall] = []
        self.rounds = 0
        self.telemetry: Telemetry | None = None  # set by the flow: an execute_tool span per tool run
        self.url = ""

    def _run(self, call: ToolCall, index: int) -> str:
        """Run one tool call; with telemetry on, as an ``execute_tool`` span (current while the tool runs)."""
        tel = self.telemetry
        if tel is None:
            return _run_one(call, index, self.defs, self.model_id, self.on_tool_error)
        attrs: dict[str, Any] = {"gen_ai.tool.name": call.name, "gen_ai.tool.type": "function"}
        if call.id:
            attrs["gen_ai.tool.call.id"] = call.id
        span = tel.start(
            "execute_tool", self.model_id, self.url, extra=attrs, internal=True, name=f"execute_tool {call.name}"
        )
        if span.recording and tel.content_on_span:
            span.span.set_attribute("gen_ai.tool.call.arguments", _result_text(call.arguments))
        with active(span):
            text = _run_one(call, index, self.defs, self.model_id, self.on_tool_error)
        failed: dict[str, Any] = {}
        if text.startswith("error: "):  # reported to the model instead of raised
            kind = text[7:].split(":", 1)[0]
            failed["error.type"] = kind if kind.isidentifier() else "tool_error"
        if span.recording and tel.content_on_span:
            failed["gen_ai.tool.call.result"] = text
        span.end(extra=failed)
        return text

    def payload(self) -> dict[str, Any]:
        return {**self.extra, "messages": self.convo, "tools": self.specs}

    def step(self, output: Any, raw: Any) -> ToolRun[Any] | None:
        """Take one reply: the finished run when it holds no tool calls; else run them and return None."""
        calls = tool_calls(raw)
        if not calls:
            self.convo.append({"role": "assistant", "content": reply_text(raw)})
            return ToolRun(output, self.convo, self.rounds, self.calls)
        if self.rounds >= self.max_rounds:
            named = ", ".join(f"{c.name}({_result_text(c.arguments)})" for c in calls)
            raise ToolLoopError(
                f"{self.model_id}: still calling tools after {self.max_rounds} round(s); last calls: {named}",
                calls=calls,
                messages=self.convo,
            )
        results = [self._run(c, i) for i, c in enumerate(calls)]
        self.convo.extend(tool_messages(calls, results))
        self.calls.extend(calls)
        self.rounds += 1
        return None


class ToolHandle(Protocol):
    """What the loop needs of a model handle (sync or async: its client's driver runs the flow)."""

    @property
    def model_id(self) -> str: ...

    @property
    def client(self) -> Any: ...

    def encode_input(self, payload: Any, *, check_keys: bool = True) -> bytes: ...

    def _decoded_flow(self, body: bytes, expect: Any, request: Any = None) -> Flow[tuple[Any, Any]]: ...


def tool_flow(handle: ToolHandle, expect: Any, loop: _Loop) -> Flow[ToolRun[Any]]:
    """The loop, once: each round is one counted call (``ai.usage``) and the tools it asks for."""
    loop.telemetry = telemetry_of(handle.client)
    if loop.telemetry is not None:  # server.address/port of the tool spans: where the loop's calls go
        url: Any = getattr(handle, "_run_url", None)
        loop.url = str(url() if callable(url) else handle.client.base_url)
    while True:
        payload = loop.payload()
        body = handle.encode_input(payload, check_keys=False)  # the loop's own turns: not the user's typos
        output, raw = yield from handle._decoded_flow(body, expect, payload)  # pyright: ignore[reportPrivateUsage]
        done = loop.step(output, raw)
        if done is not None:
            return done


def tools_flow(
    handle: ToolHandle,
    expect: Any,
    *,
    messages: Sequence[Any],
    tools: Sequence[Callable[..., Any] | ToolDef],
    form: ToolForm,
    max_rounds: int = 8,
    on_tool_error: OnToolError = "report",
    options: Mapping[str, Any] | None = None,
) -> Flow[ToolRun[Any]]:
    """The loop for ``handle`` (see the module doc) as a flow its client's driver runs; ``expect`` is the
    output type to decode into (None: the handle's output union). The options are checked here, before
    anything is sent. The flow raises ``ToolLoopError`` when the model still calls tools after
    ``max_rounds`` rounds of them; the tools themselves are called as plain functions."""
    loop = _Loop(handle.model_id, messages, tools, form, max_rounds, on_tool_error, options)
    return tool_flow(handle, expect, loop)
