"""Servers for the network tests: a TLS front and a forward proxy of our own, on 127.0.0.1.

The setup checks what a company network looks like from outside: the API's host name
(``api.example.invalid``) does not resolve on this machine; only the proxy knows where it is (it maps
the name to a TLS front on 127.0.0.1, which relays to the emulator). The front's certificate is signed
by a CA made for the test (``trustme``), which the client trusts only when told to (``verify=``,
``SSL_CERT_FILE``).

:class:`Proxy` speaks HTTP/1.1 forward proxying: ``CONNECT host:port`` (a tunnel whose bytes it cannot
read) and absolute-form requests for ``http://`` targets. It records everything it could read in clear
(``seen``), checks ``Proxy-Authorization`` when made with ``auth=`` (407 otherwise) and, with
``cut_after=``, drops a tunnel after that many bytes came back from the target; with ``refuse=``
(a status line such as ``"403 Forbidden"``), answers every CONNECT with it.

Only the standard library (and ``trustme`` for the certificates), so a fenced child can import it.
"""

from __future__ import annotations

import base64
import socket
import socketserver
import ssl
import threading
from pathlib import Path
from typing import Any

HOST = "api.example.invalid"  # .invalid never resolves (RFC 6761): only the proxy can reach it


def make_ca(folder: Path) -> tuple[Any, Path, Path, Path]:
    """A test CA, its PEM file, and the server's certificate chain and key for HOST / localhost / 127.0.0.1."""
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert(HOST, "localhost", "127.0.0.1")
    ca_file = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    chain = folder / "server.pem"
    key = folder / "server.key"
    cert.private_key_pem.write_to_path(str(key))
    with chain.open("wb") as out:
        for blob in cert.cert_chain_pems:
            out.write(blob.bytes())
    return ca, ca_file, chain, key


