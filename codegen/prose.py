"""Our own words for schema files: model and task descriptions, a small glossary of common fields,
and the merge that keeps the prose already written in ``schemas/``.

Nothing here is taken from the published catalog: published descriptions and titles are dropped by
``normalise.strip_prose``; these phrasings are the project's. Where nothing here fits, a field simply
has no description.
"""

from __future__ import annotations

from typing import Any

from .schema_walk import LIST_KEYS, MAP_KEYS, SUB_KEYS, as_list, as_map, branches

__all__ = ["INPUT_GLOSSARY", "OUTPUT_GLOSSARY", "TASKS", "add_prose", "merge", "model_description", "pair_variants"]

TASKS: dict[str, str] = {
    "Text Generation": "Language models that write text in reply to a prompt or a chat conversation.",
    "Text Embeddings": (
        "Turns text into numeric vectors for semantic search, clustering and retrieval-augmented generation."
    ),
    "Text Classification": "Gives a piece of text labels or relevance scores.",
    "Text-to-Image": "Creates pictures from a text description.",
    "Image-to-Text": "Produces text, such as a caption or an answer to a question, from an image.",
    "Text-to-Speech": "Turns written text into spoken audio.",
    "Automatic Speech Recognition": "Turns spoken audio into text.",
    "Translation": "Rewrites text in a different language.",
    "Summarization": "Condenses a long text into a shorter one that keeps the main points.",
    "Image Classification": "Assigns class labels to an image.",
    "Object Detection": "Finds objects in an image and returns a label, a score and a bounding box for each.",
    "Voice Activity Detection": "Analyses audio to tell whether, and when, someone is speaking.",
}

_NOUNS: dict[str, str] = {
    "Text Generation": "text generation model",
    "Text Embeddings": "text embedding model",
    "Text Classification": "text classification model",
    "Text-to-Image": "image generation model",
    "Image-to-Text": "image understanding model",
    "Text-to-Speech": "speech synthesis model",
    "Automatic Speech Recognition": "speech recognition model",
    "Translation": "translation model",
    "Summarization": "summarization model",
    "Image Classification": "image classification model",
    "Object Detection": "object detection model",
    "Voice Activity Detection": "turn detection model",
}

_AUTHORS: dict[str, str] = {
    "meta": "Meta",
    "meta-llama": "Meta",
    "baai": "BAAI",
    "google": "Google",
    "mistral": "Mistral AI",
    "mistralai": "Mistral AI",
    "qwen": "Qwen",
    "openai": "OpenAI",
    "deepseek-ai": "DeepSeek",
    "deepgram": "Deepgram",
    "black-forest-labs": "Black Forest Labs",
    "stabilityai": "Stability AI",
    "microsoft": "Microsoft",
    "facebook": "Meta (Facebook AI)",
    "huggingface": "Hugging Face",
    "cloudflare": "Cloudflare",
    "leonardo": "Leonardo.Ai",
    "runwayml": "Runway",
    "bytedance": "ByteDance",
    "lykon": "Lykon",
    "nvidia": "NVIDIA",
    "moonshotai": "Moonshot AI",
    "zai-org": "Z.ai",
    "thebloke": "TheBloke (a quantized community build)",
    "nousresearch": "Nous Research",
    "myshell-ai": "MyShell",
    "pipecat-ai": "Pipecat",
    "ai4bharat": "AI4Bharat",
    "aisingapore": "AI Singapore",
    "pfnet": "Preferred Networks",
    "unum": "Unum",
    "tiiuae": "TII",
    "nexusflow": "Nexusflow",
    "tinyllama": "the TinyLlama project",
    "defog": "Defog",
    "fblgit": "fblgit",
    "openchat": "OpenChat",
    "moondream": "Moondream",
    "llava-hf": "the LLaVA project",
}

