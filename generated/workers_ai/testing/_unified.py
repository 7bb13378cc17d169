"""The unified AI REST API and the OpenAI/Anthropic-compatible routes:

- ``POST /ai/v1/chat/completions``: an OpenAI ``chat.completion`` (not enveloped), or with ``stream: true``
  ``chat.completion.chunk`` events and ``data: [DONE]``;
- ``POST /ai/v1/embeddings``: an OpenAI embeddings list, the same vectors ``/ai/run`` gives that model;
- ``POST /ai/v1/responses``: an OpenAI Responses object (text in, text out; GPT-OSS and ``openai/…`` only,
  not streamed, as the API documents);
- ``POST /ai/v1/messages``: an Anthropic Messages reply (streamed as Anthropic's events too);
- ``POST /ai/run`` (universal): the model in the body; Workers AI ids answer like ``/ai/run/{model}``
  (the caller hands those back to the run path), third-party ids answer in their provider's shape inside
  the envelope.

Errors on all of these use Workers AI's envelope and codes, as the API's do.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

import msgspec

from .._core.jsonview import as_list, as_object
from ._catalog import Catalog, ModelSpec
from ._embeddings import embed, embedding_dim
from ._faults import Fault, FaultKind
from ._finetunes import check_lora
from ._openai_shapes import CREATED, chat_chunks, chat_completion
from ._outputs import seed_for
from ._reply import JSON, SSE, APIError, Reply, json_reply
from ._run import bad_input, sse_reply
from ._settings import Settings
from ._state import State
from ._textgen import JSON_MODE_UNMET, Generation, JsonModeUnmet, count_tokens, generate, reply_text
from ._thirdparty import ModelRef, resolve

__all__ = ["RESPONSES_MODELS", "Unified", "json_mode_checks"]

RESPONSES_MODELS = frozenset({"@cf/openai/gpt-oss-120b", "@cf/openai/gpt-oss-20b"})
"""Workers AI models that answer ``/ai/v1/responses`` (the docs name only these)."""

FaultFor = Callable[[FaultKind], Fault | None]
FaultReply = Callable[[FaultKind], Reply | None]


def json_mode_checks(payload: Any, fault_reply: FaultReply) -> Reply | None:
    """400/5023 for ``response_format`` with streaming; the ``json_mode_unmet`` fault's reply, if one applies."""
    return fault_reply("json_mode") if _json_mode(payload) else None


def _json_mode(payload: Any) -> bool:
    """Whether ``payload`` asks for JSON mode; 400/5023 when it streams too (the API says so before it
    checks the rest of the input, where the schema's JSON-mode override would say 5006)."""
    data = as_object(payload)
    fmt = as_object(data.get("response_format")) if data is not None else None
    if data is None or fmt is None or fmt.get("type") not in ("json_object", "json_schema"):
        return False  # no JSON mode (OpenAI clients send {"type": "text"} for plain text)
    if data.get("stream") is True:
        raise APIError(400, 5023, "JSON Mode does not support streaming: leave out stream or response_format")
    return True


def _no_null_assistant_content(body: dict[str, Any]) -> None:
    """400/5006 for an assistant message whose ``content`` is null: the live ``/ai/v1`` route refuses it
    (OpenAI's own API takes it when the message carries ``tool_calls``; send ``""`` to Workers AI)."""
    for i, raw in enumerate(as_list(body.get("messages")) or []):
        msg = as_object(raw)
        if msg is not None and msg.get("role") == "assistant" and "content" in msg and msg["content"] is None:
            raise bad_input(f"/messages/{i}/content: null is not allowed for an assistant message; send a string")


def _plain(value: Any, status: int = 200) -> Reply:
    """A reply in the provider's own shape: JSON, no envelope."""
    return Reply(status, [("content-type", JSON)], msgspec.json.encode(value))


def _declared(schema: Any) -> set[str]:
    """Top-level property names of an input schema, over all its branches."""
    obj = as_object(schema)
    if obj is None:
        return set()
    names = set(as_object(obj.get("properties")) or {})
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in as_list(obj.get(key)) or []:
            names |= _declared(branch)
    return names