def _pipe(src: socket.socket, dst: socket.socket, limit: int | None = None, counter: list[int] | None = None) -> None:
    sent = 0
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if limit is not None and sent + len(data) > limit:
                dst.sendall(data[: limit - sent])
                break  # the tunnel is cut here
            dst.sendall(data)
            sent += len(data)
            if counter is not None:
                counter[0] += len(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _splice(client: socket.socket, upstream: socket.socket, cut_after: int | None = None) -> None:
    back = threading.Thread(target=_pipe, args=(upstream, client, cut_after), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join(30)
    client.close()
    upstream.close()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler: type[socketserver.BaseRequestHandler], owner: Any) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.owner = owner


class TLSFront:
    """TLS on 127.0.0.1 with the test certificate, relaying the plain bytes to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int], chain: Path, key: Path) -> None:
        self.upstream = upstream
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(str(chain), str(key))
        self.handshakes = 0  # TLS handshakes completed (a refused certificate completes none)
        self.received = 0  # bytes the front decrypted from clients

        class Handler(socketserver.BaseRequestHandler):
            def handle(inner) -> None:
                try:
                    tls = self.context.wrap_socket(inner.request, server_side=True)
                except (OSError, ssl.SSLError):
                    return
                self.handshakes += 1
                upstream = socket.create_connection(self.upstream)
                counter = [0]
                back = threading.Thread(target=_pipe, args=(upstream, tls), daemon=True)
                back.start()
                _pipe(tls, upstream, None, counter)
                self.received += counter[0]
                back.join(30)
                tls.close()
                upstream.close()

        self._server = _Server(Handler, self)
        self.port: int = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Proxy:
    """A forward proxy on 127.0.0.1 (CONNECT tunnels and absolute-form http requests)."""

    def __init__(
        self,
        hosts: dict[str, tuple[str, int]] | None = None,
        *,
        auth: str | None = None,
        cut_after: int | None = None,
        refuse: str | None = None,
    ) -> None:
        self.hosts = dict(hosts or {})  # "name:port" -> where it really is
        self.auth = auth
        self.refuse = refuse
        self.cut_after = cut_after
        self.seen: list[bytes] = []  # every byte the proxy read in clear (heads, forwarded bodies)
        self.tunnels: list[str] = []  # CONNECT targets it opened
        self.refused = 0  # 407 answers (and `refuse` ones)
        self.live: list[socket.socket] = []  # open tunnels' client sockets (cut_all drops them)

        class Handler(socketserver.StreamRequestHandler):
            rbufsize = 0  # unbuffered: nothing the client sends after the head is read ahead here

            def handle(inner) -> None:
                self._handle(inner.request, inner.rfile)

        self._server = _Server(Handler, self)
        self.port: int = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def url_with(self, user: str, password: str) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def cut_all(self) -> None:
        """Drop every open tunnel, as a proxy that restarts mid-reply does."""
        for conn in self.live:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def clear_text(self) -> bytes:
        return b"".join(self.seen)

    def _where(self, host: str, port: int) -> tuple[str, int]:
        return self.hosts.get(f"{host}:{port}", (host, port))

    def _handle(self, conn: socket.socket, rfile: Any) -> None:
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = rfile.readline(65537)
            if not line:
                return
            head += line
        self.seen.append(head)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if self.auth is not None:
            want = "Basic " + base64.b64encode(self.auth.encode()).decode()
            if headers.get("proxy-authorization") != want:
                self.refused += 1
                conn.sendall(
                    b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\n'
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
                return
        if method == "CONNECT" and self.refuse is not None:
            self.refused += 1
            conn.sendall(f"HTTP/1.1 {self.refuse}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            try:
                upstream = socket.create_connection(self._where(host.strip("[]"), int(port)), timeout=10)
            except OSError:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            upstream.settimeout(None)
            self.tunnels.append(target)
            self.live.append(conn)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _splice(conn, upstream, self.cut_after)
            return
        # An absolute-form request for an http:// target: forward it with an origin-form line.
        rest = target.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "80")
        body = b""
        length = int(headers.get("content-length", "0") or 0)
        if length:
            body = rfile.read(length)
            self.seen.append(body)
        kept = [
            line
            for line in lines[1:]
            if line and not line.lower().startswith(("proxy-authorization:", "connection:", "proxy-connection:"))
        ]
        forwarded = "\r\n".join([f"{method} /{path} HTTP/1.1", *kept, "Connection: close", "", ""]).encode("latin-1")
        try:
            upstream = socket.create_connection(self._where(host, int(port)), timeout=10)
        except OSError:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        upstream.settimeout(None)
        upstream.sendall(forwarded + body)
        _pipe(upstream, conn, self.cut_after)
        upstream.close()


def dead_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Socks5:
    """A SOCKS5 proxy on 127.0.0.1 (RFC 1928, CONNECT only; RFC 1929 user/password when ``auth`` is set)
    that alone knows where ``hosts`` are. Records the names clients asked for (``targets``) and what
    ``socks5h`` means: the client sent the name, not an address it resolved itself."""

    def __init__(self, hosts: dict[str, tuple[str, int]], *, auth: tuple[str, str] | None = None) -> None:
        self.hosts = dict(hosts)
        self.auth = auth
        self.targets: list[str] = []
        self.logins: list[tuple[str, str]] = []

        class Handler(socketserver.BaseRequestHandler):
            def handle(inner) -> None:
                self._handle(inner.request)

        self._server = _Server(Handler, self)
        self.port: int = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, conn: socket.socket) -> None:
        def take(n: int) -> bytes:
            data = b""
            while len(data) < n:
                part = conn.recv(n - len(data))
                if not part:
                    raise ConnectionError("client went away")
                data += part
            return data

        try:
            _version, count = take(2)
            methods = take(count)
            want = 2 if self.auth is not None else 0
            if want not in methods:
                conn.sendall(b"\x05\xff")
                return
            conn.sendall(bytes([5, want]))
            if want == 2:
                _v, ulen = take(2)
                user = take(ulen).decode()
                (plen,) = take(1)
                password = take(plen).decode()
                self.logins.append((user, password))
                ok = (user, password) == self.auth
                conn.sendall(b"\x01\x00" if ok else b"\x01\x01")
                if not ok:
                    return
            _v, _cmd, _rsv, kind = take(4)
            if kind == 1:
                host = socket.inet_ntoa(take(4))
            elif kind == 3:
                (length,) = take(1)
                host = take(length).decode()
            else:
                host = socket.inet_ntop(socket.AF_INET6, take(16))
            port = int.from_bytes(take(2), "big")
            self.targets.append(f"{host}:{port}")
            upstream = socket.create_connection(self.hosts.get(f"{host}:{port}", (host, port)), timeout=10)
            upstream.settimeout(None)
            conn.sendall(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
        except (ConnectionError, OSError):
            return
        _splice(conn, upstream)
