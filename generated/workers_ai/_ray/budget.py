"""One rate budget for a whole Ray job: the schedules of :mod:`.._core.shared_pace` in one named actor.

:func:`cluster_budget` starts (or finds) the job's :class:`Coordinator`, an actor that reserves no CPU and
is restarted if it dies, and returns a :class:`~.._core.ratelimit.RateBudget` whose keeper is a
:class:`RayKeeper`: its address (name and namespace), which pickles into every actor and task of the
job. Each process asks it for small leases of slots (:class:`~.._core.shared_pace.LeasedPace`), so the
whole job keeps to the limit whatever the number of actors, and one that dies, restarts, is never placed
or waits for work leaves its share to the others.

The actor is the job's (not detached): it ends with the driver. The driver keeps a handle to it, so it
lives as long as the driver does; the ``workers_ai.ray`` helpers make one per client configuration.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import ray as _ray

from .._core.ratelimit import RateBudget, RateLimit
from .._core.shared_pace import Grant, Ledger, holder_id
from .._core.warn import warn_user
from .._error_base import WorkersAIWarning
from ..errors import ConfigurationError, WorkersAIError

if TYPE_CHECKING:
    from .._core.config import SessionConfig

__all__ = ["Coordinator", "RayKeeper", "cluster_budget", "job_budget"]

_log = logging.getLogger("workers_ai")
# Ray's API is only partly typed: it is reached through this untyped handle.
ray: Any = _ray
_HANDLES: dict[tuple[str, str], Any] = {}  # the driver's handles (this Ray job's): its actors live while held
_JOB: list[str] = [""]  # the Ray job they belong to: a driver that shuts Ray down and starts again starts anew
_ATTEMPTS = 5


class Coordinator:
    """The job's keeper of rate schedules (a Ray actor; see the module docs). Its methods run one at a time."""

    def __init__(self) -> None:
        self.ledger = Ledger()

    def lease(self, model_id: str, rpm: float, want: int, holder: str, successes: int) -> Grant:
        return self.ledger.lease(time.monotonic(), model_id, rpm, want, holder, successes)

    def throttle(self, model_id: str, rpm: float, retry_after: float | None, age: float | None) -> float:
        return self.ledger.throttle(time.monotonic(), model_id, rpm, retry_after, age)

    def release(self, model_id: str, rpm: float, offsets: list[float]) -> None:
        self.ledger.release(time.monotonic(), model_id, rpm, offsets)

    def state(self) -> dict[str, Any]:
        """The ledger as data (for tests and the bench)."""
        return self.ledger.to_builtins()


class RayKeeper:
    """The :class:`~.._core.shared_pace.Keeper` of a Ray job's budget: the coordinator actor by name.
    Pickles as its name and namespace; each process finds the actor on first use."""

    def __init__(self, name: str, namespace: str) -> None:
        self.name = name
        self.namespace = namespace
        self._actor: Any = None
        self._holder = ""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RayKeeper({self.name!r})"

    def __reduce__(self) -> tuple[type[RayKeeper], tuple[str, str]]:
        return (RayKeeper, (self.name, self.namespace))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RayKeeper) and (other.name, other.namespace) == (self.name, self.namespace)

    def __hash__(self) -> int:
        return hash((self.name, self.namespace))

    def actor(self) -> Any:
        with self._lock:
            if self._actor is None:
                self._actor = ray.get_actor(self.name, namespace=self.namespace)
                self._holder = holder_id()
            return self._actor

    def _call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the coordinator, waited for; a restarting coordinator is waited for too."""
        last: Exception | None = None
        for attempt in range(_ATTEMPTS):
            try:
                return ray.get(getattr(self.actor(), method).remote(*args), timeout=60)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError, ValueError) as exc:
                last = exc
                with self._lock:
                    self._actor = None  # found again by name: a restarted actor keeps it
                time.sleep(0.2 * (attempt + 1))
        raise WorkersAIError(f"the Ray job's rate budget ({self.name}) does not answer: {last}")

    def lease(self, model_id: str, rpm: float, want: int, successes: int) -> Grant:
        self.actor()  # names this process as a holder on first use
        grant: Grant = self._call("lease", model_id, rpm, want, self._holder, successes)
        return grant

    def throttle(self, model_id: str, rpm: float, retry_after: float | None, age: float | None) -> None:
        self.actor().throttle.remote(model_id, rpm, retry_after, age)  # not waited for: the refused call retries

    def release(self, model_id: str, rpm: float, offsets: list[float]) -> None:
        self.actor().release.remote(model_id, rpm, offsets)


def _namespace() -> str:
    if not ray.is_initialized():
        ray.init()
    namespace: str = ray.get_runtime_context().namespace
    return namespace


def _start(name: str) -> RayKeeper:
    namespace = _namespace()
    context = ray.get_runtime_context()
    job = f"{context.get_job_id()}@{context.get_node_id()}"  # job ids start again with each new cluster
    if _JOB[0] != job:  # the handles of an earlier Ray session name actors that are gone with it
        _HANDLES.clear()
        _JOB[0] = job
    key = (name, namespace)
    if key not in _HANDLES:
        remote: Any = ray.remote(Coordinator)
        _HANDLES[key] = remote.options(
            name=name, namespace=namespace, get_if_exists=True, num_cpus=0, max_restarts=-1, max_task_retries=-1
        ).remote()
    return RayKeeper(name, namespace)


def cluster_budget(limit: RateLimit | str = "published", *, name: str = "workers-ai-budget") -> RateBudget:
    """A rate budget shared by every actor and task of this Ray job: ``limit`` as ``rate_limit=`` takes it
    (the published limits by default), kept by the job's coordinator actor ``name`` (started on first use;
    ``ray.init()`` is called when Ray is not running). Give it to ``WorkersAI(rate_limit=...)`` and pass
    that client to your tasks; ``workers_ai.ray.embed`` and ``map_model`` make one from their client."""
    if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"a cluster budget needs a name, got {name!r}")
    return RateBudget(limit, keeper=_start(name))


def job_budget(client: SessionConfig, model_id: str, actors: int) -> RateBudget:
    """The budget the helpers give their actors: the client's ``rate_limit`` as the budget of the whole job,
    kept by one coordinator for every client configured alike. Never split (see ``workers_ai.ray``): a
    client already carrying a Ray job's budget keeps it; a host budget becomes a job budget of the same
    limits (a host's file reaches one machine only)."""
    budget = client.rate_budget
    rpm = budget.rpm(model_id)
    if budget.scale != 1 and rpm is not None:
        warn_user(
            f"the client's rate budget is {budget.scale:g} of its limit ({rpm:g} requests/min for {model_id}); "
            "workers_ai.ray takes the client's budget as the budget of the whole job and shares it among the "
            "actors: pass a client with the whole limit",
            WorkersAIWarning,
        )
    if isinstance(budget.keeper, RayKeeper):
        keeper = budget.keeper
    else:
        digest = hashlib.sha256(repr((client.account_id, budget.limit, budget.scale)).encode()).hexdigest()[:16]
        keeper = _start(f"workers-ai-budget-{digest}")
    shown = "not paced" if rpm is None else f"{rpm:g} requests/min"
    _log.info(
        "workers_ai.ray: one rate budget for the whole job, %s for %s (the client's rate_limit), shared by %d "
        "actors through %s",
        shown,
        model_id,
        actors,
        keeper.name,
    )
    return RateBudget(budget.limit, scale=budget.scale, keeper=keeper)