# Field name -> our description, for properties of a variant (the top level of an input or output
# variant, or of a batch's request items). A "Task:name" key wins over the plain name.
INPUT_GLOSSARY: dict[str, str] = {
    "prompt": "Text for the model to continue or answer.",
    "messages": "The conversation so far, oldest message first.",
    "max_tokens": "Stop after producing at most this many tokens.",
    "temperature": "Sampling temperature; higher values give more varied output.",
    "top_p": "Nucleus sampling: only the likeliest tokens, up to this total probability.",
    "top_k": "Only the k most likely next tokens are considered at each step.",
    "seed": "Fixed random seed, so that the same request gives the same output.",
    "stream": "Send the output back piece by piece as server-sent events.",
    "tools": "Functions the model is allowed to invoke while answering.",
    "functions": "Functions the model may call (legacy form of tools).",
    "response_format": "Ask for JSON output, optionally shaped by a JSON schema.",
    "frequency_penalty": "Lowers a token's chance by how often it has already appeared.",
    "presence_penalty": "Lowers the chance of tokens already used, nudging toward new topics.",
    "repetition_penalty": "Penalty on tokens that were already produced; larger values mean less repetition.",
    "raw": "Send the prompt exactly as given, without the model's chat template.",
    "lora": "Name of a LoRA adapter to apply on top of the base model.",
    "requests": "Requests to queue together as one async batch.",
    "Text-to-Image:prompt": "Description of the picture to create.",
    "Text-to-Image:negative_prompt": "Things the picture should not contain.",
    "Text-to-Image:seed": "Random seed, for repeatable pictures.",
    "Text-to-Image:height": "Height of the picture, in pixels.",
    "Text-to-Image:width": "Width of the picture, in pixels.",
    "Text-to-Image:guidance": "How strictly the picture follows the prompt; higher is stricter.",
    "Text-to-Image:num_steps": "Number of denoising steps; more can look better but take longer.",
    "Text-to-Image:steps": "Number of denoising steps; more can look better but take longer.",
    "Image-to-Text:prompt": "Question or instruction about the image.",
}
OUTPUT_GLOSSARY: dict[str, str] = {
    "usage": "Token counts for this request.",
    "tool_calls": "Tool calls the model wants the caller to run.",
    "request_id": "Identifier of the queued job; send it back to fetch the results.",
    "Text-to-Image:image": "The generated picture, base64-encoded.",
    "Image-to-Text:description": "Text the model produced about the image.",
    "Text Generation:response": "Text produced by the model.",
    "Text Embeddings:data": "One vector per input text, in input order.",
    "Text Embeddings:shape": "Size of the result as [number of vectors, vector length].",
    "Text Embeddings:pooling": "How token vectors are pooled into one vector per text.",
    "Automatic Speech Recognition:text": "The full transcript.",
    "Translation:translated_text": "The translation.",
    "Summarization:summary": "The summary.",
    "Text-to-Speech:audio": "The spoken audio, base64-encoded.",
}


# A few models whose family the generic sentence would hide (our words; what the model is for).
MODEL_SENTENCES: dict[str, str] = {
    "@cf/meta/llama-guard-3-8b": "Meta's Llama Guard 3 (8B): classifies prompts and replies as safe or unsafe.",
    "@hf/thebloke/llamaguard-7b-awq": "Llama Guard (7B, AWQ-quantized): rates prompts and replies as safe or unsafe.",
    "@cf/defog/sqlcoder-7b-2": "Defog's SQLCoder (7B): writes SQL queries from questions in plain language.",
    "@hf/thebloke/deepseek-coder-6.7b-base-awq": "DeepSeek Coder base model (6.7B, AWQ-quantized) for completing code.",
    "@hf/thebloke/deepseek-coder-6.7b-instruct-awq": "DeepSeek Coder (6.7B, AWQ-quantized), tuned to write code.",
    "@cf/qwen/qwen2.5-coder-32b-instruct": "Qwen2.5 Coder (32B), tuned to write and explain code.",
    "@cf/deepseek-ai/deepseek-math-7b-instruct": "DeepSeek Math (7B), tuned for mathematical reasoning.",
    "@cf/openai/whisper-tiny-en": "The smallest English-only Whisper model: fast speech recognition for English audio.",
    "@cf/ai4bharat/indictrans2-en-indic-1B": "IndicTrans2 (1B): translates English into the languages of India.",
    "@cf/deepgram/aura-2-en": "Deepgram's Aura 2 text-to-speech model for English.",
    "@cf/deepgram/aura-2-es": "Deepgram's Aura 2 text-to-speech model for Spanish.",
    "@cf/deepgram/nova-3": "Deepgram's Nova 3 speech recognition model, with options for formatting and diarization.",
    "@cf/deepgram/flux": "Deepgram's Flux: speech recognition for conversations that detects when a turn ends.",
    "@cf/google/embeddinggemma-300m": "Google's EmbeddingGemma (300M), a small multilingual embedding model.",
    "@cf/qwen/qwen3-embedding-0.6b": "Qwen3 Embedding (0.6B): embeds documents and queries for retrieval.",
    "@cf/pfnet/plamo-embedding-1b": "PLaMo Embedding (1B), a Japanese text embedding model.",
    "@cf/meta/llama-3.2-11b-vision-instruct": "Meta's Llama 3.2 (11B) vision model: answers questions about images.",
    "@cf/openai/gpt-oss-120b": "OpenAI's open-weight gpt-oss (120B), with reasoning and tool calling.",
    "@cf/openai/gpt-oss-20b": "OpenAI's open-weight gpt-oss (20B), with reasoning and tool calling.",
}