class Unified:
    """The routes above, over one emulator's catalog, state and settings."""

    def __init__(self, catalog: Catalog, state: State, settings: Settings) -> None:
        self.catalog = catalog
        self.state = state
        self.settings = settings

    # ------------------------------------------------------------------ helpers

    def _spec(self, ref: ModelRef) -> ModelSpec:
        spec = self.catalog.get(ref.model_id)
        if spec is None:
            raise APIError(400, 5007, f"No such model {ref.model_id} or task")
        return spec

    def _text_spec(self, ref: ModelRef) -> ModelSpec:
        spec = self._spec(ref)
        declared = _declared(spec.input_schema)
        if spec.task_name.lower() != "text generation" and "messages" not in declared:
            raise bad_input(f"/model: {ref.model_id} is not a text generation model")
        return spec

    def _model_input(self, spec: ModelSpec, body: dict[str, Any]) -> dict[str, Any]:
        """The OpenAI-style body as the model's own input (fields it does not declare are left out), validated."""
        declared = _declared(spec.input_schema)
        payload = {k: v for k, v in body.items() if k in declared and k != "model"}
        if (as_object(payload.get("response_format")) or {}).get("type") == "text":
            del payload["response_format"]  # OpenAI's explicit default (plain text), which the models' enums lack
        tokens = body.get("max_completion_tokens")
        if "max_tokens" not in payload and tokens is not None and "max_tokens" in declared:
            payload["max_tokens"] = tokens
        problem = spec.inputs.validator.first_error(payload)
        if problem is not None:
            raise bad_input(problem)
        check_lora(spec, payload, self.state.finetunes)
        return payload

    @staticmethod
    def _generate(request: dict[str, Any], model_id: str) -> tuple[Generation, str]:
        seed = seed_for(model_id, {k: v for k, v in request.items() if k not in ("model", "stream_options")})
        try:
            return generate(request, seed), seed
        except JsonModeUnmet:
            raise APIError(400, 3030, JSON_MODE_UNMET) from None

    def _third_party(self, ref: ModelRef, fault_reply: FaultReply) -> Reply | None:
        return fault_reply("third_party") if ref.provider is not None else None

    # ------------------------------------------------------------------ routes

    def chat(self, body: dict[str, Any], fault_reply: FaultReply, stream_fault: FaultFor) -> Reply:
        ref = resolve(body.get("model"))
        early = self._third_party(ref, fault_reply)
        if early is not None:
            return early
        if ref.provider is None:
            _no_null_assistant_content(body)
            _json_mode(body)
            self._model_input(self._text_spec(ref), body)
        elif as_list(body.get("messages")) is None:
            raise bad_input("/messages: a list of messages is required")
        early = json_mode_checks(body, fault_reply)
        if early is not None:
            return early
        gen, seed = self._generate(body, ref.model_id)
        if body.get("stream") is True:
            events: list[Any] = chat_chunks(ref.model_id, gen, seed, padding=False)
            if (as_object(body.get("stream_options")) or {}).get("include_usage") is True:
                last = dict(events[-1])
                events.append({**last, "choices": [], "usage": gen.usage})
            return sse_reply(events, stream_fault("stream"), self.settings.stream_interval)
        return _plain(chat_completion(ref.model_id, gen, seed))

    def embeddings(self, body: dict[str, Any]) -> Reply:
        ref = resolve(body.get("model"))
        if ref.provider is not None:
            raise bad_input(f"/model: the emulator has no embeddings for third-party model {ref.model_id}")
        spec = self._spec(ref)
        if "embedding" not in spec.task_name.lower():
            raise bad_input(f"/model: {ref.model_id} is not a text embeddings model")
        raw = body.get("input")
        texts: list[Any] = [raw] if isinstance(raw, str) else list(as_list(raw) or [])
        if not texts or not all(isinstance(t, str) and t for t in texts):
            raise bad_input("/input: a non-empty string or a list of non-empty strings is required")
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            raise bad_input("/encoding_format: must be 'float' or 'base64'")
        dim = embedding_dim(spec)
        data: list[dict[str, Any]] = []
        for i, text in enumerate(texts):
            vector = embed(str(text), dim)
            value: Any = vector
            if encoding == "base64":
                value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": value})
        tokens = sum(count_tokens(str(t)) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return _plain({"object": "list", "data": data, "model": ref.model_id, "usage": usage})

    def responses(self, body: dict[str, Any], fault_reply: FaultReply) -> Reply:
        ref = resolve(body.get("model"))
        early = self._third_party(ref, fault_reply)
        if early is not None:
            return early
        if ref.provider is None:
            self._spec(ref)
            if ref.model_id not in RESPONSES_MODELS:
                supported = ", ".join(sorted(RESPONSES_MODELS))
                raise bad_input(f"/model: {ref.model_id} does not support the Responses API (only {supported})")
        elif ref.provider != "openai":
            raise bad_input(f"/model: {ref.model_id} does not support the Responses API")
        if body.get("stream") is True:
            raise bad_input("/stream: the Responses API is not streamed on Workers AI")
        if not isinstance(body.get("input"), (str, list)):
            raise bad_input("/input: a string or a list of input items is required")
        return _plain(self.response_object(ref.model_id, body))

    def response_object(self, model_id: str, body: dict[str, Any]) -> dict[str, Any]:
        request = dict(body)
        fmt = as_object((as_object(body.get("text")) or {}).get("format"))
        if fmt is not None and fmt.get("type") in ("json_schema", "json_object"):
            request["response_format"] = {"type": fmt.get("type"), "json_schema": fmt.get("schema")}
        gen, seed = self._generate(request, model_id)
        output: list[dict[str, Any]] = []
        if gen.tool is not None:
            call_args = msgspec.json.encode(gen.tool[1]).decode()
            output.append(
                {
                    "type": "function_call",
                    "id": "fc_" + seed[:24],
                    "call_id": "call_" + seed[:9],
                    "name": gen.tool[0],
                    "arguments": call_args,
                    "status": "completed",
                }
            )
        else:
            text = reply_text(gen)
            content: dict[str, Any] = {"type": "output_text", "text": text, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": "msg_" + seed[:24],
                    "status": "completed",
                    "role": "assistant",
                    "content": [content],
                }
            )
        usage = gen.usage
        return {
            "id": "resp_" + seed[:24],
            "object": "response",
            "created_at": CREATED,
            "status": "incomplete" if gen.truncated else "completed",
            "model": model_id,
            "output": output,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if gen.truncated else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "usage": {
                "input_tokens": usage["prompt_tokens"],
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage["completion_tokens"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage["total_tokens"],
            },
        }

    def messages(self, body: dict[str, Any], fault_reply: FaultReply, stream_fault: FaultFor) -> Reply:
        ref = resolve(body.get("model"))
        early = self._third_party(ref, fault_reply)
        if early is not None:
            return early
        if ref.provider is None:
            self._text_spec(ref)
        if as_list(body.get("messages")) is None:
            raise bad_input("/messages: a list of messages is required")
        tokens = body.get("max_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
            raise bad_input("/max_tokens: a positive integer is required")
        if body.get("stream") is True:
            return self._anthropic_stream(ref.model_id, body)
        return _plain(self.anthropic_message(ref.model_id, body))

    def anthropic_message(self, model_id: str, body: dict[str, Any]) -> dict[str, Any]:
        gen, seed = self._generate(body, model_id)
        content: list[dict[str, Any]] = []
        if gen.tool is not None:
            content.append({"type": "tool_use", "id": "toolu_" + seed[:24], "name": gen.tool[0], "input": gen.tool[1]})
            stop = "tool_use"
        else:
            content.append({"type": "text", "text": gen.text})
            stop = "max_tokens" if gen.truncated else "end_turn"
        return {
            "id": "msg_" + seed[:24],
            "type": "message",
            "role": "assistant",
            "model": model_id,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": gen.usage["prompt_tokens"], "output_tokens": gen.usage["completion_tokens"]},
        }

    def _anthropic_stream(self, model_id: str, body: dict[str, Any]) -> Reply:
        whole = self.anthropic_message(model_id, body)
        start: dict[str, Any] = {
            **whole,
            "content": [],
            "stop_reason": None,
            "usage": {**whole["usage"], "output_tokens": 0},
        }
        events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": start})]
        blocks: list[dict[str, Any]] = whole["content"]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                )
                for piece in str(block["text"]).split(" "):
                    delta = {"type": "text_delta", "text": piece + " "}
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
            else:
                opened: dict[str, Any] = {**block, "input": {}}
                events.append(
                    ("content_block_start", {"type": "content_block_start", "index": i, "content_block": opened})
                )
                delta = {"type": "input_json_delta", "partial_json": msgspec.json.encode(block["input"]).decode()}
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        finish = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
        events.append(
            (
                "message_delta",
                {"type": "message_delta", "delta": finish, "usage": {"output_tokens": whole["usage"]["output_tokens"]}},
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        chunks = [
            f"event: {name}\n".encode() + b"data: " + msgspec.json.encode(data) + b"\n\n" for name, data in events
        ]
        headers = [("content-type", SSE), ("cache-control", "no-cache")]
        return Reply(200, headers, chunks=chunks, chunk_interval=self.settings.stream_interval)

    def third_party_run(self, ref: ModelRef, body: dict[str, Any], stream_fault: FaultFor) -> Reply:
        """The universal route for a third-party model: its provider's shape, inside the envelope."""
        payload = {k: v for k, v in body.items() if k != "model"}
        if ref.shape == "anthropic":
            if body.get("stream") is True:
                return self._anthropic_stream(ref.model_id, body)
            return json_reply(self.anthropic_message(ref.model_id, payload))
        if "messages" not in payload and "input" in payload and ref.provider == "openai":
            return json_reply(self.response_object(ref.model_id, payload))
        if as_list(payload.get("messages")) is None and not isinstance(payload.get("prompt"), str):
            raise bad_input("/messages: a list of messages (or a prompt) is required")
        gen, seed = self._generate(payload, ref.model_id)
        if body.get("stream") is True:
            return sse_reply(
                chat_chunks(ref.model_id, gen, seed, padding=False),
                stream_fault("stream"),
                self.settings.stream_interval,
            )
        return json_reply(chat_completion(ref.model_id, gen, seed))
