"""Annotation text as HTML: markdown with raw HTML off, then sanitised (defence in depth).

markdown-it-py escapes any HTML a person types and refuses `javascript:`/`data:` link targets;
nh3 (ammonia) then keeps only an allow-list of tags and attributes and http(s)/mailto links, so
neither a renderer bug nor a future option can let a script, an event attribute or a script URL
through. Pure: no database, no request.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")

TAGS = {"p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li", "a",
        "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del"}
ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "ol": {"start"}}


def render(text: str) -> str:
    """Markdown -> safe HTML (links open nothing but http(s) and mailto, with rel=nofollow)."""
    return nh3.clean(
        _md.render(text), tags=TAGS, attributes=ATTRIBUTES, url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer", filter_style_properties={"text-align"},
    )
