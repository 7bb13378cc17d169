"""The cause behind an error reply, where the client knows more than the API said: the account id and where it
came from for "could not route" (7003), where the token came from and what to check for 401 / 10000 and 403,
and the known model ids nearest an unknown one for "no such model" (5007).

Loaded by the first error reply that needs a hint (:func:`.error_replies.error_from`); never names the token,
only where it came from (the ``api_token`` argument or ``CLOUDFLARE_API_TOKEN``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .urls import DEFAULT_HINT

if TYPE_CHECKING:
    from typing import Protocol

    from .._error_base import APIError

    class Credentials(Protocol):
        """What a hint reads of the client (``SessionConfig`` provides it, with ``_sources``: where the
        account id and the token came from)."""

        account_id: str
        base_url: str


__all__ = ["hint_for"]

_MODEL_CODES = frozenset({5007, 3042})
# 403s that are about the model or the account, not the token: their messages say so themselves.
_NOT_THE_TOKEN = frozenset({5016, 5018, 3041, 3023})


def hint_for(cls: type[APIError], codes: Sequence[int], model_id: str | None, client: Credentials | None) -> str:
    """What to add to the message of an error of class ``cls`` (codes ``codes``), or ''."""
    from ..errors import AuthenticationError, ModelNotFoundError, PermissionDeniedError, RouteNotFoundError

    if model_id and cls is ModelNotFoundError and not _MODEL_CODES.isdisjoint(codes):
        return _near(model_id, client)
    # Read defensively: a hint must never turn the error it explains into another one.
    sources: tuple[str, str] | None = getattr(client, "_sources", None)
    if client is None or sources is None:
        return ""
    account, token = sources
    if issubclass(cls, RouteNotFoundError):
        return _route(client, account)
    if issubclass(cls, AuthenticationError):
        return (
            f"the API token from {token} was refused: check that it is an API token (not the Global API Key) with"
            f" the Workers AI permission, made for account {client.account_id} (from {account}), and that it has"
            " not expired or been revoked"
        )
    if cls is PermissionDeniedError and _NOT_THE_TOKEN.isdisjoint(codes):
        return (
            f"the API token from {token} may not do this: check that it has the Workers AI permission (Edit"
            f" for fine-tunes) for account {client.account_id} (from {account}), and that no IP address or"
            " time restriction on it excludes this request"
        )
    return ""


def _route(client: Credentials, account: str) -> str:
    where = ""
    if client.base_url != DEFAULT_HINT:  # the API's own base URL
        from .redact import mask_url

        where = f" at {mask_url(client.base_url)}"
    return (
        f"no route for account id {client.account_id} (from {account}){where}: the account id is most likely"
        " wrong, not the model; copy it from the Cloudflare dashboard (Workers AI, Use REST API)"
    )


def _near(model_id: str, client: object) -> str:
    """``did you mean ...?`` with the registry's ids nearest ``model_id`` (a client lists them: ``models()``)."""
    models: Callable[[], Sequence[str]] | None = getattr(client, "models", None)
    known = models() if models is not None else ()
    if model_id in known:
        return ""
    from .suggest import near_models

    near = near_models(model_id, known)
    if not near:
        return ""
    shown = [repr(m) for m in near]
    return "did you mean " + (shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]) + "?"