def _article(number: str) -> str:
    """ "a" or "an" before a number as it is read out (8, 11, 18, 80, 800... start with a vowel sound)."""
    digits = number.replace(",", "")
    lead = digits[:2] if len(digits) % 3 == 2 else digits[:1] if len(digits) % 3 == 1 else digits[:3]
    return "an" if lead.startswith("8") or lead in ("11", "18") else "a"


def model_description(model_id: str, task: str, properties: dict[str, Any]) -> str:
    """One sentence describing a model from facts only: task, author and listed capabilities."""
    if model_id in MODEL_SENTENCES:
        return MODEL_SENTENCES[model_id]
    parts = model_id.split("/")
    author = parts[1] if len(parts) > 2 else ""
    noun = _NOUNS.get(task, f"{task.lower()} model" if task else "model")
    if str(properties.get("beta", "")).lower() == "true":
        noun = f"beta {noun}"
    if author.lower() == "thebloke":
        head = f"{noun[0].upper()}{noun[1:]}, a quantized community build published by TheBloke"
    else:
        who = _AUTHORS.get(author.lower(), author)
        head = f"{noun[0].upper()}{noun[1:]}" + (f" from {who}" if who else "")
    features: list[str] = []
    window = properties.get("context_window")
    if isinstance(window, str) and window.isdigit():
        shown = f"{int(window):,}"
        features.append(f"{_article(shown)} {shown}-token context window")
    dims = properties.get("output_dimensions")
    if isinstance(dims, str) and dims.isdigit():
        features.append(f"{dims}-dimensional vectors")
    longest = properties.get("max_input_tokens")
    if isinstance(longest, str) and longest.isdigit():
        features.append(f"inputs of up to {longest} tokens")
    for key, phrase in (
        ("function_calling", "tool calling"),
        ("reasoning", "reasoning"),
        ("vision", "image input"),
        ("lora", "LoRA adapters"),
        ("async_queue", "async batches"),
    ):
        if str(properties.get(key, "")).lower() == "true" and not (key == "vision" and task == "Image-to-Text"):
            features.append(phrase)
    text = head
    if features:
        text += ", with " + (", ".join(features[:-1]) + " and " + features[-1] if len(features) > 1 else features[0])
    sunset = properties.get("planned_deprecation_date")
    if isinstance(sunset, str) and sunset:
        text += f"; scheduled to be retired on {sunset}"
    return text + "."


# ------------------------------------------------------------------------------------ field prose


def _describe(task: str, node: dict[str, Any], glossary: dict[str, str]) -> None:
    for name, sub in (as_map(node.get("properties")) or {}).items():
        obj = as_map(sub)
        phrase = glossary.get(f"{task}:{name}") or glossary.get(name)
        if obj is not None and phrase is not None and "description" not in obj:
            _place_description(obj, phrase)


