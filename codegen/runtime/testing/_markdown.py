"""``/ai/tomarkdown``: documents to Markdown, converted honestly with the standard library.

HTML (headings, paragraphs, lists, links, emphasis, code, tables), CSV (a table), plain text and
Markdown (as they are), JSON and XML (a fenced block). PDF, images and office files are formats the
API converts, but the emulator cannot without new dependencies: each such file gets an error result
saying so (never made-up text), and the other files of the request are still converted.
"""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from typing import Any

from ._multipart import Part, parse_form
from ._reply import APIError, Reply, json_reply

__all__ = ["SUPPORTED", "convert", "csv_to_markdown", "html_to_markdown", "mime_type_of", "supported", "to_markdown"]

SUPPORTED: tuple[tuple[str, str], ...] = (
    (".pdf", "application/pdf"),
    (".jpeg", "image/jpeg"),
    (".jpg", "image/jpeg"),
    (".png", "image/png"),
    (".webp", "image/webp"),
    (".svg", "image/svg+xml"),
    (".html", "text/html"),
    (".htm", "text/html"),
    (".xml", "application/xml"),
    (".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (".xlsm", "application/vnd.ms-excel.sheet.macroenabled.12"),
    (".xlsb", "application/vnd.ms-excel.sheet.binary.macroenabled.12"),
    (".xls", "application/vnd.ms-excel"),
    (".et", "application/vnd.ms-excel"),
    (".ods", "application/vnd.oasis.opendocument.spreadsheet"),
    (".odt", "application/vnd.oasis.opendocument.text"),
    (".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (".numbers", "application/vnd.apple.numbers"),
    (".csv", "text/csv"),
    (".txt", "text/plain"),
    (".md", "text/markdown"),
    (".json", "application/json"),
)
"""``(extension, MIME type)`` of every format ``/ai/tomarkdown/supported`` lists."""

_BY_EXTENSION: dict[str, str] = dict(SUPPORTED)
_KNOWN_TYPES = frozenset(_BY_EXTENSION.values()) | {"text/xml"}
_TEXT_TYPES = frozenset(
    {"text/html", "text/csv", "text/plain", "text/markdown", "application/json", "application/xml", "text/xml"}
)


def mime_type_of(part: Part) -> str:
    """The file's type: by its name's extension, else by the type its part declares."""
    name = (part.filename or "").lower()
    dot = name.rfind(".")
    if dot >= 0 and name[dot:] in _BY_EXTENSION:
        return _BY_EXTENSION[name[dot:]]
    declared = (part.content_type or "").lower()
    return declared if declared else "application/octet-stream"


def _tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def convert(part: Part) -> dict[str, Any]:
    """One file's result: ``format: "markdown"`` with ``data`` and ``tokens``, or ``format: "error"``."""
    name = part.filename or part.name
    mime = mime_type_of(part)
    base: dict[str, Any] = {"name": name, "mimeType": mime}
    if mime not in _KNOWN_TYPES:
        return {**base, "format": "error", "tokens": 0, "error": f"Unsupported file type: {mime}"}
    if mime not in _TEXT_TYPES:
        message = (
            f"The Workers AI emulator cannot convert {mime} files to Markdown (the API can); "
            "it converts HTML, CSV, plain text, Markdown, JSON and XML"
        )
        return {**base, "format": "error", "tokens": 0, "error": message}
    try:
        text = part.data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return {**base, "format": "error", "tokens": 0, "error": f"{name} is not valid UTF-8 text"}
    if mime == "text/html":
        markdown = html_to_markdown(text)
    elif mime == "text/csv":
        markdown = csv_to_markdown(text)
    elif mime == "application/json":
        markdown = _fenced("json", _pretty_json(text))
    elif mime in ("application/xml", "text/xml"):
        markdown = _fenced("xml", text.strip())
    else:
        markdown = text.strip()
    return {**base, "format": "markdown", "tokens": _tokens(markdown), "data": markdown}


def _fenced(language: str, text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{language}\n{text}\n{fence}"


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text.strip()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(rows: list[list[str]]) -> str:
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    padded = [[_cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + "|".join([" --- "] * width) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in padded[1:]]
    return "\n".join(lines)


def csv_to_markdown(text: str) -> str:
    """A Markdown table, the first row as its header."""
    try:
        dialect: Any = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    return _table([list(r) for r in csv.reader(io.StringIO(text), dialect)])


_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "blockquote",
        "figure",
        "figcaption",
        "address",
        "dl",
        "dt",
        "dd",
    }
)
_SKIP = frozenset({"script", "style", "head", "template", "noscript", "title"})
_INLINE = {"strong": "**", "b": "**", "em": "*", "i": "*", "code": "`", "del": "~~", "s": "~~"}


class _HtmlToMarkdown(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []  # (kind, markdown); list items join with one newline
        self.text: list[str] = []
        self.prefix = ""
        self.kind = "p"
        self.skip = 0
        self.lists: list[str] = []  # "ul" / "ol", innermost last
        self.counts: list[int] = []  # items so far in each open list
        self.links: list[str | None] = []
        self.pre: list[str] | None = None
        self.rows: list[list[str]] | None = None
        self.cell: list[str] | None = None

    def _sink(self) -> list[str]:
        return self.cell if self.cell is not None else self.text

    def flush(self) -> None:
        text = " ".join("".join(self.text).split())
        self.text = []
        if text:
            self.blocks.append((self.kind, self.prefix + text))
        self.prefix, self.kind = "", "p"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
            return
        if self.skip:
            return
        if self.pre is not None:
            return
        if re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.prefix = "#" * int(tag[1]) + " "
        elif tag in _BLOCKS or tag == "br":
            self.flush()
            if tag == "blockquote":
                self.prefix = "> "
        elif tag in ("ul", "ol"):
            self.flush()
            self.lists.append(tag)
            self.counts.append(0)
        elif tag == "li":
            self.flush()
            depth = max(0, len(self.lists) - 1)
            if not self.lists:  # an <li> outside any list
                self.lists.append("ul")
                self.counts.append(0)
            self.counts[-1] += 1
            marker = f"{self.counts[-1]}. " if self.lists[-1] == "ol" else "- "
            self.prefix, self.kind = "  " * depth + marker, "li"
        elif tag == "a":
            self.links.append(dict(attrs).get("href"))
            self._sink().append("[")
        elif tag in _INLINE:
            self._sink().append(_INLINE[tag])
        elif tag == "img":
            found = dict(attrs)
            self._sink().append(f"![{found.get('alt') or ''}]({found.get('src') or ''})")
        elif tag == "pre":
            self.flush()
            self.pre = []
        elif tag == "table":
            self.flush()
            self.rows = []
        elif tag == "tr" and self.rows is not None:
            self.rows.append([])
        elif tag in ("td", "th") and self.rows is not None:
            self.cell = []
        elif tag == "hr":
            self.flush()
            self.blocks.append(("p", "---"))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag == "pre" and self.pre is not None:
            body = "".join(self.pre).strip("\n")
            self.pre = None
            self.blocks.append(("p", _fenced("", body)))
        elif self.pre is not None:
            return
        elif re.fullmatch(r"h[1-6]", tag) or tag in _BLOCKS or tag == "li":
            self.flush()
        elif tag in ("ul", "ol"):
            self.flush()
            if self.lists:
                self.lists.pop()
                self.counts.pop()
            if not self.lists:
                self.blocks.append(("end", ""))  # the next list is a new block
        elif tag == "a":
            href = self.links.pop() if self.links else None
            self._sink().append(f"]({href})" if href else "]")
        elif tag in _INLINE:
            self._sink().append(_INLINE[tag])
        elif tag in ("td", "th") and self.rows is not None and self.cell is not None:
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table" and self.rows is not None:
            table = _table(self.rows)
            self.rows = None
            if table:
                self.blocks.append(("p", table))

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.pre is not None:
            self.pre.append(data)
        elif self.rows is not None and self.cell is None:
            return  # whitespace between table cells
        else:
            self._sink().append(data)

    def markdown(self) -> str:
        self.flush()
        out = ""
        previous = ""
        for kind, text in self.blocks:
            if not text:
                previous = kind
                continue
            if out:
                out += "\n" if kind == previous == "li" else "\n\n"
            out += text
            previous = kind
        return out


def html_to_markdown(text: str) -> str:
    parser = _HtmlToMarkdown()
    parser.feed(text)
    parser.close()
    return parser.markdown()


def to_markdown(content_type: str, body: bytes) -> Reply:
    """``POST /ai/tomarkdown``: every file field of the form converted, in order; 400/3003 without files."""
    try:
        parts = [p for p in parse_form(content_type, body) if p.filename is not None or p.name == "files"]
    except ValueError as exc:
        raise APIError(400, 3003, f"Request is missing headers or body: files ({exc})") from None
    if not parts:
        raise APIError(400, 3003, "Request is missing headers or body: files")
    return json_reply([convert(p) for p in parts])


def supported() -> Reply:
    """``GET /ai/tomarkdown/supported``."""
    return json_reply([{"extension": ext, "mimeType": mime} for ext, mime in SUPPORTED])
