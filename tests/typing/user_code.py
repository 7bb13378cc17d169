# A small user program: every reveal_type below is checked by tests/typing/test_revealed_types.py.
from typing import Any

from workers_ai import BatchJob, EventStream, WorkersAI
from workers_ai.models.cf.baai.bge_m3 import BgeM3Output, Context, EmbeddingInput, QueryAndContextsInput

ai = WorkersAI(account_id="a" * 32, api_token="t")
bge = ai.model("@cf/baai/bge-m3")
reveal_type(bge)  # E: BgeM3
out = bge.embed(text=["a"])
reveal_type(out)  # E: EmbeddingOutput
reveal_type(out.data)  # E: list[list[float]]
scores = bge.rank(query="q", contexts=[Context(text="c")])
reveal_type(scores)  # E: QueryOutput
job = bge.batch([{"text": "a"}, EmbeddingInput(text="b")])
reveal_type(job)  # E: BatchJob[EmbeddingOutput]
reveal_type(job.wait().items[0].output)  # E: EmbeddingOutput
ranks = bge.batch([{"query": "q", "contexts": [{"text": "c"}]}])
reveal_type(ranks)  # E: BatchJob[QueryOutput]
mixed = bge.batch([EmbeddingInput(text="a"), QueryAndContextsInput(query="q", contexts=[Context(text="c")])])
reveal_type(mixed)  # E: BatchJob[QueryOutput | EmbeddingForContextsOutput | EmbeddingOutput]
reveal_type(mixed.wait().items[0].result)  # E: QueryOutput | EmbeddingForContextsOutput | EmbeddingOutput | None
llama = ai.model("@cf/meta/llama-3-8b-instruct")
reveal_type(llama.generate(prompt="hi"))  # E: TextGenerationOutput
reveal_type(llama.generate_stream(prompt="hi"))  # E: EventStream
generic: BgeM3Output = ai.run("@cf/baai/bge-m3", {"text": "a"})
reveal_type(ai.run("@cf/baai/bge-m3", {"text": "a"}))  # E: QueryOutput | EmbeddingForContextsOutput | EmbeddingOutput | AsyncResponse
reveal_type(ai.run("@cf/baai/bge-m3", {"text": "a"}, stream=True))  # E: EventStream
reveal_type(ai.run("@cf/baai/bge-m3", {"requests": []}, queue_request=True))  # E: BatchJob[Any]
reveal_type(ai.run("@cf/unknown/model", {}))  # E: Any
flag = bool(out.shape)
reveal_type(ai.run("@cf/baai/bge-m3", {"text": "a"}, stream=False, headers={"a": "b"}, session_affinity="s"))  # E: QueryOutput | EmbeddingForContextsOutput | EmbeddingOutput | AsyncResponse
reveal_type(ai.run("@cf/baai/bge-m3", {"text": "a"}, stream=True, headers=None, session_affinity="s"))  # E: EventStream
reveal_type(ai.run("@cf/baai/bge-m3", {"text": "a"}, stream=flag))  # E: Any
sdxl = ai.model("@cf/stabilityai/stable-diffusion-xl-base-1.0")
reveal_type(sdxl.generate_image(prompt="cat"))  # E: BinaryOutput
stream: EventStream = llama.chat_stream(messages=[])
jobs: BatchJob[Any] = job
any_output: BatchJob[BgeM3Output] = job  # a job is covariant in its output type
vectors: list[list[float]] = bge.embed_many(["a"])
reveal_type(llama.generate_stream(prompt="hi").collect().tool_calls)  # E: list[ToolCall]
many = bge.batch_many([{"text": "a"}, EmbeddingInput(text="b")], journal="j.jsonl", timeout=60.0)
reveal_type(many)  # E: list[BatchItem[EmbeddingOutput]]
reveal_type(many[0].output)  # E: EmbeddingOutput
reveal_type(bge.batch_many([{"query": "q", "contexts": [{"text": "c"}]}]))  # E: list[BatchItem[QueryOutput]]
fast = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")
reveal_type(fast.batch_many([{"prompt": "a"}], batch_size=100)[0].result)  # E: TextGenerationOutput | None