def _variant_level(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects whose properties the glossary describes: variants and batch request items."""
    out: list[dict[str, Any]] = []
    kind, items = branches(schema)
    for branch in items:
        nested, _ = branches(branch)
        if nested is not None and not as_map(branch.get("properties")):
            out.extend(_variant_level(branch))
            continue
        out.append(branch)
        requests = as_map((as_map(branch.get("properties")) or {}).get("requests"))
        item = as_map(requests.get("items")) if requests is not None else None
        if item is not None:
            out.extend(_variant_level(item))
    if kind is not None and as_map(schema.get("properties")):
        out.append(schema)
    return out


def add_prose(task: str, schema: dict[str, Any]) -> None:
    """Give the variant-level fields of ``{input, output}`` our glossary descriptions (in place)."""
    for half in ("input", "output"):
        root = as_map(schema.get(half))
        if root is not None:
            glossary = INPUT_GLOSSARY if half == "input" else OUTPUT_GLOSSARY
            for node in _variant_level(root):
                _describe(task, node, glossary)


def _place_description(node: dict[str, Any], text: str) -> None:
    """Put ``description`` after ``title``/``type`` (where the existing files have it)."""
    items = list(node.items())
    at = 0
    for i, (key, _) in enumerate(items):
        if key in ("title", "type"):
            at = i + 1
    items.insert(at, ("description", text))
    node.clear()
    node.update(items)


# ---------------------------------------------------------------------------------------- merging

_PROSE = ("title", "description")


def _signature(node: dict[str, Any]) -> tuple[Any, ...]:
    props = as_map(node.get("properties")) or {}
    items = as_map(node.get("items")) or {}
    return (node.get("type"), node.get("contentType"), node.get("format"), tuple(sorted(props)), items.get("type"))


def pair_variants(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """For each new branch, the old branch that is the same variant (or None)."""
    used: set[int] = set()
    out: list[dict[str, Any] | None] = [None] * len(new)
    for i, branch in enumerate(new):
        for j, cand in enumerate(old):
            if j not in used and _signature(cand) == _signature(branch):
                out[i] = cand
                used.add(j)
                break
    for i, branch in enumerate(new):
        if out[i] is not None:
            continue
        names = set(as_map(branch.get("properties")) or {})
        best, score = -1, 0.5
        for j, cand in enumerate(old):
            if j in used or cand.get("type") != branch.get("type"):
                continue
            other = set(as_map(cand.get("properties")) or {})
            if names or other:
                overlap = len(names & other) / len(names | other)
                if overlap > score:
                    best, score = j, overlap
        if best >= 0:
            out[i] = old[best]
            used.add(best)
    if len(new) == len(old):
        for i, branch in enumerate(new):
            if out[i] is None and i not in used and old[i].get("type") == branch.get("type"):
                out[i] = old[i]
                used.add(i)
    return out


def merge(new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """``new`` with the prose of ``old`` wherever ``old`` holds the same node.

    A node ``old`` also has keeps exactly ``old``'s title and description (including their absence);
    nodes only ``new`` has keep the prose the rules gave them. Keys keep ``old``'s order, new keys follow.
    """
    if old is None:
        return new
    out: dict[str, Any] = {}
    for key, value in new.items():
        if key in _PROSE:
            continue
        sub_old = old.get(key)
        if key in MAP_KEYS and as_map(value) is not None:
            old_map = as_map(sub_old) or {}
            out[key] = {
                name: merge(s, as_map(old_map.get(name))) if as_map(s) is not None else s
                for name, s in (as_map(value) or {}).items()
            }
        elif (key in LIST_KEYS or key in SUB_KEYS) and as_list(value) is not None:
            new_items = [as_map(v) for v in as_list(value) or []]
            old_items = [x for x in (as_map(v) for v in as_list(sub_old) or []) if x is not None]
            pairs = pair_variants([x for x in new_items if x is not None], old_items)
            merged: list[Any] = []
            k = 0
            for raw, item in zip(as_list(value) or [], new_items, strict=True):
                if item is None:
                    merged.append(raw)
                else:
                    merged.append(merge(item, pairs[k]))
                    k += 1
            out[key] = merged
        elif key in SUB_KEYS and as_map(value) is not None:
            out[key] = merge(as_map(value) or {}, as_map(sub_old))
        else:
            out[key] = value
    for key in _PROSE:
        if key in old:
            out[key] = old[key]
    order = [k for k in old if k in out] + [k for k in out if k not in old]
    return {k: out[k] for k in order}
