"""Which proxy a connection goes through and which CAs it trusts: one rule for sync, async and realtime.

No I/O and no network library here: :class:`Network` is what a client resolved from ``proxy=``,
``trust_env=`` and ``verify=`` (and, with ``trust_env``, the environment) when it was made. The
transports ask it :meth:`Network.proxy_for` a URL (answered once per scheme, host and port, then from
a dict) and :meth:`Network.ssl_context` (``None`` when the library's default is right, so a client
without proxy or CA settings builds exactly the connections it built before).

The rules (docs/networks.md):

- ``proxy=`` wins: every connection goes through it, the environment's proxy variables are not read.
- With ``trust_env`` (the default): ``https``/``wss`` targets use ``HTTPS_PROXY``, ``http``/``ws``
  targets ``HTTP_PROXY``, either falls back to ``ALL_PROXY``; lower case wins over upper case (curl
  and Python's urllib do the same). ``HTTP_PROXY`` is ignored when ``REQUEST_METHOD`` is set: in a
  CGI program it is a request header an attacker chose ("httpoxy").
- A loopback host (``localhost``, ``*.localhost``, 127.0.0.0/8, ``::1``) never goes to a proxy taken
  from the environment (Go's rule): a global ``HTTPS_PROXY`` must not break local servers.
- ``NO_PROXY`` (comma or space separated): ``*`` (no proxy at all), host names (``example.com`` and
  ``.example.com`` both match ``example.com`` and its subdomains), IP addresses, CIDR ranges, each
  optionally with ``:port``.
- ``verify=``: a CA bundle file or a directory of hashed certificates (it replaces the system store,
  as in requests and httpx), or a ready ``ssl.SSLContext``. Without it and with ``trust_env``,
  ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as OpenSSL reads them; with ``trust_env=False`` they are kept
  out. There is no way to turn verification off.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from .._error_base import APIConnectionError, ConfigurationError

if TYPE_CHECKING:
    import ssl

__all__ = [
    "Network",
    "NoProxy",
    "ProxyURL",
    "is_loopback",
    "parse_proxy",
    "proxy_failure",
    "tls_failure",
    "tunnel_status",
]

_ENV_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}
_SCHEMES = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


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
        port = 1080 if scheme.startswith("socks") else _DEFAULT_PORTS[scheme]
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


def _env(environ: Mapping[str, str], name: str) -> str | None:
    # Lower case first: curl reads only http_proxy in lower case, and Python's urllib lets it win.
    return environ.get(name.lower()) or environ.get(name.upper()) or None


class Network:
    """A client's resolved proxy and CA settings (made once, when the client is made)."""

    __slots__ = (
        "_context",
        "_routes",
        "ca",
        "env_ca",
        "env_proxies",
        "explicit",
        "no_proxy",
        "proxied",
        "verify",
    )

    def __init__(
        self,
        proxy: str | None = None,
        trust_env: bool = True,
        verify: Any = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(trust_env, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("trust_env must be True or False")
        env: Mapping[str, str] = os.environ if environ is None else environ
        self.verify = verify
        self.explicit = parse_proxy(proxy, "proxy=") if proxy is not None else None
        self.env_proxies: dict[str, ProxyURL] = {}
        self.no_proxy = NoProxy("")
        if self.explicit is None and trust_env:
            for kind in ("https", "http", "all"):
                if kind == "http" and env.get("REQUEST_METHOD"):
                    value = env.get("http_proxy")  # HTTP_PROXY is a request header under CGI ("httpoxy")
                else:
                    value = _env(env, f"{kind}_proxy")
                if value:
                    self.env_proxies[kind] = parse_proxy(value, f"{kind.upper()}_PROXY")
            self.no_proxy = NoProxy(_env(env, "no_proxy") or "")
            if self.no_proxy.everything:
                self.env_proxies.clear()
        # Whether any connection can go through a proxy: when not, transports never ask proxy_for.
        self.proxied = self.explicit is not None or bool(self.env_proxies)
        self.ca = _ca_locations(verify, trust_env, env)
        # The environment's CA variables as they were when the client was made (see env_context).
        self.env_ca = (env.get("SSL_CERT_FILE"), env.get("SSL_CERT_DIR")) if trust_env and verify is None else None
        self._context: ssl.SSLContext | None = verify if _is_context(verify) else None
        self._routes: dict[str, ProxyURL | None] = {}

    def env_context(self) -> ssl.SSLContext | None:
        """:meth:`ssl_context`, or for a library whose default context was made when it was imported
        (aiohttp's), a context that follows ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as they were when
        this client was made. Built once per process for each pair of locations."""
        context = self.ssl_context()
        if context is not None or self.env_ca is None or self.env_ca == (None, None):
            return context
        cached = _ENV_CONTEXTS.get(self.env_ca)
        if cached is None:
            import ssl

            paths = ssl.get_default_verify_paths()
            cafile = self.env_ca[0] or paths.openssl_cafile  # as OpenSSL: each variable replaces its default
            capath = self.env_ca[1] or paths.openssl_capath
            cached = (
                ssl.create_default_context(
                    cafile=cafile if os.path.isfile(cafile) else None,
                    capath=capath if os.path.isdir(capath) else None,
                )
                if os.path.isfile(cafile) or os.path.isdir(capath)
                else ssl.create_default_context()
            )
            _ENV_CONTEXTS[self.env_ca] = cached
        return cached

    @property
    def verify_is_context(self) -> bool:
        return _is_context(self.verify)

    @property
    def proxies(self) -> list[ProxyURL]:
        """Every proxy a connection of this client may use."""
        return [self.explicit] if self.explicit is not None else list(self.env_proxies.values())

    def proxy_for(self, url: str) -> ProxyURL | None:
        """The proxy a request to ``url`` goes through, or None to connect directly."""
        if not self.proxied:
            return None
        start = url.find("//") + 2
        end = url.find("/", start)
        origin = url if end < 0 else url[:end]
        try:
            return self._routes[origin]
        except KeyError:
            pass
        route = self._route(origin)
        if len(self._routes) > 256:
            self._routes.clear()
        self._routes[origin] = route
        return route

    def _route(self, origin: str) -> ProxyURL | None:
        if self.explicit is not None:
            return self.explicit
        parts = urlsplit(origin)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        try:
            port = parts.port or _DEFAULT_PORTS.get(scheme, 443)
        except ValueError:
            return None
        if is_loopback(host) or self.no_proxy.matches(host, port):
            return None
        kind = "https" if scheme in ("https", "wss") else "http"
        return self.env_proxies.get(kind) or self.env_proxies.get("all")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The context every TLS connection uses; None: the library's default (the system store)."""
        if self._context is None and self.ca is not None:
            import ssl

            cafile, capath = self.ca
            try:
                self._context = ssl.create_default_context(cafile=cafile, capath=capath)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(f"cannot load the CA certificates {cafile or capath!r}: {exc}") from None
        return self._context


def _is_context(verify: object) -> bool:
    ssl_mod = sys.modules.get("ssl")  # no SSLContext can exist before ssl is imported
    return ssl_mod is not None and isinstance(verify, ssl_mod.SSLContext)


def _ca_locations(verify: Any, trust_env: bool, env: Mapping[str, str]) -> tuple[str | None, str | None] | None:
    """The CA file and directory to load, or None (the default store, or ``verify`` is a context)."""
    if isinstance(verify, bool):
        raise ConfigurationError(
            "verify= takes a CA bundle path or an ssl.SSLContext, not a bool: certificate checks cannot be "
            "turned off; pass the CA that signs the server's certificate (verify='/path/to/ca.pem')"
        )
    if verify is None:
        # With trust_env, the library's default context is right: OpenSSL itself reads SSL_CERT_FILE
        # and SSL_CERT_DIR when it loads the system store (urllib3, aiohttp and websockets all load
        # it), and lazily, on the first TLS connection. Loading a bundle here instead would cost
        # every client tens of milliseconds at construction, TLS or not.
        if not trust_env and (env.get("SSL_CERT_FILE") or env.get("SSL_CERT_DIR")):
            # OpenSSL reads these variables itself when it loads the system store: with
            # trust_env=False, load the store's compiled-in locations instead.
            import ssl

            paths = ssl.get_default_verify_paths()
            file = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
            folder = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
            if file or folder:
                return file, folder
        return None
    if _is_context(verify):
        return None
    if not isinstance(verify, (str, os.PathLike)):
        raise ConfigurationError(
            f"verify= takes a CA bundle path or an ssl.SSLContext, not {type(verify).__name__}"  # pyright: ignore[reportUnknownArgumentType]
        )
    path = os.fspath(verify)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if not isinstance(path, str):
        raise ConfigurationError("verify= must be a text path")
    if os.path.isfile(path):
        return path, None
    if os.path.isdir(path):
        return None, path
    raise ConfigurationError(f"verify={path!r}: no such CA bundle file or directory")


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
