# A user file per family, written against the family views (no narrowing, no casts): checked by mypy
# --strict and pyright strict and run on the emulator (tests/typing/test_family_views.py).
from pathlib import Path
from typing import Any

from typing_extensions import assert_type

from workers_ai import (
    ClassificationResult,
    DetectionResult,
    EmbeddingResult,
    ImageTextResult,
    MediaResult,
    Ranked,
    RerankResult,
    SummaryResult,
    TextResult,
    TimedText,
    TimedWord,
    ToolCall,
    ToolCallDelta,
    TranscriptResult,
    TranslationResult,
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
    assert_type(t.words, list[TimedWord])
    assert_type(t.segments, list[TimedText])
    timed = " ".join(f"{w.word}@{w.start:.2f}-{w.end:.2f}" for w in t.words)
    return t.text if not timed else f"{t.text} [{timed}] {len(t.segments)}"


def top_class(c: ClassificationResult) -> tuple[str, float]:
    """One function for any classifier (text or image)."""
    assert_type(c.label, str)
    assert_type(c.score, float)
    return c.label, max(k.score for k in c.classes)


def objects(d: DetectionResult) -> list[tuple[str, float]]:
    return [(o.label, (o.box.xmax - o.box.xmin) * (o.box.ymax - o.box.ymin)) for o in d.objects]


def order(r: RerankResult) -> list[int]:
    assert_type(r.ranking, list[Ranked])
    assert_type(r.best, int)
    return [x.index for x in r.ranking]


def said(t: TranslationResult | SummaryResult | ImageTextResult) -> str:
    assert_type(t.text, str)
    return t.text


def keep(m: MediaResult, path: Path) -> int:
    m.save(path)
    assert_type(m.data, bytes)
    return len(m.data) if m.content_type else 0


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"sunny in {city}"


def main(ai: WorkersAI, folder: Path) -> dict[str, Any]:
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    (folder / "in.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + bytes(64))
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
            assert_type(event.tool_calls, tuple[ToolCallDelta, ...])
            streamed += event.text + "".join(c.name for c in event.tool_calls)
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
            transcript(ai.model("@cf/openai/whisper-tiny-en").transcribe(folder / "in.wav")),
            transcript(ai.model("@cf/openai/whisper-large-v3-turbo").transcribe(b"RIFF\x00\x00\x00\x00WAVEfmt ")),
            transcript(ai.model("@cf/deepgram/nova-3").transcribe(b"RIFF....", punctuate=True)),
        ],
        "media": [
            keep(ai.model("@cf/black-forest-labs/flux-1-schnell").generate_image(prompt="a cat"), folder / "a.jpg"),
            keep(ai.model("@cf/stabilityai/stable-diffusion-xl-base-1.0").generate_image(prompt="a cat"), folder / "b"),
            keep(ai.model("@cf/deepgram/aura-1").speak(text="hello"), folder / "c.mp3"),
            keep(ai.model("@cf/myshell-ai/melotts").speak(text="hello"), folder / "d.mp3"),
        ],
        "classes": [
            top_class(ai.model("@cf/huggingface/distilbert-sst-2-int8").classify(text="What a day")),
            top_class(ai.model("@cf/microsoft/resnet-50").classify(png)),
        ],
        "objects": objects(ai.model("@cf/facebook/detr-resnet-50").detect(png)),
        "order": order(ai.model("@cf/baai/bge-reranker-base").rank(query="q", contexts=[{"text": "a"}, {"text": "b"}])),
        "texts": [
            said(ai.model("@cf/meta/m2m100-1.2b").translate(text="hello", target_lang="fr")),
            said(ai.model("@cf/ai4bharat/indictrans2-en-indic-1B").translate(text="hello", target_language="hin_Deva")),
            said(ai.model("@cf/facebook/bart-large-cnn").summarize(input_text="A long story. " * 10)),
            said(ai.model("@cf/llava-hf/llava-1.5-7b-hf").describe(png)),
            said(ai.model("@cf/unum/uform-gen2-qwen-500m").describe(png)),
        ],
    }
