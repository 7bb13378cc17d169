# A user file per family, written against the family views (no narrowing, no casts): checked by mypy
# --strict and pyright strict and run on the emulator (tests/typing/test_family_views.py).
from pathlib import Path
from typing import Any

from typing_extensions import assert_type

from workers_ai import (
    EmbeddingResult,
    MediaResult,
    TextResult,
    ToolCall,
    TranscriptResult,
    WorkersAI,
)


def answer(r: TextResult) -> dict[str, Any]:
    """One function for any text model's reply, classic, chat completion or Responses API."""
    assert_type(r.text, str)
    assert_type(r.tool_calls, list[ToolCall])
    assert_type(r.usage.prompt_tokens, int)
    return {
        "text": r.text.upper(),
        "tokens": r.usage.prompt_tokens + r.usage.completion_tokens,
        "total": r.usage.total_tokens,
        "calls": [(c.name, c.arguments) for c in r.tool_calls],
        "finish": r.finish_reason,
        "reasoning": r.reasoning,
    }


def dims(e: EmbeddingResult) -> int:
    assert_type(e.vectors, list[list[float]])
    return e.dimensions if e.vectors[0][0] == e.vectors[0][0] else 0


def transcript(t: TranscriptResult) -> str:
    return t.text


def keep(m: MediaResult, path: Path) -> int:
    m.save(path)
    assert_type(m.data, bytes)
    return len(m.data) if m.content_type else 0


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"sunny in {city}"


def main(ai: WorkersAI, folder: Path) -> dict[str, Any]:
    messages: list[Any] = [{"role": "user", "content": "Say hello."}]
    replies = [
        answer(ai.model("@cf/meta/llama-3.1-8b-instruct").chat(messages=messages)),  # classic, no usage published
        answer(ai.model("@cf/meta/llama-3-8b-instruct").generate(prompt="hi")),
        answer(ai.model("@cf/qwen/qwen3-30b-a3b-fp8").chat(messages=messages)),  # chat completion
        answer(ai.model("@cf/openai/gpt-oss-120b").chat(messages=messages)),
        answer(ai.model("@cf/openai/gpt-oss-20b").responses(input="hi")),  # Responses API
        answer(ai.model("@hf/mistral/mistral-7b-instruct-v0.2").chat(messages=messages)),
    ]
    tools = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast").chat(
        messages=[{"role": "user", "content": "Use get_weather for Paris."}], tools=[get_weather]
    )
    city = tools.tool_calls[0].arguments["city"]
    # The older DESIGN.md snippets still read the wire struct directly.
    old = ai.model("@cf/meta/llama-3-8b-instruct").chat(messages=messages).response.upper()
    bge = ai.model("@cf/baai/bge-m3")
    out = bge.embed(text=["a", "b"])
    first: float = out.data[0][0]
    scores = bge.rank(query="q", contexts=[{"text": "a"}])
    best: float = scores.response[0].score
    streamed = ""
    with ai.model("@cf/qwen/qwen1.5-7b-chat-awq").chat_stream(messages=messages) as events:
        for event in events:
            streamed += event.text
    return {
        "replies": replies,
        "city": city,
        "old": old,
        "first": first,
        "best": best,
        "streamed": streamed,
        "dims": [dims(out), dims(ai.model("@cf/baai/bge-small-en-v1.5").embed(text=["a"]))],
        "transcripts": [
            transcript(ai.model("@cf/openai/whisper").transcribe(b"RIFF\x00\x00\x00\x00WAVEfmt ")),
            transcript(ai.model("@cf/openai/whisper-large-v3-turbo").transcribe(audio="UklGRg==")),
            transcript(ai.model("@cf/deepgram/nova-3").transcribe(audio=b"RIFF....", punctuate=True)),
        ],
        "media": [
            keep(ai.model("@cf/black-forest-labs/flux-1-schnell").generate_image(prompt="a cat"), folder / "a.jpg"),
            keep(ai.model("@cf/stabilityai/stable-diffusion-xl-base-1.0").generate_image(prompt="a cat"), folder / "b"),
            keep(ai.model("@cf/deepgram/aura-1").speak(text="hello"), folder / "c.mp3"),
            keep(ai.model("@cf/myshell-ai/melotts").speak(prompt="hello"), folder / "d.mp3"),
        ],
    }
