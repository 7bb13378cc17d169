"""What a client has used: calls, batch items, tokens, neurons and their cost, per model and in total.

One :class:`UsageMeter` per client (``ai.usage``), shared by every thread (a lock guards it) and of the
same type on the async client. Costs come from the price the catalog publishes for each model
(``ModelInfo.price``): tokens at the per-million-token prices, calls at a per-request price. A model
whose price the catalog does not give, is in another unit (per step, per audio minute, ...), or whose
reply reported no token counts has an unknown cost: ``None``, never zero.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from .jsonview import as_object
from .usage import Usage, usage_from

__all__ = ["ModelUsage", "UsageMeter", "call_cost", "rates", "unpriced_reason", "usage_of", "usd"]

_PER_MILLION = 1_000_000.0
_TOKEN_UNITS = frozenset({"per M input tokens", "per M output tokens", "per M cached input tokens"})


class ModelUsage(msgspec.Struct, frozen=True):
    """One model's (or the whole client's) usage so far. ``cost_usd`` is None when any call's cost is unknown."""

    calls: int = 0
    items: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    neurons: float | None = None
    cost_usd: float | None = 0.0


def usage_of(result: Any) -> Usage | None:
    """The token usage a decoded reply carries (a struct's or a dict's ``usage``), if any."""
    raw: Any = cast("dict[str, Any]", result).get("usage") if type(result) is dict else getattr(result, "usage", None)
    if raw is None:
        return None
    if isinstance(raw, Usage):
        return raw
    if isinstance(raw, msgspec.Struct):
        return _from_struct(raw)
    return usage_from(raw)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _from_struct(raw: msgspec.Struct) -> Usage:
    """A generated usage struct read attribute by attribute (the API sends counts as numbers: 7.0)."""
    details: Any = getattr(raw, "prompt_tokens_details", None)
    neurons: Any = getattr(raw, "neurons", None)
    return Usage(
        prompt_tokens=_count(getattr(raw, "prompt_tokens", 0)),
        completion_tokens=_count(getattr(raw, "completion_tokens", 0)),
        total_tokens=_count(getattr(raw, "total_tokens", 0)),
        prompt_tokens_details=as_object(msgspec.to_builtins(details)) if details is not None else None,
        neurons=float(neurons) if isinstance(neurons, (int, float)) and not isinstance(neurons, bool) else None,
    )


