# Each line marked with an "error" comment must be reported by mypy --strict (tests/typing/test_families.py).
from workers_ai import WorkersAI

ai = WorkersAI(account_id="a" * 32, api_token="t")
llama = ai.model("@cf/meta/llama-3-8b-instruct")
llama.chat(messages=[{"role": "user", "contnet": "hi"}])  # error: misspelled key
llama.chat(messages=[{"role": "user", "content": 42}])  # error: wrong value type
llama.chat(messages=[{"role": "user"}])  # error: missing required key
bge = ai.model("@cf/baai/bge-m3")
bge.rank(query="q", contexts=[{"txt": "a"}])  # error: misspelled key
bge.rank(query="q", contexts=[{"text": 1.5}])  # error: wrong value type
bge.batch([{"text": "a", "truncate_inputs": "yes"}])  # error: wrong value type in a batch item
bge.embed(text="a", truncate_input=True)  # error: misspelled keyword argument (a key of EmbeddingInputDict)
bge.embed(truncate_inputs=True)  # error: missing required keyword argument
llama.chat(messages=[{"role": "user", "content": "hi"}], max_tokens="8")  # error: wrong keyword value type
llama.chat(messages=[{"role": "user", "content": "hi"}], stream=True)  # error: chat_stream() streams, chat() does not
llama.chat(messages=[{"role": "user", "content": "fine"}])  # a correct literal: no error here
ai.run("@cf/baai/bge-m3", {"text": "a"}, strem=True)  # error: misspelled run() option
ai.run("@cf/baai/bge-m3", {"text": "a"}, headers={"a": 1})  # error: header values are strings
ai.run("@cf/baai/bge-m3", {"text": "a"}, session_affinity="s", stream=False)  # a correct call: no error here
