"""The proxy rule itself (``_core/network.py``), which sync, async and realtime all ask."""

from __future__ import annotations

import pickle

import pytest
from workers_ai._core.network import Network
from workers_ai._core.proxies import NoProxy, is_loopback, parse_proxy
from workers_ai.errors import ConfigurationError

P = "http://proxy.corp:3128"


def route(env: dict[str, str], url: str, **kw: object) -> str | None:
    found = Network(environ=env, **kw).proxy_for(url)  # type: ignore[arg-type]
    return None if found is None else found.shown


@pytest.mark.parametrize(
    ("host", "loop"),
    [
        ("localhost", True),
        ("LOCALHOST.", True),
        ("api.localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("::1", True),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("10.0.0.1", False),
        ("[::2]", False),
        ("example.com", False),
    ],
)
def test_loopback_hosts(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_environment_variables_by_scheme_and_case() -> None:
    env = {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2", "HTTP_PROXY": "http://plain:3"}
    assert route(env, "https://api.cloudflare.com/x") == "http://lower:2"  # lower case wins
    assert route(env, "wss://api.cloudflare.com/x") == "http://lower:2"
    assert route(env, "http://api.cloudflare.com/x") == "http://plain:3"
    assert route({"ALL_PROXY": P}, "https://a.b/x") == P and route({"all_proxy": P}, "ws://a.b/x") == P
    assert route({"HTTP_PROXY": P}, "https://a.b/x") is None  # an https target never takes HTTP_PROXY
    assert route({"HTTPS_PROXY": "proxy.corp:3128"}, "https://a.b/") == "http://proxy.corp:3128"  # as curl


def test_cgi_ignores_upper_case_http_proxy() -> None:
    assert route({"HTTP_PROXY": P, "REQUEST_METHOD": "GET"}, "http://a.b/") is None
    assert route({"http_proxy": P, "REQUEST_METHOD": "GET"}, "http://a.b/") == P


def test_loopback_rule_applies_to_the_environment_only() -> None:
    env = {"HTTPS_PROXY": P, "HTTP_PROXY": P}
    for url in ("http://127.0.0.1:8787/x", "https://localhost/x", "http://[::1]:80/x"):
        assert route(env, url) is None
        assert route({}, url, proxy=P) == P  # an explicit proxy= carries every connection


@pytest.mark.parametrize(
    ("no_proxy", "url", "direct"),
    [
        ("example.com", "https://example.com/", True),
        ("example.com", "https://api.example.com/", True),
        (".example.com", "https://example.com/", True),
        ("*.example.com", "https://a.b.example.com/", True),
        ("example.com", "https://badexample.com/", False),
        ("example.com:8443", "https://example.com:8443/", True),
        ("example.com:8443", "https://example.com/", False),
        ("10.1.2.3", "https://10.1.2.3/", True),
        ("10.0.0.0/8", "https://10.200.0.1:99/", True),
        ("10.0.0.0/8", "https://11.0.0.1/", False),
        ("fd00::/8", "https://[fd00::1]/", True),
        ("[fd00::1]:443", "https://[fd00::1]/", True),
        ("*", "https://anything.at.all/", True),
        ("  a.org ,b.org  c.org", "https://c.org/", True),
        ("", "https://example.com/", False),
    ],
)
def test_no_proxy_entries(no_proxy: str, url: str, direct: bool) -> None:
    assert (route({"HTTPS_PROXY": P, "NO_PROXY": no_proxy}, url) is None) is direct


def test_no_proxy_does_not_apply_to_an_explicit_proxy() -> None:
    assert route({"NO_PROXY": "*"}, "https://a.b/", proxy=P) == P


def test_a_network_without_proxies_never_routes() -> None:
    net = Network(environ={"NO_PROXY": "x"})
    assert not net.proxied and net.proxy_for("https://a.b/") is None and net.ssl_context() is None


def test_routes_are_decided_once_per_origin() -> None:
    net = Network(environ={"HTTPS_PROXY": P})
    first = net.proxy_for("https://api.example.com/a/b")
    assert net.proxy_for("https://api.example.com/other?q") is first
    assert list(net._routes) == ["https://api.example.com"]  # pyright: ignore[reportPrivateUsage]


def test_proxy_url_never_shows_its_password() -> None:
    proxy = parse_proxy("http://user:p%40ss@proxy:3128", "proxy=")
    assert proxy.password == "p@ss" and proxy.bare == "http://proxy:3128"
    assert "p%40ss" not in repr(proxy) and "p@ss" not in repr(proxy) and proxy.shown == "http://user:***@proxy:3128"
    assert proxy.scrub("failed for user:p%40ss and p@ss") == "failed for user:*** and ***"
    with pytest.raises(TypeError):
        pickle.dumps(proxy)


def test_bad_values() -> None:
    with pytest.raises(ConfigurationError, match="trust_env"):
        Network(trust_env="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="URL string"):
        Network(proxy=3128)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not a bool"):
        Network(verify=True)
    assert NoProxy("a, *").everything


def test_the_url_given_to_websockets_reads_as_our_rule_read_it() -> None:
    # websockets parses the URL again: a SOCKS proxy without a port, or a user without a password, must
    # reach it spelled out, so realtime sessions use the same proxy as REST calls.
    assert parse_proxy("socks5://h", "proxy=").canonical == "socks5://h:1080"
    assert parse_proxy("http://user@p:3128", "proxy=").canonical == "http://user:@p:3128"
    assert parse_proxy("http://u:p%40ss@[::1]:8080", "proxy=").canonical == "http://u:p%40ss@[::1]:8080"
    assert parse_proxy("https://p", "proxy=").canonical == "https://p:443"
