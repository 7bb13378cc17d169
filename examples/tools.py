"""Tool calling: describe Python functions to a model, let it call them, and get its final answer.

Runs against the real API when CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN are set, and against the
local emulator otherwise (``python examples/tools.py`` needs no account).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from contextlib import contextmanager
from typing import Literal

from workers_ai import WorkersAI, errors, tool_calls


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: The city's name, e.g. "Lisbon".
        unit: Temperature unit.
    """
    return {"city": city, "temperature": 21 if unit == "celsius" else 70, "unit": unit}


def local_time(city: str) -> str:
    """The local time in a city, as HH:MM."""
    return "14:05"


@contextmanager
def connect() -> Generator[WorkersAI, None, None]:
    if os.environ.get("CLOUDFLARE_ACCOUNT_ID") and os.environ.get("CLOUDFLARE_API_TOKEN"):
        with WorkersAI() as ai:
            yield ai
        return
    from workers_ai.testing import Emulator

    with Emulator() as emu:
        print(f"No credentials set: using the local emulator at {emu.url}\n")
        with emu.client() as ai:
            yield ai


def main() -> None:
    with connect() as ai:
        question = "What's the weather in Lisbon?"
        llama = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")  # classic replies: {name, arguments}
        gpt = ai.model("@cf/openai/gpt-oss-20b")  # OpenAI-shaped replies: {id, function: {name, arguments}}

        # One call: the model answers with the calls it wants made; either reply shape gives ToolCall.
        first = llama.chat(
            messages=[{"role": "user", "content": "Weather in Lisbon?"}], tools=[get_weather, local_time]
        )
        for call in tool_calls(first):
            print(f"llama wants {call.name}({call.arguments})")

        # The whole loop: call, run the functions, send the results back, until the model answers.
        try:
            run = llama.run_tools(
                messages=[{"role": "user", "content": question}], tools=[get_weather, local_time], max_rounds=4
            )
            print(f"llama after {run.rounds} round(s): {run.response}")
            oai = gpt.run_tools(
                messages=[{"role": "user", "content": question}], tools=[get_weather, local_time], max_rounds=4
            )
            print(f"gpt-oss after {oai.rounds} round(s): {oai.response}")
        except errors.ToolLoopError as exc:
            print("the model kept calling tools:", exc.calls)
            return
        for message in oai.messages:
            print("   ", message)


if __name__ == "__main__":
    main()
