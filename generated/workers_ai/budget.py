"""Rate budgets shared by processes (docs/bulk.md, "The rate budget").

A client's ``rate_limit`` paces the threads and tasks of that client. To keep several processes to one
limit together, give each client the same shared budget instead of dividing the limit by hand:

- :func:`host_budget`: every process on this host (``multiprocessing``, Spark tasks, separate commands);
- ``workers_ai.ray.cluster_budget``: every actor and task of a Ray job (``workers_ai.ray``'s helpers make
  one from the client's own ``rate_limit``).

``WorkersAI(rate_limit=host_budget(3000))``: 3000 requests a minute per model for all of them together.
"""

from __future__ import annotations

from ._core.host_budget import host_budget
from ._core.ratelimit import RateBudget, RateLimit

__all__ = ["RateBudget", "RateLimit", "host_budget"]
