"""``/ai/tomarkdown`` in the emulator: multipart files in, one result per file out; honest conversions of
HTML, CSV, text, JSON and XML, and per-file errors for formats it cannot convert."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from workers_ai.testing import Emulator

from tests.emulator._calls import call, error, result

PAGE = b"""<!DOCTYPE html><html><head><title>Ignored</title><style>p{color:red}</style></head><body>
<h1>Llamas &amp; alpacas</h1>
<p>Both are <strong>camelids</strong>; see <a href="https://example.com/llama">the llama page</a>.</p>
<h2>Facts</h2>
<ul><li>Llamas are tall</li><li>Alpacas have soft wool<ol><li>first shearing</li><li>second</li></ol></li></ul>
<table><tr><th>Animal</th><th>Height (cm)</th></tr><tr><td>Llama</td><td>180</td></tr>
<tr><td>Alpaca | small</td><td>90</td></tr></table>
<script>alert("not text")</script></body></html>"""


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator() as emulator:
        yield emulator


def _convert(emu: Emulator, *files: tuple[str, bytes, str]) -> list[dict[str, Any]]:
    fields: Any = [("files", f) for f in files]  # urllib3 takes a list of (field, (name, data, type))
    out: list[dict[str, Any]] = result(call(emu, "POST", "ai/tomarkdown", fields=fields))
    return out


def test_html_becomes_headings_lists_links_and_a_table(emu: Emulator) -> None:
    [page] = _convert(emu, ("page.html", PAGE, "text/html"))
    assert page["name"] == "page.html" and page["mimeType"] == "text/html" and page["format"] == "markdown"
    expected = "\n".join(
        [
            "# Llamas & alpacas",
            "",
            "Both are **camelids**; see [the llama page](https://example.com/llama).",
            "",
            "## Facts",
            "",
            "- Llamas are tall",
            "- Alpacas have soft wool",
            "  1. first shearing",
            "  2. second",
            "",
            "| Animal | Height (cm) |",
            "| --- | --- |",
            "| Llama | 180 |",
            "| Alpaca \\| small | 90 |",
        ]
    )
    assert page["data"] == expected
    assert page["tokens"] > 10 and "alert" not in page["data"] and "Ignored" not in page["data"]


def test_csv_text_json_and_xml(emu: Emulator) -> None:
    csv_file = ("sales.csv", b"region,units\nnorth,10\nsouth,7\n", "text/csv")
    text_file = ("notes.txt", b"  plain words\nsecond line \n", "text/plain")
    json_file = ("data.json", b'{"b": [1, 2], "a": "x"}', "application/json")
    xml_file = ("feed.xml", b"<feed><item>1</item></feed>", "application/xml")
    table, text, data, feed = _convert(emu, csv_file, text_file, json_file, xml_file)
    assert table["data"] == "| region | units |\n| --- | --- |\n| north | 10 |\n| south | 7 |"
    assert text["data"] == "plain words\nsecond line" and text["mimeType"] == "text/plain"
    assert data["data"] == '```json\n{\n  "b": [\n    1,\n    2\n  ],\n  "a": "x"\n}\n```'
    assert feed["data"] == "```xml\n<feed><item>1</item></feed>\n```"
    assert all(r["format"] == "markdown" for r in (table, text, data, feed))


def test_pdf_images_and_office_files_are_per_file_errors(emu: Emulator) -> None:
    results = _convert(
        emu,
        ("report.pdf", b"%PDF-1.7\n...", "application/pdf"),
        ("ok.html", b"<p>still converted</p>", "text/html"),
        ("photo.png", b"\x89PNG\r\n\x1a\n", "image/png"),
        ("sheet.xlsx", b"PK\x03\x04", "application/octet-stream"),
        ("blob.bin", b"\x00\x01", "application/x-thing"),
    )
    assert [r["format"] for r in results] == ["error", "markdown", "error", "error", "error"]
    pdf, ok, png, xlsx, blob = results
    assert "emulator cannot convert application/pdf" in pdf["error"] and "data" not in pdf
    assert ok["data"] == "still converted"
    assert png["mimeType"] == "image/png" and "cannot convert" in png["error"]
    assert xlsx["mimeType"].endswith("spreadsheetml.sheet")  # named by its extension, not the sent type
    assert blob["error"] == "Unsupported file type: application/x-thing"


def test_supported_formats_and_missing_files(emu: Emulator) -> None:
    formats = result(call(emu, "GET", "ai/tomarkdown/supported"))
    pairs = {(f["extension"], f["mimeType"]) for f in formats}
    assert {(".html", "text/html"), (".csv", "text/csv"), (".pdf", "application/pdf")} <= pairs
    assert error(call(emu, "POST", "ai/tomarkdown", {"files": []}))[:2] == (400, 3003)  # JSON, not multipart
    assert error(call(emu, "POST", "ai/tomarkdown", fields={"other": "x"}))[:2] == (400, 3003)
    assert error(call(emu, "GET", "ai/tomarkdown"))[:2] == (405, 7001)
