"""Wrong realtime options: each line with an E comment must be a mypy error."""

from __future__ import annotations

from workers_ai import WorkersAI


def wrong(ai: WorkersAI) -> None:
    ai.model("@cf/deepgram/nova-3").listen(encoding="mp3")  # E
    ai.model("@cf/deepgram/nova-3").listen(sample_rate="16000")  # E
    ai.model("@cf/deepgram/flux").listen(sample_rate=16000)  # E: encoding is required
    ai.model("@cf/deepgram/aura-1").speak_live(speaker="nobody")  # E
    ai.model("@cf/deepgram/nova-3").listen(encoding="linear16", sample_rate=16000, interim_results=True)
