"""The demo site: a generated news site with article and listing templates and gold text.

Everything is a pure function of ``seed``: the same seed gives byte-identical pages, so
gold text, tests and benchmarks are reproducible. Pages carry what real sites carry
around their content: cookie banner, header navigation, breadcrumb, a sidebar whose
"Most read" list and ad change from page to page, a newsletter box, "Related articles"
and a footer; plus invisible script/style and a few non-HTML resources.
"""

from __future__ import annotations

import html
import json
import random
import zlib
from dataclasses import dataclass, field
from typing import Optional

from sst_cleaner.tools.demo import words as W

_STYLE = (
    "body{font-family:Georgia,serif;margin:0}.layout{display:flex}main{flex:3}"
    "aside{flex:1}.cookie{position:fixed;bottom:0}"
)
_SCRIPT = "window.dataLayer=window.dataLayer||[];dataLayer.push({page:'%s'});"


def _tiny_png() -> bytes:
    """A valid 1x1 PNG (the site logo), built by hand so no file ships with the package."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big")

    ihdr = (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    idat = zlib.compress(b"\x00\xff\xcc\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>"
    b"endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


@dataclass
class Article:
    slug: str
    section: str
    title: str
    author: str
    date: str
    paragraphs: list[str]
    related: list[int] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"/article/{self.slug}.html"


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "ch", "sh", "x")):
        return noun + "es"
    return noun + "s"


def _a(word: str) -> str:
    """'a' or 'an' before ``word``."""
    return ("an " if word[:1] in "aeiou" else "a ") + word


class Prose:
    """Seeded sentence generator over the word lists of :mod:`words`."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def _pick(self, seq: list[str]) -> str:
        return self.rng.choice(seq)

    def name(self) -> str:
        return f"{self._pick(W.FIRST_NAMES)} {self._pick(W.LAST_NAMES)}"

    def sentence(self) -> str:
        p, r = self._pick, self.rng
        forms = [
            lambda: (
                f"{self.name()}, {_a(p(W.ADJECTIVES))} {p(W.ROLES)} from {p(W.PLACES)}, said the "
                f"{p(W.NOUNS)} had been {p(W.VERBS_PAST)} by {_a(p(W.ADJECTIVES))} {p(W.NOUNS)}."
            ),
            lambda: (
                f"The {p(W.ADJECTIVES)} {p(W.NOUNS)} {p(W.VERBS_PAST)} the {p(W.NOUNS)} near the "
                f"{p(W.NOUNS)} of {p(W.PLACES)}."
            ),
            lambda: (
                f"By {p(W.MONTHS)}, {p(W.NUMBERS)} {_plural(p(W.NOUNS))} had been {p(W.VERBS_PAST)} across "
                f"{p(W.PLACES)}, according to {p(W.ORGS).strip()}."
            ),
            lambda: (
                f"Few {_plural(p(W.NOUNS))} {p(W.VERBS_PRESENT)} as {p(W.ADVERBS)} as the {p(W.ADJECTIVES)} "
                f"{p(W.NOUNS)} in {p(W.PLACES)}."
            ),
            lambda: (
                f"{p(W.ADVERBS).capitalize()}, the {p(W.NOUNS)} {p(W.VERBS_PAST)} {_a(p(W.ADJECTIVES))} "
                f"{p(W.NOUNS)} and {p(W.VERBS_PAST)} the {p(W.NOUNS)}."
            ),
            lambda: f"\u201cWe {p(W.VERBS_PAST)} the {p(W.NOUNS)} {p(W.ADVERBS)},\u201d said {self.name()}.",
            lambda: (
                f"In {p(W.PLACES)} the {_plural(p(W.NOUNS))} {p(W.VERBS_PRESENT)} each {p(W.MONTHS)}, "
                f"when the {p(W.ADJECTIVES)} {p(W.NOUNS)} is {p(W.VERBS_PAST)} again."
            ),
        ]
        return r.choice(forms)()

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 5)))

    def title(self) -> str:
        p = self._pick
        forms = [
            lambda: f"How {p(W.PLACES)} {p(W.VERBS_PAST)} its {p(W.ADJECTIVES)} {p(W.NOUNS)}",
            lambda: f"The {p(W.NOUNS)} that {p(W.VERBS_PAST)} {_a(p(W.NOUNS))}",
            lambda: f"{p(W.ADJECTIVES).capitalize()} {_plural(p(W.NOUNS))} return to {p(W.PLACES)}",
            lambda: f"Inside the {p(W.ADJECTIVES)} {p(W.NOUNS)} of {p(W.PLACES)}",
        ]
        return self.rng.choice(forms)()


