"""``Emulator``: the public face of the local Workers AI server.

It ties the parts together and owns their lifecycle: the catalog of models (:mod:`._catalog`), the
API as a function (:mod:`._api`), what it remembers (:mod:`._state`) and the HTTP server core
(:mod:`._server`), and offers the test helpers (recorded requests, injected faults, extra models).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar

from ._api import Api
from ._catalog import Catalog, ModelSpec
from ._faults import Fault
from ._http import Request
from ._options import DEFAULT_ACCOUNT_ID, DEFAULT_API_TOKEN
from ._realtime import is_upgrade, upgrade
from ._records import RecordedRequest, ServerError
from ._reply import Reply
from ._server import EmulatorStopped, HttpServer
from ._settings import Settings, checked_setting
from ._state import State

if TYPE_CHECKING:
    from .._aio_client import AsyncWorkersAI
    from .._client import WorkersAI

__all__ = ["DEFAULT_ACCOUNT_ID", "DEFAULT_API_TOKEN", "Emulator", "EmulatorStopped"]

T = TypeVar("T")


class _Setting(Generic[T]):
    """An ``Emulator`` attribute that reads and writes the shared :class:`Settings` field of that name."""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def __get__(self, emu: Emulator, owner: type[Any] | None = None) -> T:
        value: T = getattr(emu.settings, self.name)
        return value

    def __set__(self, emu: Emulator, value: T) -> None:
        setattr(emu.settings, self.name, checked_setting(self.name, value))


class Emulator:
    """A local, schema-faithful Workers AI server on ``127.0.0.1`` (a free port unless ``port`` is given).

    Use it as a context manager, or call :meth:`close`. Point the client at it with
    ``WorkersAI(account_id=emu.account_id, api_token=emu.api_token, base_url=emu.base_url)`` or
    :meth:`client`. Every request is recorded in :attr:`requests`; :meth:`inject` arranges faults.
    An exception in its own code closes only the connection it came from; it is kept in :attr:`errors`
    and logged on ``workers_ai.testing``.

    The options are those of ``workers-ai serve`` (the same names: :mod:`._options` defines both).
    ``batch_polls=(q, r)``: a queued batch answers ``queued`` to its first ``q`` polls, ``running`` to
    the next ``r``, then its results. ``batch_delay=(q_seconds, r_seconds)`` uses time instead; either
    takes one number for both. ``quiet=False`` prints a line per request (to ``log``, or stdout; giving
    ``log`` turns them on too).
    ``check_outputs`` validates every JSON reply against the output schema (a 500 if it does not fit).
    ``keep_requests`` bounds :attr:`requests` (the oldest are dropped) and ``keep_jobs`` the batch jobs
    kept (the oldest finished ones go first; polling a dropped job answers "unknown or expired"), for
    long-running servers. ``workers`` is how many requests are computed at once (connections are not
    limited by it: idle ones cost no thread); request bodies over 10 MB get 413/3006.
    """

    account_id = _Setting[str]()
    api_token = _Setting[str]()
    batch_polls = _Setting[tuple[int, int]]()
    batch_delay = _Setting["tuple[float, float] | None"]()
    shuffle_batches = _Setting[bool]()
    stream_interval = _Setting[float]()
    check_outputs = _Setting[bool]()
    log = _Setting["IO[str] | None"]()
    keep_requests = _Setting[int]()
    keep_jobs = _Setting[int]()

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        account_id: str = DEFAULT_ACCOUNT_ID,
        api_token: str = DEFAULT_API_TOKEN,
        models: Iterable[str] | None = None,
        schemas: str | Path | None = None,
        batch_polls: tuple[int, int] | int = (1, 1),
        batch_delay: tuple[float, float] | float | None = None,
        shuffle_batches: bool = True,
        stream_interval: float = 0.0,
        check_outputs: bool = False,
        quiet: bool = True,
        log: IO[str] | None = None,
        keep_requests: int = 10_000,
        keep_jobs: int = 10_000,
        workers: int = 8,
        start: bool = True,
    ) -> None:
        checked_setting("workers", workers)
        checked_setting("port", port)
        checked_setting("quiet", quiet)
        if not quiet and log is None:
            log = sys.stdout
        given = {
            "account_id": account_id,
            "api_token": api_token,
            "batch_polls": batch_polls,
            "batch_delay": batch_delay,
            "shuffle_batches": shuffle_batches,
            "stream_interval": stream_interval,
            "check_outputs": check_outputs,
            "log": log,
            "keep_requests": keep_requests,
            "keep_jobs": keep_jobs,
        }
        self.settings = Settings(**{name: checked_setting(name, value) for name, value in given.items()})
        self.catalog = Catalog.from_package(models)
        if schemas is not None:
            self.catalog.add_dir(schemas)
        self.state = State(self.settings)
        self._api = Api(self.catalog, self.state, self.settings)
        self._host = host
        self._port = port
        self._workers = workers
        self._server: HttpServer | None = None
        if start:
            self.start()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Emulator:
        """Bind and serve in background threads (done by the constructor unless ``start=False``)."""
        if self._server is None:
            server = HttpServer(
                self._host, self._port, self._serve, on_error=self.state.errors.add, workers=self._workers
            )
            server.start()
            self._server = server
        return self

    def close(self) -> None:
        """Stop serving, drop open connections and end the server's threads."""
        server, self._server = self._server, None
        if server is not None:
            server.close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        server = self._server
        self.close()
        if server is not None and kind is None:
            server.check()  # a server that stopped on its own fails the block that used it

    def banner(self, out: IO[str] | None = None) -> None:
        """Print where the emulator listens and the credentials to use (for the command line)."""
        lines = [
            f"Workers AI emulator listening on {self.url}",
            f"  base URL:   {self.base_url}",
            f"  OpenAI SDK: base_url={self.openai_base_url}",
            f"  account id: {self.account_id}",
            f"  API token:  {self.api_token}",
            f"  models:     {len(self.models())}",
            "Point WorkersAI() at it from a shell with:",
            *(f"  export {key}={value}" for key, value in self.env().items()),
            "Press Ctrl-C to stop.",
        ]
        dest: IO[str] = sys.stdout if out is None else out
        dest.write("\n".join(lines) + "\n")
        dest.flush()

    def serve_forever(self) -> None:
        """Block until Ctrl-C (for the command line); :class:`EmulatorStopped` if the server stops on its own."""
        try:
            while (server := self._server) is not None:
                server.check()  # a server that stopped on its own ends this with the cause
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def _running(self) -> HttpServer:
        """The server; RuntimeError if closed, :class:`EmulatorStopped` if it ended on its own."""
        server = self._server
        if server is None:
            raise RuntimeError("the emulator is not running")
        server.check()
        return server

    @property
    def port(self) -> int:
        """The port it listens on; :class:`EmulatorStopped`, naming the cause, if its server has stopped."""
        return self._running().port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host = self._host if ":" not in self._host else f"[{self._host}]"
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What ``WorkersAI(base_url=...)`` takes: ``url + "/client/v4"``."""
        return self.url + "/client/v4"

    @property
    def openai_base_url(self) -> str:
        """What the ``openai`` SDK takes as ``base_url``: ``…/accounts/{account_id}/ai/v1``."""
        return f"{self.base_url}/accounts/{self.account_id}/ai/v1"

    @property
    def gateway_url(self) -> str:
        """What ``Gateway(base_url=...)`` takes: AI Gateway routes (``/v1/{account}/{gateway}/workers-ai/{model}``)."""
        return self.url + "/v1"

    def env(self) -> dict[str, str]:
        """Environment variables that point ``WorkersAI()`` at this emulator."""
        return {
            "CLOUDFLARE_ACCOUNT_ID": self.account_id,
            "CLOUDFLARE_API_TOKEN": self.api_token,
            "CLOUDFLARE_BASE_URL": self.base_url,
        }

    def client(self, **options: Any) -> WorkersAI:
        """A ``WorkersAI`` client configured for this emulator (options go to its constructor).

        It does not pace its requests: the emulator enforces no rate limit, so a test suite should not
        wait for one. Pass ``rate_limit="published"`` (or a number, or a mapping) to pace as against the
        API, e.g. to test code that relies on the client's rate budget.
        """
        from .. import WorkersAI

        options.setdefault("base_url", self.base_url)
        options.setdefault("rate_limit", None)
        return WorkersAI(account_id=self.account_id, api_token=self.api_token, **options)

    def async_client(self, **options: Any) -> AsyncWorkersAI:
        """An ``AsyncWorkersAI`` client configured for this emulator (needs the ``async`` extra); unpaced
        unless given ``rate_limit``, as :meth:`client`."""
        from .. import AsyncWorkersAI

        options.setdefault("base_url", self.base_url)
        options.setdefault("rate_limit", None)
        return AsyncWorkersAI(account_id=self.account_id, api_token=self.api_token, **options)

    # ------------------------------------------------------------------ test helpers

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        return self.state.requests.snapshot()

    def requests_for(self, model_id: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.model == model_id]

    @property
    def errors(self) -> list[ServerError]:
        """The exceptions the emulator contained, oldest first (the last 100): each closed the connection
        it came from and was logged once, with its traceback, on the ``workers_ai.testing`` logger.
        Empty unless the emulator (or a ``match`` predicate given to :meth:`inject`) has a bug."""
        return self.state.errors.snapshot()

    def inject(
        self,
        fault: str,
        *,
        times: int | None = 1,
        model: str | None = None,
        match: Callable[[RecordedRequest], bool] | None = None,
        status: int | None = None,
        code: int | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        delay: float | None = None,
        item: int = 0,
        items: tuple[int, ...] = (),
    ) -> Fault:
        """Make the next ``times`` matching requests fail with ``fault`` (see ``FAULTS`` for names).

        ``model`` limits it to run requests for that model, ``match`` to requests a predicate accepts.
        Stream faults wait for a streamed reply, batch faults for a batch submission.
        """
        f = Fault(
            fault,
            times=times,
            model=model,
            match=match,
            status=status,
            code=code,
            message=message,
            retry_after=retry_after,
            delay=delay,
            item=item,
            items=tuple(items),
        )
        self.state.faults.add(f)
        return f

    @property
    def batch_items_received(self) -> dict[str, int]:
        """How many times each batch item was received (every submission counted), by its
        ``external_reference``; items without one count as ``"#<position in its batch>"``."""
        return self.state.jobs.received()

    def clear_faults(self) -> None:
        self.state.faults.clear()

    def reset(self) -> None:
        """Forget requests, faults, batch jobs and errors."""
        self.state.reset()

    def add_model(self, model_id: str, schema: Mapping[str, Any]) -> None:
        """Serve another model from a catalog-form document (or a bare ``{input, output}``)."""
        self.catalog.add(model_id, schema)

    def models(self) -> list[str]:
        return self.catalog.ids()

    def example_input(self, model_id: str, variant: str | None = None, *, seed: str = "example") -> Any:
        """A valid (synthesized) input for ``model_id``; ``variant`` picks a branch by title or label."""
        return self._spec(model_id).example_input(variant, seed=seed)

    def _spec(self, model_id: str) -> ModelSpec:
        spec = self.catalog.get(model_id)
        if spec is None:
            raise KeyError(f"the emulator does not serve {model_id!r}")
        return spec

    # ------------------------------------------------------------------ the API

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request (``headers`` with lower-case names), as the HTTP server does."""
        return self._api.handle(method, target, headers, body)

    def _serve(self, request: Request) -> Reply:
        if is_upgrade(request):  # a realtime (WebSocket) session: testing/_realtime
            return upgrade(request, self.catalog, self.state, self.settings)
        return self._api.handle(request.method, request.target, request.headers, request.body)
