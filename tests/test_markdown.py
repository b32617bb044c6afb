"""Annotation markdown renders inert: no script, no event attribute, no javascript: link survives."""

from html.parser import HTMLParser

import pytest

from runs.markdown import render


def elements(html: str) -> list[tuple[str, dict]]:
    """The tags a browser would build from the HTML, with their attributes (text is not a tag)."""
    found: list[tuple[str, dict]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Collect().feed(html)
    return found

HOSTILE = [
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)" onclick="alert(2)">x</a>',
    "![x](javascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<svg onload=alert(1)>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_renders_inert(text):
    for tag, attrs in elements(render(text)):
        assert tag not in ("script", "img", "svg", "iframe")
        assert not any(name.startswith("on") for name in attrs)
        assert not (attrs.get("href") or "http").lower().startswith(("javascript", "data"))


def test_markdown_keeps_emphasis_code_and_http_links_with_nofollow():
    html = render("**bold** `code` [docs](https://example.org/x)")
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert '<a href="https://example.org/x" rel="nofollow noopener noreferrer">docs</a>' in html


def test_event_attributes_are_text_not_attributes():
    html = render('<b onmouseover="alert(1)">x</b>')
    assert "<b" not in html and "&lt;b onmouseover" in html
