"""Proxies (a checked proxy URL, ``NO_PROXY``, loopback hosts) and the errors a connection fails with
when a proxy is down or refuses it, or a TLS certificate is not trusted.

:class:`.network.Network` loads this module when a client has a proxy (``proxy=``, or one of the
environment's proxy variables with ``trust_env``), and the transports when a connection fails: a client
that connects directly and succeeds never does. The rules are :mod:`.network`'s (docs/networks.md).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

from .._error_base import APIConnectionError, ConfigurationError

__all__ = [
    "DEFAULT_PORTS",
    "NoProxy",
    "ProxyURL",
    "is_loopback",
    "parse_proxy",
    "proxy_failure",
    "tls_failure",
    "tunnel_status",
]

_SCHEMES = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class ProxyURL:
    """A checked proxy URL. ``repr`` and :attr:`shown` never hold the password."""

    __slots__ = ("host", "password", "port", "scheme", "url", "username")

    def __init__(self, scheme: str, host: str, port: int, username: str | None, password: str | None, url: str):
        self.scheme = scheme
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.url = url  # as given (credentials included): for the libraries that take a URL

    @property
    def bare(self) -> str:
        """``scheme://host:port``: the proxy without its credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def canonical(self) -> str:
        """The URL rebuilt from its checked parts (explicit port, ``user:password@`` quoted), for a library
        that parses it again: it then reads what our rule read (a SOCKS port of 1080, a user without a
        password)."""
        if self.username is None:
            return self.bare
        from urllib.parse import quote

        scheme, _, hostport = self.bare.partition("://")
        return f"{scheme}://{quote(self.username, safe='')}:{quote(self.password or '', safe='')}@{hostport}"

    @property
    def shown(self) -> str:
        """The URL as a person may see it (``user:***@``)."""
        from .redact import mask_url  # here and below: only proxies and error messages need it

        return mask_url(self.url)

    @property
    def is_socks(self) -> bool:
        return self.scheme.startswith("socks")

    def basic_auth(self) -> str | None:
        """The ``Proxy-Authorization`` value for the URL's ``user:password``, or None."""
        if self.username is None:
            return None
        import base64

        pair = f"{self.username}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def scrub(self, text: str) -> str:
        """``text`` with the password (as given and percent-decoded) masked: for library messages."""
        if self.password:
            from .redact import MASK

            raw = self.url.split("://", 1)[-1].rpartition("@")[0].partition(":")[2]
            for secret in {self.password, raw} - {""}:
                text = text.replace(secret, MASK)
        return text

    def __repr__(self) -> str:
        return f"ProxyURL({self.shown!r})"

    def __reduce__(self) -> Any:
        # A ProxyURL is rebuilt from the client's options, never pickled on its own (it holds a password).
        raise TypeError("a ProxyURL is not pickled; pickle the client, which carries its proxy= option")


