"""Which proxy a connection goes through and which CAs it trusts: one rule for sync, async and realtime.

No I/O and no network library here: :class:`Network` is what a client resolved from ``proxy=``,
``trust_env=`` and ``verify=`` (and, with ``trust_env``, the environment) when it was made. The
transports ask it :meth:`Network.proxy_for` a URL (answered once per scheme, host and port, then from
a dict) and :meth:`Network.ssl_context` (``None`` when the library's default is right, so a client
without proxy or CA settings builds exactly the connections it built before). The proxy rules
themselves (URL checks, ``NO_PROXY``, loopback) and the failure messages are :mod:`.proxies`, loaded only
for a client with a proxy or a connection that fails.

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
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._error_base import ConfigurationError

if TYPE_CHECKING:
    import ssl

    from .proxies import NoProxy, ProxyURL

__all__ = ["Network"]

_ENV_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


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
        self.explicit: ProxyURL | None = None
        self.env_proxies: dict[str, ProxyURL] = {}
        self.no_proxy: NoProxy | None = None  # read only when the environment names a proxy
        if proxy is not None:
            from .proxies import parse_proxy  # here and below: only a client with a proxy needs its rules

            self.explicit = parse_proxy(proxy, "proxy=")
        elif trust_env:
            for kind in ("https", "http", "all"):
                if kind == "http" and env.get("REQUEST_METHOD"):
                    value = env.get("http_proxy")  # HTTP_PROXY is a request header under CGI ("httpoxy")
                else:
                    value = _env(env, f"{kind}_proxy")
                if value:
                    from .proxies import parse_proxy

                    self.env_proxies[kind] = parse_proxy(value, f"{kind.upper()}_PROXY")
            if self.env_proxies:
                from .proxies import NoProxy

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
        from .proxies import DEFAULT_PORTS, is_loopback

        parts = urlsplit(origin)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        try:
            port = parts.port or DEFAULT_PORTS.get(scheme, 443)
        except ValueError:
            return None
        if is_loopback(host) or (self.no_proxy is not None and self.no_proxy.matches(host, port)):
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
