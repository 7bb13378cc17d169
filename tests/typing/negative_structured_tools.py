# Each line marked with an "error" comment must be reported by mypy --strict (tests/typing/test_structured_tools.py).
import msgspec

from workers_ai import WorkersAI


class Weather(msgspec.Struct):
    city: str


def get_weather(city: str) -> str:
    return city


ai = WorkersAI(account_id="a" * 32, api_token="t")
llama = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")
bge = ai.model("@cf/baai/bge-m3")
m3 = ai.model("@cf/meta/llama-3-8b-instruct")
reply = llama.chat(messages=[{"role": "user", "content": "hi"}], response_format=Weather)
reply.parsed.town  # error: Weather has no such attribute
bge.embed(text="a", response_format=Weather)  # error: a model without JSON mode takes no response_format
m3.chat(messages=[{"role": "user", "content": "hi"}], response_format=Weather)  # error: no JSON mode on this model
llama.chat_stream(messages=[{"role": "user", "content": "hi"}], response_format=Weather)  # error: JSON mode does not stream
llama.chat(messages=[{"role": "user", "content": "hi"}], tools=[42])  # error: not a tool
llama.chat(messages=[{"role": "user", "content": "hi"}], tools=["get_weather"])  # error: a name is not a tool
llama.run_tools(messages=[{"role": "user", "content": "hi"}], tools=[{"name": "x"}])  # error: run_tools needs functions
bge.run_tools(messages=[], tools=[get_weather])  # error: embedding models have no run_tools
llama.chat(messages=[{"role": "user", "content": "hi"}], tools=[get_weather])  # a function: no error here
