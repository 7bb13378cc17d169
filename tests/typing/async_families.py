# The async client as a user sees it, checked by mypy --strict and pyright strict
# (tests/typing/test_families.py): the same typed handles as the sync client, awaited.
import asyncio
from typing import Any

from typing_extensions import assert_type

from workers_ai import AsyncBatchJob, AsyncEventStream, BatchItem, AsyncStreamRequest, AsyncWorkersAI, BatchResult, StreamEvent
from workers_ai.models.cf.baai.bge_m3 import (
    AsyncBgeM3,
    BgeM3Output,
    EmbeddingForContextsOutput,
    EmbeddingInput,
    EmbeddingOutput,
    QueryAndContextsInput,
    QueryOutput,
)
from workers_ai.models.cf.meta.llama_3_8b_instruct import AsyncLlama3_8bInstruct, TextGenerationOutput


async def main() -> None:
    async with AsyncWorkersAI(account_id="a" * 32, api_token="t") as ai:
        m3 = ai.model("@cf/baai/bge-m3")
        assert_type(m3, AsyncBgeM3)
        emb = await m3.embed(text=["a", "b"])
        assert_type(emb, EmbeddingOutput)
        assert_type(emb.data, list[list[float]])
        ranked = await m3.rank(query="q", contexts=[{"text": "a"}])
        assert_type(ranked, QueryOutput)
        assert_type(ranked.response[0].score, float)
        assert_type(ranked.best, int)  # bge-m3's rank() has the reranking view
        assert_type(ranked.ranking[0].score, float)
        job = await m3.batch([{"text": ["a"]}, {"text": ["b"]}])
        assert_type(job, AsyncBatchJob[EmbeddingOutput])
        done = await job.wait(timeout=60)
        assert_type(done, BatchResult[EmbeddingOutput])
        assert_type(done.items[0].output.vectors, list[list[float]])
        mixed = await m3.batch([EmbeddingInput(text=["a"]), QueryAndContextsInput(query="q", contexts=[])])
        assert_type(mixed, AsyncBatchJob[QueryOutput | EmbeddingForContextsOutput | EmbeddingOutput])
        many = await m3.batch_many([{"text": ["a"]}, EmbeddingInput(text=["b"])], journal="j.jsonl")
        assert_type(many, list[BatchItem[EmbeddingOutput]])
        assert_type(many[0].output.vectors, list[list[float]])
        vectors = await m3.embed_many(["a", "b"])
        assert_type(vectors, list[list[float]])

        llama = ai.model("@cf/meta/llama-3-8b-instruct")
        assert_type(llama, AsyncLlama3_8bInstruct)
        assert_type(await llama.generate(prompt="hi"), TextGenerationOutput)
        assert_type(llama.chat_stream(messages=[{"role": "user", "content": "hi"}]), AsyncStreamRequest)
        joined = await llama.chat_stream(messages=[{"role": "user", "content": "hi"}]).collect()
        assert_type(joined.text, str)
        assert_type(await llama.generate_stream(prompt="hi").text(), str)
        async with llama.chat_stream(messages=[{"role": "user", "content": "hi"}]) as events:
            assert_type(events, AsyncEventStream)
            async for event in events:
                assert_type(event, StreamEvent)
                assert_type(event.text, str)
        stream = await llama.generate_stream(prompt="hi")
        assert_type((await stream.collect()).text, str)

        assert_type(await ai.run("@cf/baai/bge-m3", {"text": "a"}), BgeM3Output)
        assert_type(await ai.run("@cf/baai/bge-m3", {"text": "a"}, stream=False, session_affinity="s"), BgeM3Output)
        assert_type(ai.run("@cf/meta/llama-3-8b-instruct", {"prompt": "x"}, stream=True), AsyncStreamRequest)
        assert_type(await ai.run("@cf/baai/bge-m3", {"requests": []}, queue_request=True), AsyncBatchJob[Any])
        assert_type(await ai.run("@cf/unknown/model", {}), Any)


asyncio.run(main())
