"""result.metadata from each source a page may carry, in the order of trust."""

from __future__ import annotations

import json

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._metadata import FIELDS, extract_metadata, parse_date

JSONLD = {
    "@context": "https://schema.org",
    "@graph": [
        {"@type": "WebSite", "name": "Harbor Gazette", "inLanguage": "en-GB"},
        {
            "@type": ["NewsArticle"],
            "headline": "Lanterns return to the harbor",
            "author": [{"@type": "Person", "name": "Ann Lee"}, "Bo Chen"],
            "datePublished": "2024-03-01T09:30:00+01:00",
            "dateModified": "2024-03-02",
            "description": "The lantern festival is back.",
        },
    ],
}


def page(head: str = "", body: str = "<p>Body text of the article.</p>", lang: str = "") -> str:
    return f"<html{lang}><head><title>Doc title | Site</title>{head}</head><body>{body}</body></html>"


def test_jsonld_first():
    head = (
        f'<script type="application/ld+json">{json.dumps(JSONLD)}</script>'
        '<meta property="og:title" content="OG title"><meta name="author" content="Meta Author">'
        '<link rel="canonical" href="/news/lanterns">'
    )
    md = extract_metadata(page(head), url="https://gazette.test/news/lanterns?utm=x")
    assert md == {
        "title": "Lanterns return to the harbor",
        "authors": ["Ann Lee", "Bo Chen"],
        "published": "2024-03-01T09:30:00+01:00",
        "modified": "2024-03-02",
        "language": "en-GB",
        "canonical_url": "https://gazette.test/news/lanterns",
        "site_name": "Harbor Gazette",
        "description": "The lantern festival is back.",
    }


def test_opengraph_then_meta_then_document():
    head = (
        '<meta property="og:title" content="OG title"><meta property="og:site_name" content="OG Site">'
        '<meta property="article:published_time" content="2023-12-24T18:00:00Z">'
        '<meta name="author" content="Cy Dee, Eve Fox"><meta name="description" content="Meta description">'
        '<meta property="og:locale" content="fr_FR">'
    )
    md = extract_metadata(page(head))
    assert md["title"] == "OG title" and md["site_name"] == "OG Site"
    assert md["published"] == "2023-12-24T18:00:00+00:00" and md["authors"] == ["Cy Dee", "Eve Fox"]
    assert md["description"] == "Meta description" and md["language"] == "fr-FR"
    bare = extract_metadata(page(body='<p>x</p><time datetime="2022/05/06">May 6</time>', lang=' lang="de"'))
    assert bare["title"] == "Doc title | Site" and bare["language"] == "de" and bare["published"] == "2022-05-06"
    assert bare["authors"] == [] and bare["modified"] is None and bare["canonical_url"] is None


def test_bad_markup_gives_empty_fields_not_errors():
    head = (
        '<script type="application/ld+json">{"@type": "Article", "headline": </script>'
        '<script type="application/ld+json">' + "[" * 5000 + "]" * 5000 + "</script>"
        '<meta name="date" content="2024-02-30"><meta name="author" content="https://x.test/me">'
    )
    md = extract_metadata(page(head))
    assert md["published"] is None and md["authors"] == [] and set(md) == set(FIELDS)
    assert extract_metadata(b"\xff\xfe garbage \x00")["title"] is None
    assert extract_metadata("") == extract_metadata(None)


def test_dates():
    assert parse_date("Fri, 01 Mar 2024 09:30:00 GMT") == "2024-03-01T09:30:00+00:00"
    assert parse_date("20240301") == "2024-03-01" and parse_date("2024-13-01") is None
    assert parse_date("yesterday") is None


def test_result_metadata_from_the_cleaned_page():
    html = page(f'<script type="application/ld+json">{json.dumps(JSONLD)}</script>')
    result = SiteCleaner().clean(html.encode("utf-8"), url="https://gazette.test/a")
    assert result.metadata["authors"] == ["Ann Lee", "Bo Chen"]
    assert SiteCleaner().clean(page()).metadata["title"] == "Doc title | Site"