class DemoSite:
    """All pages of the site, addressable by path, with gold text per HTML page.

    ``n_articles`` article pages spread over six sections; each section has listing pages
    of ``per_listing`` teasers; the home page lists the newest articles.
    """

    def __init__(self, seed: int = 7, n_articles: int = 60, per_listing: int = 10):
        self.seed = seed
        rng = random.Random(seed)
        prose = Prose(rng)
        self.articles: list[Article] = []
        used: set[str] = set()
        for i in range(n_articles):
            title = prose.title()
            slug = "-".join(title.lower().split())[:60] + f"-{i}"
            used.add(slug)
            section = W.SECTIONS[i % len(W.SECTIONS)][0]
            day = 1 + (i * 7) % 28
            self.articles.append(
                Article(
                    slug=slug,
                    section=section,
                    title=title,
                    author=prose.name(),
                    date=f"{day} {W.MONTHS[i % 12]} 2026",
                    paragraphs=[prose.paragraph() for _ in range(rng.randint(3, 7))],
                )
            )
        n = len(self.articles)
        for i, art in enumerate(self.articles):
            art.related = [j for j in rng.sample(range(n), min(5, n)) if j != i][:4]
        self.per_listing = per_listing
        self._rng_seed = seed
        self._pages: dict[str, str] = {}
        self._gold: dict[str, str] = {}
        self._build_pages()

    # -- public ------------------------------------------------------------------------------
    @property
    def paths(self) -> list[str]:
        """Every HTML page path."""
        return list(self._pages)

    @property
    def article_paths(self) -> list[str]:
        return [a.path for a in self.articles]

    def page(self, path: str) -> Optional[str]:
        return self._pages.get(path)

    def gold(self, path: str) -> Optional[str]:
        """The main content of a page: article title and body, or a listing's teasers."""
        return self._gold.get(path)

    def resource(self, path: str) -> Optional[tuple[bytes, str]]:
        """(body, content type) of any path the server answers, or None (404)."""
        if path in self._pages:
            return self._pages[path].encode("utf-8"), "text/html; charset=utf-8"
        if path == "/static/logo.png":
            return _tiny_png(), "image/png"
        if path == "/static/annual-report.pdf":
            return _PDF, "application/pdf"
        if path == "/api/latest.json":
            latest = [{"title": a.title, "url": a.path} for a in self.articles[:5]]
            return json.dumps({"articles": latest}).encode("utf-8"), "application/json"
        return None

    # -- page building -----------------------------------------------------------------------
    def _build_pages(self) -> None:
        per = self.per_listing
        newest = self.articles[::-1]
        self._add_listing("/", "Latest stories", newest[:per], None, None)
        for slug, label in W.SECTIONS:
            arts = [a for a in newest if a.section == slug]
            pages = [arts[k : k + per] for k in range(0, len(arts), per)] or [[]]
            for k, chunk in enumerate(pages):
                path = self._listing_path(slug, k)
                prev_path = self._listing_path(slug, k - 1) if k > 0 else None
                next_path = self._listing_path(slug, k + 1) if k + 1 < len(pages) else None
                self._add_listing(path, label, chunk, prev_path, next_path, section=slug)
        for index, art in enumerate(self.articles):
            self._add_article(index, art)

    @staticmethod
    def _listing_path(slug: str, k: int) -> str:
        return f"/section/{slug}/" if k == 0 else f"/section/{slug}/page/{k + 1}/"

    def _page_rng(self, path: str) -> random.Random:
        return random.Random(f"{self._rng_seed}:{path}")

    def _chrome_top(self, title: str, path: str, crumbs: list[tuple[str, str]]) -> str:
        e = html.escape
        nav = "".join(f'<li><a href="/section/{s}/">{e(label)}</a></li>' for s, label in W.SECTIONS)
        crumb = " &rsaquo; ".join(f'<a href="{href}">{e(text)}</a>' for href, text in crumbs)
        return (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{e(title)} | {e(W.SITE_NAME)}</title>"
            f"<style>{_STYLE}</style><script>{_SCRIPT % e(path)}</script></head><body>"
            f'<div id="cookie-banner" class="cookie"><p>We use cookies to improve your reading experience '
            f'and to show personalised advertising.</p><a href="/privacy">Read our cookie policy</a> '
            f"<button>Accept all cookies</button></div>"
            f'<header class="site-header"><a class="logo" href="/"><img src="/static/logo.png" '
            f'alt="{e(W.SITE_NAME)}"> {e(W.SITE_NAME)}</a>'
            f'<nav class="main-nav"><ul><li><a href="/">Home</a></li>{nav}</ul></nav>'
            f'<form class="search" action="/search"><input name="q" placeholder="Search the Ledger">'
            f"<button>Search</button></form></header>"
            f'<div class="breadcrumb">{crumb}</div><div class="layout">'
        )

    def _sidebar(self, path: str) -> str:
        e = html.escape
        rng = self._page_rng(path)
        pool = self.articles[: min(12, len(self.articles))]
        start = rng.randrange(len(pool)) if pool else 0
        most = [pool[(start + k) % len(pool)] for k in range(min(5, len(pool)))]
        most_html = "".join(f'<li><a href="{a.path}">{e(a.title)}</a></li>' for a in most)
        ad = rng.choice(W.ADS)
        return (
            f'<aside class="sidebar"><div class="most-read"><h3>Most read</h3><ol>{most_html}</ol></div>'
            f'<div class="ad" data-slot="{rng.randrange(1000)}"><span class="ad-label">Advertisement</span>'
            f'<p>{e(ad)}</p><a href="/ads/click?id={rng.randrange(10**6)}">Learn more</a></div>'
            f'<div class="newsletter"><h3>Subscribe to the Morning Ledger newsletter</h3>'
            f"<p>Get the best stories in your inbox every morning, free of charge.</p>"
            f'<input name="email" placeholder="Your email"><button>Sign up</button></div></aside>'
        )

    def _footer(self) -> str:
        links = "".join(f'<li><a href="/about#{k}">{html.escape(t)}</a></li>' for k, t in enumerate(W.FOOTER_LINKS))
        return (
            f'</div><footer class="site-footer"><ul>{links}</ul>'
            f'<p><a href="/static/annual-report.pdf">Annual report (PDF)</a> &middot; '
            f'<a href="/api/latest.json">Latest stories feed</a></p>'
            f"<p>&copy; 2026 {html.escape(W.SITE_NAME)}. All rights reserved.</p></footer></body></html>"
        )

    def _add_listing(
        self,
        path: str,
        heading: str,
        arts: list[Article],
        prev_path: Optional[str],
        next_path: Optional[str],
        section: Optional[str] = None,
    ) -> None:
        e = html.escape
        crumbs = [("/", "Home")] + ([(f"/section/{section}/", heading)] if section else [])
        teasers, gold = [], [heading]
        for a in arts:
            summary = a.paragraphs[0].split(". ")[0].rstrip(".") + "."
            teasers.append(f'<div class="teaser"><h2><a href="{a.path}">{e(a.title)}</a></h2><p>{e(summary)}</p></div>')
            gold += [a.title, summary]
        pager = ""
        if prev_path or next_path:
            pager = (
                '<div class="pager">'
                + (f'<a href="{prev_path}">Newer stories</a> ' if prev_path else "")
                + (f'<a href="{next_path}">Older stories</a>' if next_path else "")
                + "</div>"
            )
        body = (
            self._chrome_top(heading, path, crumbs)
            + f'<main><section class="listing"><h1>{e(heading)}</h1>{"".join(teasers)}</section>'
            + pager
            + "</main>"
            + self._sidebar(path)
            + self._footer()
        )
        self._pages[path] = body
        self._gold[path] = "\n".join(gold)

    def _add_article(self, index: int, art: Article) -> None:
        e = html.escape
        label = dict(W.SECTIONS)[art.section]
        crumbs = [("/", "Home"), (f"/section/{art.section}/", label)]
        paras = "".join(f"<p>{e(p)}</p>" for p in art.paragraphs)
        related = "".join(
            f'<li><a href="{self.articles[j].path}">{e(self.articles[j].title)}</a></li>' for j in art.related
        )
        body = (
            self._chrome_top(art.title, art.path, crumbs) + f"<main><article><h1>{e(art.title)}</h1>"
            f'<p class="byline">By {e(art.author)} &middot; {e(art.date)}</p>'
            f'<div class="article-body">{paras}</div>'
            f'<div class="share">Share this story: <a href="#">Facebook</a> <a href="#">Email</a> '
            f'<a href="#">Copy link</a></div></article>'
            f'<section class="related"><h2>Related articles</h2><ul>{related}</ul></section></main>'
            + self._sidebar(art.path)
            + self._footer()
        )
        self._pages[art.path] = body
        self._gold[art.path] = "\n".join([art.title] + art.paragraphs)
