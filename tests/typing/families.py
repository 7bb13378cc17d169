# One call per model family, checked by mypy --strict (tests/typing/test_families.py): each result and
# the fields a caller reads have these exact static types, with no narrowing.

from typing_extensions import assert_type

from workers_ai import BinaryOutput, EventStream, WorkersAI
from workers_ai.models.cf.baai.bge_reranker_base import Response as RerankResponse
from workers_ai.models.cf.deepgram.nova_3 import AutomaticSpeechRecognitionOutput, Results
from workers_ai.models.cf.openai.gpt_oss_120b import ChatCompletionOutput as OssChat
from workers_ai.models.cf.facebook.detr_resnet_50 import Box, ObjectDetection
from workers_ai.models.cf.huggingface.distilbert_sst_2_int8 import TextClassification
from workers_ai.models.cf.microsoft.resnet_50 import ImageClassification
from workers_ai.models.cf.myshell_ai.melotts import TextToSpeechOutput

ai = WorkersAI(account_id="a" * 32, api_token="t")

# Text generation, old style (prompt) and chat (messages as dict literals).
old = ai.model("@cf/meta/llama-2-7b-chat-fp16")
assert_type(old.generate(prompt="hi").response, str)
assert_type(old.chat(messages=[{"role": "user", "content": "hi"}]).response, str)
new = ai.model("@cf/meta/llama-3.1-8b-instruct")
assert_type(new.chat(messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]).response, str)
assert_type(new.generate_stream(prompt="hi"), EventStream)
scout = ai.model("@cf/meta/llama-4-scout-17b-16e-instruct")
assert_type(scout.chat(messages=[{"role": "user", "content": "hi"}]).response, str)
oss = ai.model("@cf/openai/gpt-oss-120b")
assert_type(oss.chat(messages=[{"role": "user", "content": "hi"}]), OssChat)  # the documented shape (override)
assert_type(oss.chat(messages=[{"role": "user", "content": "hi"}]).usage.prompt_tokens, int)

# Embeddings.
bge = ai.model("@cf/baai/bge-small-en-v1.5")
emb = bge.embed(text=["a", "b"])
assert_type(emb.data, list[list[float]])
assert_type(emb.shape, list[int])
qwen = ai.model("@cf/qwen/qwen3-embedding-0.6b")
assert_type(qwen.embed(text=["a"]).data, list[list[float]])
gemma = ai.model("@cf/google/embeddinggemma-300m")
assert_type(gemma.embed(text="a").shape, list[int])
m3 = ai.model("@cf/baai/bge-m3")
ranked = m3.rank(query="q", contexts=[{"text": "a"}, {"text": "b"}])
assert_type(ranked.response[0].score, float)
assert_type(ranked.response[0].id, int)

# Reranking.
reranker = ai.model("@cf/baai/bge-reranker-base")
scores = reranker.rank(query="q", contexts=[{"text": "a"}])
assert_type(scores.response, list[RerankResponse])
assert_type(scores.response[0].score, float)

# Speech recognition: raw audio bytes, and Deepgram's nova-3 (raw audio as the body, options as the query).
whisper = ai.model("@cf/openai/whisper")
assert_type(whisper.transcribe(b"RIFF....").text, str)
nova = ai.model("@cf/deepgram/nova-3")
nova_result = nova.transcribe(audio=b"RIFF....", punctuate=True)
assert_type(nova_result, AutomaticSpeechRecognitionOutput)
assert_type(nova_result.results, Results)  # always returned (an override states it)
assert_type(nova_result.text, str)

# Text to speech: JSON (base64 audio) or bytes, and bytes only.
melo = ai.model("@cf/myshell-ai/melotts")
assert_type(melo.speak(prompt="hello"), TextToSpeechOutput | BinaryOutput)
aura = ai.model("@cf/deepgram/aura-1")
assert_type(aura.speak(text="hello"), BinaryOutput)

# Text to image: raw bytes and base64 JSON.
sdxl = ai.model("@cf/stabilityai/stable-diffusion-xl-base-1.0")
assert_type(sdxl.generate_image(prompt="a cat"), BinaryOutput)
flux = ai.model("@cf/black-forest-labs/flux-1-schnell")
assert_type(flux.generate_image(prompt="a cat").image, str)

# Translation, summarization, classification, object detection.
m2m = ai.model("@cf/meta/m2m100-1.2b")
assert_type(m2m.translate(text="hello", target_lang="fr").translated_text, str)
bart = ai.model("@cf/facebook/bart-large-cnn")
assert_type(bart.summarize(input_text="a long text").summary, str)
sst = ai.model("@cf/huggingface/distilbert-sst-2-int8")
assert_type(sst.classify(text="great"), list[TextClassification])
assert_type(sst.classify(text="great")[0].score, float)
resnet = ai.model("@cf/microsoft/resnet-50")
assert_type(resnet.classify(b"\x89PNG"), list[ImageClassification])
detr = ai.model("@cf/facebook/detr-resnet-50")
found = detr.detect(b"\x89PNG")
assert_type(found, list[ObjectDetection])
assert_type(found[0].box, Box)
assert_type(found[0].box.xmin, float)  # box coordinates always returned (an override states it)
assert_type(found[0].label, str)
