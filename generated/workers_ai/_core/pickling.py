"""Pickling clients as the constructor call that made them, so a worker process gets a working copy.

A client holds sockets, locks and thread-locals, none of which can (or should) cross a process
boundary. A client remembers the arguments it was constructed with (``SessionConfig.__new__``) and
pickles as "call the class again with these" (:func:`reduce_client`); connections, locks and the rate
budget are then built afresh in the receiving process. The credentials a client resolved from the
environment are written into those arguments, because the worker may not have the same environment:
**the API token travels inside the pickle**. It is held in a :class:`Secret`, whose ``repr`` is
``'***'``, so no repr, log line or error shows it; treat pickled clients like the token itself.

This module loads with the first pickle or ``with_options`` copy, not with the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from typing import Protocol

    class Client(Protocol):
        """What this module needs of a client (``SessionConfig``, which imports this module)."""

        def _pickle_overrides(self) -> dict[str, Any]: ...

        def _constructor_kwargs(self) -> dict[str, Any]: ...

    # annotations only: a TypeVar with a string bound compiles it (a ForwardRef) at every import
    _R = TypeVar("_R", bound="Client")

__all__ = ["Secret", "constructor_kwargs", "handle_of", "rebuild", "reduce_client", "with_options"]


class Secret:
    """A string that never shows itself: ``repr`` and ``str`` are ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        return (Secret, (self._value,))


def constructor_kwargs(client: Client, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments ``client`` was made with (``args``, ``kwargs``) by name, with the values it resolved
    at construction pinned (``_pickle_overrides``: the account id and token read from the environment),
    so a copy does not depend on the worker's environment; secrets wrapped (:class:`Secret`)."""
    import inspect  # only when pickling: inspect (and ast, dis) cost milliseconds at import

    bound = inspect.signature(type(client).__init__).bind(client, *args, **kwargs)
    named = {k: v for k, v in bound.arguments.items() if k != "self"}
    extra = named.pop("kwargs", None)
    if isinstance(extra, Mapping):  # a constructor taking **kwargs
        named.update(extra)  # pyright: ignore[reportUnknownArgumentType]
    named.update(client._pickle_overrides())  # pyright: ignore[reportPrivateUsage]
    return {k: _hidden(k, v) for k, v in named.items()}


def reduce_client(client: Client) -> tuple[Any, ...]:
    """A client's pickle: a fresh call of its class with the arguments it was made with."""
    kwargs = client._constructor_kwargs()  # pyright: ignore[reportPrivateUsage]
    # Providers hold locks and exporters: a copy in another process reports to that process's globals.
    for name in ("tracer_provider", "meter_provider"):
        if kwargs.get(name) is not None:
            kwargs[name] = None
    return (rebuild, (type(client), kwargs))


def _hidden(name: str, value: Any) -> Any:
    """A constructor argument as a pickle holds it: the token, secret-named header values and a proxy
    URL with a password wrapped in :class:`Secret`, so the pickle's repr (or a debugger's) never shows them."""
    from .redact import is_secret_name, mask_url  # here: only pickling needs it

    if name == "api_token" and isinstance(value, str):
        return Secret(value)
    if name == "headers" and isinstance(value, Mapping):
        headers = cast("Mapping[str, Any]", value)
        return {k: Secret(v) if is_secret_name(k) and isinstance(v, str) else v for k, v in headers.items()}
    if name == "proxy" and isinstance(value, str) and mask_url(value) != value:
        return Secret(value)
    return value


def _revealed(value: object) -> object:
    if isinstance(value, Secret):
        return value.reveal()
    if not isinstance(value, dict):
        return value
    items = cast("dict[str, object]", value)
    if any(isinstance(v, Secret) for v in items.values()):
        return {k: v.reveal() if isinstance(v, Secret) else v for k, v in items.items()}
    return items


def rebuild(cls: type[_R], kwargs: Mapping[str, Any]) -> _R:
    """Call ``cls`` with ``kwargs`` (secrets revealed): what an unpickled client is."""
    return cls(**{k: _revealed(v) for k, v in kwargs.items()})


def with_options(client: _R, **overrides: Any) -> _R:
    """A new client made like ``client``, with some constructor arguments changed (its own connections
    and rate budget)."""
    return rebuild(type(client), {**client._constructor_kwargs(), **overrides})  # pyright: ignore[reportPrivateUsage]


def handle_of(client: Any, model_id: str, cls: type[Any]) -> Any:
    """An unpickled handle: the client's own handle for ``model_id`` (or a new ``cls`` on a bare session)."""
    model = getattr(client, "_model", None)
    if model is not None:
        handle = model(model_id)
        if type(handle) is cls:
            return handle
    return cls(client, model_id)
