"""What must never be shown: the one rule for masking secrets in reprs, errors and log lines.

A header is secret when its name looks like a credential (``authorization``, ``cf-aig-authorization``,
``proxy-authorization``, anything naming a token, key, secret, password, cookie or signature); a URL's
``user:password@`` keeps the user and loses the password. Every place that shows options, headers or a
proxy URL to a person goes through these functions.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["MASK", "is_secret_name", "mask_headers", "mask_url", "scrub"]

MASK = "***"
_SECRET_WORDS = ("authorization", "token", "key", "secret", "password", "passwd", "cookie", "signature", "credential")


def is_secret_name(name: str) -> bool:
    """Whether a header (or option) named ``name`` holds a credential."""
    low = name.lower()
    return any(word in low for word in _SECRET_WORDS)


def mask_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """``headers`` with the value of every secret-named header replaced by ``***``."""
    if headers is None:
        return None
    return {k: (MASK if is_secret_name(k) else v) for k, v in headers.items()}


def mask_url(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part (if any) replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at:
        return url
    user, colon, _ = userinfo.partition(":")
    masked = f"{user}:{MASK}" if colon else user
    return f"{scheme}{sep}{masked}@{host}{slash}{path}"


def scrub(text: str) -> str:
    """``text`` (an error message, a log argument) with every ``//user:password@`` password and every
    ``Bearer <credential>`` replaced by ``***``; text without either is returned as it is."""
    if "@" not in text and "earer " not in text:
        return text
    import re

    text = re.sub(r"(//[^/\s:@]*):[^/\s@]*@", rf"\1:{MASK}@", text)
    return re.sub(r"(?i)(bearer\s+)[^\s'\",;]+", rf"\1{MASK}", text)
