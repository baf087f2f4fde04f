"""Turning untrusted text into safe screen output.

Everything a page shows that came from a user, a log, a note, a stored session or a contributed KB entry goes
through here (or through st.code / st.text, which never interpret their text):

- ``md_html(text)``: Markdown (KB prose: symptoms, cause, fix) -> HTML with raw HTML *disabled* (an HTML tag
  in the text is shown as text, not parsed), then cleaned by nh3 (ammonia) with a short allow-list: no
  script/style/iframe, no event handlers, links only to http(s)/mailto (a ``javascript:`` link loses its
  target).  The result is what ``st.markdown(..., unsafe_allow_html=True)`` receives; nothing else on the
  pages is passed with unsafe_allow_html.
- ``esc(text)``: HTML-escape plain text for use inside such HTML.
- ``highlight(text, spans)``: escaped text with the given character spans wrapped in <mark>.
- ``md_inline(text)``: plain text made safe for Streamlit's own Markdown (labels, captions): every Markdown
  and HTML special character escaped, so ``[x](javascript:...)`` or ``<b>`` shows literally.

No Streamlit import here, so tests check the functions directly.
"""
from __future__ import annotations

import html
import re
from typing import Iterable

import markdown as _markdown
import nh3

ALLOWED_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "code", "pre", "strong", "em", "a",
                "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "mark", "span", "div"}
ALLOWED_ATTRS = {"a": {"href", "title"}, "span": {"class"}, "div": {"class"}, "mark": {"class"},
                 "th": {"align"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}


def _md() -> _markdown.Markdown:
    md = _markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists"])
    # raw HTML is not Markdown we accept: without these two steps a "<script>" in an entry is kept as text
    for reg, name in ((md.preprocessors, "html_block"), (md.inlinePatterns, "html"),
                      (md.inlinePatterns, "entity")):
        if name in reg:
            reg.deregister(name)
    # autolinks "<https://...>" are fine (the URL is checked by nh3 afterwards); keep them
    return md


def clean_html(fragment: str) -> str:
    """nh3 with the allow-list above; a javascript:/data: URL loses its href, event handlers are dropped."""
    return nh3.clean(fragment, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRS, url_schemes=URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow")


def md_html(text: str | None) -> str:
    """Untrusted Markdown -> safe HTML (see the module docstring)."""
    if not text:
        return ""
    body = clean_html(_md().convert(str(text)))
    # Streamlit parses what st.markdown gets as Markdown once more; one HTML block without blank lines is
    # passed through untouched (CommonMark HTML block), so newlines inside <pre> become character references
    body = re.sub(r"<pre>.*?</pre>", lambda m: m.group(0).replace("\n", "&#10;"), body, flags=re.S)
    body = re.sub(r"\n\s*\n", "\n", body)
    return '<div class="gd-md">' + body + "</div>"


def esc(text: object) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def highlight(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """Escape *text* and wrap the (start, end) character spans in <mark>; overlapping spans are merged."""
    merged: list[list[int]] = []
    for a, b in sorted((max(0, a), min(len(text), b)) for a, b in spans):
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, pos = [], 0
    for a, b in merged:
        out.append(esc(text[pos:a]))
        out.append("<mark>" + esc(text[a:b]) + "</mark>")
        pos = b
    out.append(esc(text[pos:]))
    return "".join(out)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#!|~:$&])")


def md_inline(text: object, limit: int = 300) -> str:
    """Plain text for a Streamlit label/caption (which are Markdown): every special character escaped,
    newlines flattened, long text cut."""
    s = "" if text is None else str(text)
    s = " ".join(s.split())
    if len(s) > limit:
        s = s[:limit - 1] + "…"
    # Streamlit turns ":material/name:" into an icon after parsing, so an escape does not stop it; a zero-width
    # space does (an icon is harmless, but user text should read as it was written)
    s = s.replace(":material/", ":\u200bmaterial/")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    # a label starting like a list item or a heading would turn into one
    s = re.sub(r"^(\d+)([.)])", r"\1\\\2", s)
    return re.sub(r"^([-+=])", r"\\\1", s)


def short(text: object, limit: int = 120) -> str:
    s = " ".join(("" if text is None else str(text)).split())
    return s if len(s) <= limit else s[:limit - 1] + "…"
