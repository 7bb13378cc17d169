"""Cloudflare's native decision (Clef: ``questions``) and extraction (Clairic: ``fields``) models: one
answer per question or field id, of the type each asks for, drawn from the words of the ``state``."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from .._core.jsonview import as_list, as_object
from ._prompt import names_in, numbers_in, topic_words
from ._textgen import count_tokens, words

__all__ = ["decisions", "extractions"]


def _state_text(p: Mapping[str, Any]) -> str:
    state = p.get("state")
    return state if isinstance(state, str) else json.dumps(state, sort_keys=True) if state is not None else ""


def _overlap(text: str, state: str) -> float:
    """The share of ``text``'s topic words that the state mentions."""
    wanted = {w.lower() for w in topic_words(text)}
    if not wanted:
        return 0.0
    return len(wanted & set(words(state))) / len(wanted)


def _usage(state: str, asked: Mapping[str, Any]) -> dict[str, int]:
    return {"input_tokens": count_tokens(state) + count_tokens(json.dumps(asked)), "output_tokens": 2 * len(asked)}


def decisions(p: Mapping[str, Any], seed: str) -> dict[str, Any]:
    """Clef: ``noul`` questions get a probability (higher when the state mentions the question's
    words), ``choice`` one of its criteria with probabilities over all of them, ``score`` a criterion's
    index with probabilities per index."""
    state = _state_text(p)
    questions = as_object(p.get("questions")) or {}
    answers: dict[str, Any] = {}
    for qid, raw in questions.items():
        q = as_object(raw) or {}
        rng = random.Random(seed + qid)
        instructions = str(q.get("instructions") or "")
        kind = q.get("type")
        if kind == "choice":
            options = list(as_object(q.get("criteria")) or {}) or ["yes", "no"]
            fit = [_overlap(o + " " + str((as_object(q.get("criteria")) or {}).get(o, "")), state) for o in options]
            best = max(range(len(options)), key=lambda i: (fit[i], -i)) if any(fit) else rng.randrange(len(options))
            probs = _spread(len(options), best, rng)
            answers[qid] = {
                "type": "choice",
                "choice": options[best],
                "probabilities": {o: probs[i] for i, o in enumerate(options)},
                "confidence": probs[best],
            }
        elif kind == "score":
            levels = as_list(q.get("criteria")) or [0, 1]
            best = min(len(levels) - 1, round(_overlap(instructions, state) * (len(levels) - 1)))
            probs = _spread(len(levels), best, rng)
            answers[qid] = {
                "type": "score",
                "score": best,
                "legend": {str(i): level for i, level in enumerate(levels)},
                "probabilities": {str(i): probs[i] for i in range(len(levels))},
                "confidence": probs[best],
            }
        else:
            base = 0.15 + 0.7 * _overlap(instructions, state)
            answers[qid] = {"type": "noul", "noul": round(min(0.99, base + rng.random() * 0.1), 4)}
    model = p.get("model")
    return {
        "model": model.strip() if isinstance(model, str) else "clef",
        "answers": answers,
        "usage": _usage(state, questions),
    }


def _spread(n: int, best: int, rng: random.Random) -> list[float]:
    """Probabilities over ``n`` options summing to 1, the largest on ``best``."""
    top = round(0.55 + rng.random() * 0.4, 4) if n > 1 else 1.0
    rest = (1.0 - top) / (n - 1) if n > 1 else 0.0
    return [top if i == best else round(rest, 4) for i in range(n)]


_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::(\d{2}))?\b")


def _span(state: str, value: str) -> list[int] | None:
    at = state.find(value)
    return [at, at + len(value)] if at >= 0 else None


def extractions(p: Mapping[str, Any], seed: str) -> dict[str, Any]:
    """Clairic: each field's value read from the state (names for text, numbers, ISO dates and times,
    lists of names), with its span; null with a high ``null_probability`` when the state has none."""
    state = _state_text(p)
    fields = as_object(p.get("fields")) or {}
    names, numbers = names_in(state), numbers_in(state)
    reference = p.get("reference_date")
    answers: dict[str, Any] = {}
    for fid, raw in fields.items():
        spec = as_object(raw) or {}
        kind = spec.get("type") if isinstance(spec.get("type"), str) else "text"
        rng = random.Random(seed + fid)
        value: Any = None
        if kind == "text":
            words_of_id = {w.lower() for w in re.split(r"[_\W]+", fid) if w}
            tagged = [n for n in names if words_of_id & {w.lower() for w in n.split()}]
            candidates = tagged or names or topic_words(state)[:1]
            value = candidates[0] if candidates else None
        elif kind == "number":
            value = numbers[0] if numbers else None
        elif kind in ("estimate",):
            lo, hi = spec.get("min"), spec.get("max")
            low = float(lo) if isinstance(lo, (int, float)) else 0.0
            high = float(hi) if isinstance(hi, (int, float)) else low + 100.0
            value = numbers[0] if numbers and low <= numbers[0] <= high else round((low + high) / 2, 2)
        elif kind == "forecast":
            horizon = spec.get("horizon")
            steps = horizon if isinstance(horizon, int) and not isinstance(horizon, bool) and horizon > 0 else 1
            start = numbers[0] if numbers else 10.0
            value = [round(start * (1 + 0.05 * (i + 1)), 2) for i in range(min(steps, 366))]
        elif kind in ("date", "datetime"):
            found = _DATE.search(state)
            value = found.group(0) if found else (reference if isinstance(reference, str) else None)
            if value is not None and kind == "datetime":
                value += "T00:00:00"
        elif kind == "time":
            found = _TIME.search(state)
            value = f"{int(found.group(1)):02d}:{found.group(2)}:{found.group(3) or '00'}" if found else None
        elif kind == "duration":
            value = f"P{int(numbers[0])}D" if numbers else None
        listed: list[str] = names or topic_words(state)[:3]
        if kind == "list":
            value = listed
        confidence = round(0.7 + rng.random() * 0.29, 4)
        answer: dict[str, Any] = {"type": kind, "value": value, "confidence": confidence}
        if kind == "list":
            answer["spans"] = [s for s in (_span(state, v) for v in listed) if s is not None]
        elif kind != "forecast":
            answer["null_probability"] = 0.02 if value is not None else 0.9
            if kind != "estimate":
                answer["guess"] = value
                answer["span"] = _span(state, str(value)) if isinstance(value, str) else None
        answers[fid] = answer
    model = p.get("model")
    return {
        "model": model.strip() if isinstance(model, str) else "clairic",
        "answers": answers,
        "truncated": False,
        "usage": _usage(state, fields),
    }
