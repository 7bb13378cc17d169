"""Strings that simple regular expressions match, for ``pattern`` keywords the synthesizer must satisfy."""

from __future__ import annotations

import re

__all__ = ["regex_example"]


class _Regex:
    """Builds one string a (simple) regular expression matches: the shortest choice everywhere."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def build(self) -> str:
        out = self._alternation()
        if self.i != len(self.p):
            raise ValueError("unbalanced pattern")
        return out

    def _peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def _alternation(self) -> str:
        first = self._sequence()
        while self._peek() == "|":
            self.i += 1
            self._sequence()
        return first

    def _sequence(self) -> str:
        parts: list[str] = []
        while self.i < len(self.p) and self._peek() not in "|)":
            atom = self._atom()
            low = self._quantifier()
            parts.append(atom * low)
        return "".join(parts)

    def _quantifier(self) -> int:
        c = self._peek()
        low = 1
        if not c:
            return 1
        if c in "*?":
            low = 0
            self.i += 1
        elif c == "+":
            self.i += 1
        elif c == "{" and re.match(r"\{\d+(,\d*)?\}", self.p[self.i :]):
            m = re.match(r"\{(\d+)(,\d*)?\}", self.p[self.i :])
            assert m is not None
            low = int(m.group(1))
            self.i += m.end()
        else:
            return 1
        if self._peek() in ("?", "+"):
            self.i += 1
        return low

    def _atom(self) -> str:
        c = self._peek()
        self.i += 1
        if c == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?P<", self.i) or self.p.startswith("?<", self.i):
                self.i = self.p.index(">", self.i) + 1
            inner = self._alternation()
            if self._peek() != ")":
                raise ValueError("unclosed group")
            self.i += 1
            return inner
        if c == "[":
            return self._char_class()
        if c == "\\":
            return self._escape(in_class=False)
        if c in "^$":
            return ""
        if c == ".":
            return "a"
        return c

    def _escape(self, *, in_class: bool) -> str:
        c = self._peek()
        self.i += 1
        table = {"d": "0", "w": "a", "s": " ", "D": "a", "W": "-", "S": "a", "n": "\n", "t": "\t", "r": "\r"}
        if c in table:
            return table[c]
        if c in "bBAzZ" and not in_class:
            return ""
        return c

    def _char_class(self) -> str:
        negate = self._peek() == "^"
        if negate:
            self.i += 1
        members: list[str] = []
        first = True
        while self.i < len(self.p) and (self._peek() != "]" or first):
            first = False
            c = self._peek()
            self.i += 1
            if c == "\\":
                c = self._escape(in_class=True)
            if self._peek() == "-" and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                self.i += 1
                end = self._peek()
                self.i += 1
                if end == "\\":
                    end = self._escape(in_class=True)
                members.extend(chr(x) for x in range(ord(c), min(ord(end), ord(c) + 256) + 1))
            else:
                members.append(c)
        if self._peek() != "]":
            raise ValueError("unclosed class")
        self.i += 1
        if negate:
            for cand in "abcxyz0123456789-_ ":
                if cand not in members:
                    return cand
            raise ValueError("no character outside the class")
        return members[0] if members else ""


def regex_example(pattern: str) -> str | None:
    """A string ``re.search(pattern, s)`` accepts, or None when this simple builder cannot make one."""
    try:
        text = _Regex(pattern).build()
        if re.search(pattern, text):
            return text
    except (ValueError, re.error, IndexError):
        pass
    return None
