"""Structured outputs: ask a model for JSON shaped like a Python type and get an instance of it back.

Runs against the real API when CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN are set, and against the
local emulator otherwise (``python examples/structured.py`` needs no account).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import msgspec
from workers_ai import WorkersAI, errors


class Weather(msgspec.Struct):
    """A weather report."""

    city: str
    temperature: float
    unit: Literal["celsius", "fahrenheit"]
    conditions: list[str] = []


@dataclass
class Landmark:
    name: str
    city: str
    year_built: int


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
        llama = ai.model("@cf/meta/llama-3.3-70b-instruct-fp8-fast")
        reply = llama.chat(
            messages=[{"role": "user", "content": "What is the weather in Lisbon today?"}],
            response_format=Weather,  # its JSON Schema (msgspec.json.schema) goes out as JSON mode
        )
        weather: Weather = reply.parsed  # an instance of Weather, typed as one
        print(f"{weather.city}: {weather.temperature} {weather.unit} {weather.conditions}")
        print("usage:", reply.output.usage)

        landmark = llama.generate(prompt="Name a landmark in Paris.", response_format=Landmark).parsed
        print(f"{landmark.name} ({landmark.city}, {landmark.year_built})")

        raw = llama.chat(
            messages=[{"role": "user", "content": "Three colours as JSON."}],
            response_format={"type": "json_object"},  # the plain form: .parsed is the object as decoded
        )
        print("json_object:", raw.parsed)

        try:
            again = llama.chat(messages=[{"role": "user", "content": "Weather in Oslo?"}], response_format=Weather)
            print("Oslo:", again.parsed.temperature)
        except errors.JsonModeError as exc:  # the model could not produce JSON of that shape
            print("JSON mode not met:", exc)
        except errors.ResponseDecodeError as exc:  # JSON that does not fit Weather; exc.body is the raw reply
            print("reply did not fit Weather:", exc)


if __name__ == "__main__":
    main()