def _cached(usage: Usage) -> int:
    details = usage.prompt_tokens_details or {}
    value = details.get("cached_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def rates(price: Sequence[Any]) -> dict[str, float] | None:
    """USD per unit of a published price, or None when it is missing or in units replies do not report."""
    entries = [e for e in (as_object(p) for p in price) if e is not None]
    if not entries:
        return None
    by_unit: dict[str, float] = {}
    for entry in entries:
        amount, unit = entry.get("price"), entry.get("unit")
        if entry.get("currency", "USD") != "USD" or not isinstance(unit, str):
            return None
        if isinstance(amount, bool) or not isinstance(amount, (int, float)):
            return None
        by_unit[unit] = float(amount)
    if any(unit not in _TOKEN_UNITS and unit != "per inference request" for unit in by_unit):
        return None  # steps, tiles, audio minutes, characters: not in what the API reports back
    return by_unit


def usd(amount: float) -> str:
    """A cost as people read it: ``$0.000134``; a cost under half a millionth is ``<$0.000001``, never
    a ``$0.000000`` that reads as free."""
    if amount == 0:
        return "$0"
    if amount < 5e-7:
        return "<$0.000001"
    return f"${amount:.6f}"


def call_cost(price: Sequence[Any] | dict[str, float] | None, usage: Usage | None, calls: int = 1) -> float | None:
    """The cost in USD of ``calls`` calls that used ``usage`` in all, or None when it cannot be known.

    ``price`` is the catalog's price list or what :func:`rates` made of it."""
    by_unit = price if isinstance(price, dict) or price is None else rates(price)
    if by_unit is None:
        return None
    cost = by_unit.get("per inference request", 0.0) * calls
    if by_unit.keys() & _TOKEN_UNITS:
        if usage is None:
            return None
        cached = _cached(usage) if "per M cached input tokens" in by_unit else 0
        prompt = max(0, usage.prompt_tokens - cached)
        cost += prompt * by_unit.get("per M input tokens", 0.0) / _PER_MILLION
        cost += cached * by_unit.get("per M cached input tokens", 0.0) / _PER_MILLION
        cost += usage.completion_tokens * by_unit.get("per M output tokens", 0.0) / _PER_MILLION
    return cost


class _ByModel(dict[str, ModelUsage]):
    """``by_model``: the models counted so far; any other id reads as nothing used (like a ``Counter``).

    A model called only through another SDK (the openai SDK on ``ai.openai_base_url``) was never seen by
    the meter, so it reads as nothing used *through this client*, which is what the meter counts."""

    def __missing__(self, model_id: str) -> ModelUsage:
        return _NOTHING


_NOTHING = ModelUsage()


def unpriced_reason(price: Sequence[Any], by_unit: dict[str, float] | None) -> str:
    """Why a call of a model with this price list has no cost: no price (``"price"``), units replies do not
    report (``"per step"``), or, its rates known, no token counts in the reply (``"tokens"``)."""
    if by_unit is not None:
        return "tokens"
    units = sorted({str(e.get("unit")) for e in (as_object(p) for p in price) if e is not None and e.get("unit")})
    other = [u for u in units if u not in _TOKEN_UNITS and u != "per inference request"]
    return ", ".join(other) if other else "price"


class _Tally:
    __slots__ = ("calls", "completion", "cost", "items", "neurons", "prompt", "total", "why")

    def __init__(self) -> None:
        self.calls = 0
        self.items = 0
        self.prompt = 0
        self.completion = 0
        self.total = 0
        self.neurons: float | None = None
        self.cost: float | None = 0.0
        self.why = ""  # why the cost is unknown (:func:`unpriced_reason`), once it is

    def snapshot(self) -> ModelUsage:
        return ModelUsage(self.calls, self.items, self.prompt, self.completion, self.total, self.neurons, self.cost)


class UsageMeter:
    """Thread-safe running totals of what a client used (``ai.usage``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, _Tally] = {}
        # Per price list (module constants, keyed by identity): its rates.
        self._rates: dict[int, tuple[Sequence[Any], dict[str, float] | None]] = {}

    def __repr__(self) -> str:
        return f"<UsageMeter {self.summary()}>"

    def record(
        self,
        model_id: str,
        usage: Usage | None,
        price: Sequence[Any] = (),
        *,
        calls: int = 1,
        items: int = 0,
    ) -> None:
        """Add ``calls`` calls (and ``items`` batch items) of ``model_id`` that used ``usage`` in all."""
        cached = self._rates.get(id(price))
        if cached is None or cached[0] is not price:  # parsed once per price list (they are module constants)
            cached = self._rates[id(price)] = (price, rates(price))
        cost = call_cost(cached[1], usage, calls)
        with self._lock:
            tally = self._models.get(model_id)
            if tally is None:
                tally = self._models[model_id] = _Tally()
            tally.calls += calls
            tally.items += items
            if usage is not None:
                tally.prompt += usage.prompt_tokens
                tally.completion += usage.completion_tokens
                tally.total += usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
                if usage.neurons is not None:
                    tally.neurons = (tally.neurons or 0.0) + usage.neurons
            tally.cost = None if cost is None or tally.cost is None else tally.cost + cost
            if cost is None and not tally.why:
                tally.why = unpriced_reason(price, cached[1])

    def reset(self) -> None:
        """Forget everything recorded so far."""
        with self._lock:
            self._models.clear()

    @property
    def by_model(self) -> Mapping[str, ModelUsage]:
        """A snapshot per model id called so far; an id not called reads as ``ModelUsage()``, nothing used."""
        with self._lock:
            return _ByModel((model_id, tally.snapshot()) for model_id, tally in sorted(self._models.items()))

    @property
    def total(self) -> ModelUsage:
        """Everything summed; ``cost_usd`` None when any model's cost is unknown."""
        calls = items = prompt = completion = total = 0
        neurons: float | None = None
        cost: float | None = 0.0
        for u in self.by_model.values():
            calls, items = calls + u.calls, items + u.items
            prompt, completion, total = (
                prompt + u.prompt_tokens,
                completion + u.completion_tokens,
                total + u.total_tokens,
            )
            if u.neurons is not None:
                neurons = (neurons or 0.0) + u.neurons
            cost = None if cost is None or u.cost_usd is None else cost + u.cost_usd
        return ModelUsage(calls, items, prompt, completion, total, neurons, cost)

    @property
    def calls(self) -> int:
        return self.total.calls

    @property
    def prompt_tokens(self) -> int:
        return self.total.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.total.completion_tokens

    @property
    def total_tokens(self) -> int:
        return self.total.total_tokens

    @property
    def neurons(self) -> float | None:
        return self.total.neurons

    @property
    def total_cost_usd(self) -> float | None:
        """The cost of every call in USD, or None when the price of any of them is unknown."""
        return self.total.cost_usd

    @property
    def known_cost_usd(self) -> float:
        """The cost of the models whose price is known (a lower bound when ``total_cost_usd`` is None)."""
        return sum(u.cost_usd for u in self.by_model.values() if u.cost_usd is not None)

    @property
    def unpriced(self) -> list[str]:
        """Models whose cost is unknown."""
        return [m for m, u in self.by_model.items() if u.cost_usd is None]

    def summary(self) -> str:
        """One line: ``3 calls, 120 tokens (100 in, 20 out), $0.000012`` (an unknown cost says so)."""
        t = self.total
        parts = [f"{t.calls} call{'s' if t.calls != 1 else ''}"]
        if t.items:
            parts.append(f"{t.items} batch item{'s' if t.items != 1 else ''}")
        if t.total_tokens or t.prompt_tokens or t.completion_tokens:
            parts.append(f"{t.total_tokens} tokens ({t.prompt_tokens} in, {t.completion_tokens} out)")
        elif t.calls:
            parts.append("no token counts reported")
        if t.neurons is not None:
            parts.append(f"{t.neurons:g} neurons")
        if not t.calls:
            return ", ".join(parts)  # nothing was used: no cost to state
        if t.cost_usd is not None:
            return ", ".join([*parts, usd(t.cost_usd)])
        # Why each unknown cost is unknown, in its own words (never "no price or token counts" next to counts).
        with self._lock:
            reasons = {model_id: tally.why for model_id, tally in sorted(self._models.items()) if tally.why}
        said: list[str] = []
        for why in dict.fromkeys(reasons.values()):
            models = ", ".join(m for m, w in reasons.items() if w == why)
            if why == "price":
                said.append(f"no published price for {models}")
            elif why == "tokens":
                said.append(f"cost of {models} unknown without token counts")
            else:
                said.append(f"cost of {models} unknown (priced {why})")
        known = self.known_cost_usd
        if known:
            said.append(f"{usd(known)} for the rest")
        return ", ".join(parts) + ", " + "; ".join(said)