def parse_proxy(url: object, source: str) -> ProxyURL:
    """Check a proxy URL named by ``source`` (``"proxy="`` or an environment variable's name).

    An environment value without a scheme (``proxy:3128``) is taken as ``http://``, as curl does; an
    explicit ``proxy=`` must say its scheme. Errors show the URL with its password masked.
    """
    if not isinstance(url, str):
        raise ConfigurationError(f"{source} must be a URL string (http://host:port), not {type(url).__name__}")
    from .redact import mask_url

    text = url.strip()
    shown = mask_url(text)
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text) or not text:
        raise ConfigurationError(f"{source}: the proxy URL {shown!r} is empty or has spaces or control characters")
    if "://" not in text:
        if source == "proxy=":
            raise ConfigurationError(f"proxy= {shown!r} has no scheme: write http://{shown}")
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"{source}: the proxy URL {shown!r} is not valid ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ConfigurationError(
            f"{source}: the proxy URL {shown!r} has scheme {scheme!r}; use http://, https:// or socks5://"
        )
    host = parts.hostname
    if not host:
        raise ConfigurationError(f"{source}: the proxy URL {shown!r} names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigurationError(f"{source}: the proxy URL {shown!r} has a path or query; give scheme://host:port")
    if port is None:
        port = 1080 if scheme.startswith("socks") else DEFAULT_PORTS[scheme]
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return ProxyURL(scheme, host, port, username, password, text)


def is_loopback(host: str) -> bool:
    """``localhost``, a name under ``.localhost``, 127.0.0.0/8 or ``::1``."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    if not name or not (name[0].isdigit() or ":" in name):
        return False
    import ipaddress

    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class NoProxy:
    """The hosts ``NO_PROXY`` exempts from the environment's proxy."""

    __slots__ = ("everything", "names", "nets")

    def __init__(self, value: str) -> None:
        self.everything = False
        self.names: list[tuple[str, int | None]] = []
        self.nets: list[tuple[Any, int | None]] = []
        for raw in value.replace(",", " ").split():
            entry = raw.strip().lower()
            if entry == "*":
                self.everything = True
                continue
            host, port = _split_port(entry)
            net = _network(host)
            if net is not None:
                self.nets.append((net, port))
            elif host:
                self.names.append((host.lstrip("*").lstrip(".").rstrip("."), port))

    def __bool__(self) -> bool:
        return self.everything or bool(self.names) or bool(self.nets)

    def matches(self, host: str, port: int) -> bool:
        if self.everything:
            return True
        name = host.strip("[]").lower().rstrip(".")
        for entry, want in self.names:
            if (want is None or want == port) and entry and (name == entry or name.endswith("." + entry)):
                return True
        if self.nets:
            import ipaddress

            try:
                address = ipaddress.ip_address(name)
            except ValueError:
                return False
            return any((want is None or want == port) and address in net for net, want in self.nets)
        return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        host, _, port = entry.partition(":")
        return host, int(port) if port.isdigit() else None
    return entry, None


def _network(host: str) -> Any:
    if not host or not (host[0].isdigit() or ":" in host):
        return None
    import ipaddress

    try:
        return ipaddress.ip_network(host, strict=False)
    except ValueError:
        return None


_TRUST_HINT = (
    "if a proxy or your network re-signs TLS, trust its CA: verify='/path/to/ca.pem' (WorkersAI or "
    "AsyncWorkersAI) or SSL_CERT_FILE=/path/to/ca.pem"
)


def _untrusted(reason: str) -> bool:
    low = reason.lower()
    return "certificate verify failed" in low or "certificate_verify_failed" in low


def proxy_failure(via: ProxyURL | None, reason: str, status: int | None = None) -> APIConnectionError:
    """A proxy that is down, refuses the tunnel (``status``: its answer to CONNECT, 407, 403, 502...) or
    fails TLS: the error names it.

    The request never reached the target. A 407 or 403 is not retried (the same credentials would be
    refused again); a proxy that is down or answers 5xx may be.
    """
    shown = via.shown if via is not None else "(unknown)"
    if status is not None:
        hint = "; check the user and password in the proxy URL" if status == 407 else ""
        return APIConnectionError(
            f"the proxy {shown} refused the tunnel ({reason}){hint}",
            request_sent=False,
            retryable=status not in (403, 407),
        )
    if _untrusted(reason):
        return APIConnectionError(
            f"the TLS certificate of the proxy {shown} is not trusted ({reason}); {_TRUST_HINT}",
            request_sent=False,
            retryable=False,
        )
    return APIConnectionError(f"cannot connect to the proxy {shown}: {reason}", request_sent=False)


_TUNNEL_REFUSED = r"Tunnel connection failed: (\d{3}) "  # compiled (and cached by re) on first use, not at import


def tunnel_status(exc: BaseException) -> int | None:
    """The status a proxy refused a CONNECT with, when urllib3 reports it: http.client raises the refusal
    as ``OSError("Tunnel connection failed: 407 ...")``, its only form, which urllib3 wraps. Read here,
    from that exception, once; every other driver hands :func:`proxy_failure` the status it got."""
    seen: BaseException | None = exc
    for _ in range(4):  # ProxyError(.original_error) / MaxRetryError(.reason) / __cause__, a few deep
        if seen is None:
            break
        if type(seen) is OSError and seen.args and isinstance(seen.args[0], str):
            got = re.match(_TUNNEL_REFUSED, seen.args[0] + " ")
            if got is not None:
                return int(got.group(1))
        inner = getattr(seen, "original_error", None) or getattr(seen, "reason", None) or seen.__cause__
        seen = inner if isinstance(inner, BaseException) else None
    return None


def tls_failure(url: str, reason: str, via: ProxyURL | None) -> APIConnectionError:
    """A TLS handshake with the target that failed: nothing was sent. An untrusted certificate says
    whose it is and how to trust the CA that signed it."""
    host = url.split("/")[2] if "://" in url else url
    if _untrusted(reason):
        through = f" (reached through the proxy {via.shown})" if via is not None else ""
        return APIConnectionError(
            f"the TLS certificate of {host} is not trusted{through}: {reason}; {_TRUST_HINT}",
            request_sent=False,
            retryable=False,
        )
    return APIConnectionError(f"TLS failed: {reason}", request_sent=False, retryable=False)
