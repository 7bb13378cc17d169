"""Request URLs: model ids checked whole, and every path segment percent-encoded.

A model id is one or more ``/``-separated segments of letters, digits and ``@._+-``; a segment made
only of dots (``.``, ``..``) is refused because HTTP libraries resolve it and the request (with the
token) would go to another path. The ``/`` between segments stays literal and ``@`` stays as it is (the
API answers ``%2F`` with 400/7000); anything else is encoded.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import quote, urlsplit

from .._error_base import ConfigurationError

__all__ = ["check_account_id", "check_base_url", "model_path", "segment"]

# Checked with str methods, not regexes: compiling a pattern costs more at import than every check after.
_SEGMENT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+-"  # a model id segment
_HEX = "0123456789abcdef"


def model_path(model_id: str) -> str:
    """``model_id`` as a URL path (segments encoded, slashes kept); ``ConfigurationError`` for a bad id."""
    if not isinstance(model_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"model id {model_id!r} is not a valid Workers AI model name")
    parts = model_id.split("/")
    if any(not part or part.strip(_SEGMENT_CHARS) for part in parts):  # an empty segment or another character
        raise ConfigurationError(f"model id {model_id!r} is not a valid Workers AI model name")
    if any(not part.strip(".") for part in parts):
        raise ConfigurationError(f"model id {model_id!r} has a '.' or '..' segment")
    return "/".join(quote(part, safe="@") for part in parts)


def segment(value: str) -> str:
    """One path segment, every reserved character encoded (a '/' too); dot-only values are refused."""
    if not value.strip("."):
        raise ConfigurationError(f"{value!r} cannot be a URL path segment")
    return quote(value, safe="")


def check_account_id(account_id: str, source: str = "account_id") -> str:
    """A Cloudflare account id: 32 lower-case hex characters (the dashboard's form). Anything else would
    be sent and come back as a misleading "model not found". ``source`` names where it came from."""
    if not isinstance(account_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"account_id must be a str, not {type(account_id).__name__}")
    if len(account_id) != 32 or account_id.strip(_HEX):
        shown = account_id if len(account_id) <= 64 else account_id[:64] + "..."
        raise ConfigurationError(
            f"account id {shown!r} (from {source}) is not 32 hex characters (copy it from the dashboard's"
            " Workers AI page)"
        )
    return account_id


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(url: str, what: str = "base_url") -> str:
    """``url`` checked once, before any token is sent to it, without its trailing ``/``.

    ``https://`` is required (``http://`` only for a loopback host, such as the emulator); no user name or
    password (they would show in reprs and logs), no query or fragment and no whitespace or control
    characters (each would send requests to another path), and a clean path (no ``.``, ``..`` or empty
    segments). Errors never echo a password.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"{what} must be a string, got {type(url).__name__}")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ConfigurationError(f"{what} is not a valid URL ({exc})") from None
    shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise ConfigurationError(f"{what} {shown!r} contains whitespace or a control character")
    if parts.scheme not in ("https", "http") or not host:
        raise ConfigurationError(f"{what} {shown!r} must be an absolute https:// URL (e.g. {DEFAULT_HINT})")
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(f"{what} {shown!r} must not carry a user name or password (the token is the auth)")
    if parts.scheme == "http" and not _is_loopback(host):
        raise ConfigurationError(
            f"{what} {shown!r} uses plain http: the API token would travel in clear text; use https://"
            " (http:// is allowed only for a loopback host such as the emulator)"
        )
    if parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        raise ConfigurationError(f"{what} {shown!r} must not have a query or fragment")
    path = parts.path.rstrip("/")
    if path and any(seg in ("", ".", "..") for seg in path.split("/")[1:]):
        raise ConfigurationError(f"{what} {shown!r} has an empty, '.' or '..' path segment")
    return url.rstrip("/")


DEFAULT_HINT = "https://api.cloudflare.com/client/v4"
