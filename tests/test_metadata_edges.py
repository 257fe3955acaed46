"""Metadata never costs a page its text, and stays bounded: a field that cannot be read
is dropped and counted, every field is capped, and the reading runs within the page's
time budget (in the library, the CLI and a crawl)."""

from __future__ import annotations

import json
import time

from conftest import crawl_in_subprocess, sst_stat

from sst_cleaner import SiteCleaner
from sst_cleaner.cli import main as cli_main

SENTENCE = "The lantern festival returned to the harbour after four quiet years of waiting."
BAD_DATE = '<meta name="date" content="1 Jan 99999999999999999999 00:00:00 +0000">'
BAD_URLS = '<meta property="og:url" content="http://[x/"><link rel="canonical" href="http://[x/">'


def page(head: str = "", body: str = "") -> str:
    return (
        f"<html><head><title>Harbour news</title>{head}</head>"
        f"<body><div><h1>Lanterns</h1><p>{SENTENCE}</p>{body}</div></body></html>"
    )


def test_unreadable_date_and_urls_drop_only_their_fields():
    for url in (None, "https://harbour.test/news/lanterns"):
        result = SiteCleaner().clean(page(BAD_DATE + BAD_URLS), url=url)
        assert SENTENCE in result.text
        md = result.metadata
        assert md["published"] is None and md["canonical_url"] is None
        assert md["title"] == "Harbour news"
        assert result.metadata_dropped >= 2  # the date, and the URL of each source
    # a bad og:url gives way to the canonical link, resolved against the page's URL
    good = BAD_URLS.replace('href="http://[x/"', 'href="/news/lanterns"')
    md = SiteCleaner().clean(page(good), url="https://harbour.test/a?b=1").metadata
    assert md["canonical_url"] == "https://harbour.test/news/lanterns"


def test_cli_writes_the_row_of_a_page_with_unreadable_metadata(tmp_path):
    (tmp_path / "a-hostile.html").write_text(page(BAD_DATE + BAD_URLS), encoding="utf-8")
    (tmp_path / "b-plain.html").write_text(page('<meta name="date" content="2024-03-01">'), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert cli_main(["clean", str(tmp_path), "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["path"].rsplit("/", 1)[-1] for r in rows] == ["a-hostile.html", "b-plain.html"]
    assert all(SENTENCE in r["text"] for r in rows)
    assert rows[0]["metadata"]["published"] is None and rows[1]["metadata"]["published"] == "2024-03-01"


def test_a_failing_metadata_reader_keeps_the_text(tmp_path, monkeypatch):
    from sst_cleaner.engine import _metadata

    def broken(page):
        raise RuntimeError("a bug in the metadata reader")

    monkeypatch.setattr(_metadata, "read_metadata", broken)
    result = SiteCleaner().clean(page('<meta name="author" content="Ann Lee">'))
    assert SENTENCE in result.text
    assert result.metadata["authors"] == [] and result.metadata["title"] == "Harbour news"
    assert result.metadata_dropped == len(_metadata.FIELDS)
    (tmp_path / "p.html").write_text(page(), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert cli_main(["clean", str(tmp_path / "p.html"), "-o", str(out)]) == 0
    row = json.loads(out.read_text(encoding="utf-8"))
    assert SENTENCE in row["text"] and row["metadata"]["title"] == "Harbour news"


def test_every_field_is_capped():
    huge = "word " * 490_000  # two 2.4 MB attributes, each named for several fields
    head = (
        f'<meta property="og:title" name="description" itemprop="author" http-equiv="content-language" content="{huge}">'
        f'<meta property="og:site_name" name="og:url" content="{huge}">'
    )
    result = SiteCleaner().clean(page(head))
    assert SENTENCE in result.text
    md = result.metadata
    assert len(json.dumps(md)) < 10_000
    from sst_cleaner.engine._metadata import FIELD_CAPS, MAX_AUTHORS

    for name in ("title", "description", "site_name"):
        assert 0 < len(md[name]) <= FIELD_CAPS[name]
    assert md["language"] is None and md["canonical_url"] is None and md["authors"] == []
    names = ", ".join(f"Author {i}" for i in range(100))
    jsonld = json.dumps({"@type": "NewsArticle", "headline": "h" * 200_000, "author": names})
    md = (
        SiteCleaner()
        .clean(page(f'<meta name="author" content="{names}"><script type="application/ld+json">{jsonld}</script>'))
        .metadata
    )
    assert len(md["title"]) == FIELD_CAPS["title"] and len(md["authors"]) == MAX_AUTHORS


def _cpu(fn):
    start = time.thread_time()
    value = fn()
    return value, time.thread_time() - start


def test_metadata_of_floods_costs_less_than_their_cleaning():
    floods = [
        "".join(f'<meta name="k{i}" content="v{i}">' for i in range(120_000)),
        "<time datetime='x'>a</time>" * 100_000,
        "<span rel='author'>a</span>" * 100_000,  # marked authors: the old XPath took minutes
        "".join(f'<script type="application/ld+json">{"[" * 3000}{"]" * 3000}</script>' for _ in range(50)),
    ]
    for flood in floods:
        result, clean_s = _cpu(lambda: SiteCleaner().clean(page(body=flood)))
        md, meta_s = _cpu(lambda: result.metadata)
        assert SENTENCE in result.text and md["title"] == "Harbour news"
        assert meta_s < max(clean_s, 0.05), (flood[:40], meta_s, clean_s)


def test_metadata_is_read_within_the_page_time_budget():
    # a budget spent by the parse already: the page comes back whole, its metadata unread
    result = SiteCleaner(page_time_budget=1e-9).clean(page('<meta name="author" content="Ann Lee">'))
    assert result.status == "over_budget" and SENTENCE in result.text
    assert result.metadata["authors"] == [] and result.metadata["title"] == "Harbour news"
    assert result.metadata_dropped == 8
    assert SiteCleaner().clean(page('<meta name="author" content="Ann Lee">')).metadata["authors"] == ["Ann Lee"]


def _hostile_crawl(tmp_path, demo_server, name: str, **settings) -> dict:
    settings = {
        "SST_METHOD": "default",
        "SST_SOURCE_FIELD": "html",
        "SST_METADATA_FIELD": "metadata",
        **settings,
    }
    return crawl_in_subprocess(
        tmp_path, name, url=demo_server.url, kinds=["hostile_meta"], settings=settings, max_pages=6
    )


def test_crawl_items_keep_their_text_when_metadata_cannot_be_read(demo_server, tmp_path):
    result = _hostile_crawl(tmp_path, demo_server, "hostile-meta")
    items = [r for r in result["received"] if r["expect"]]
    assert items
    for r in items:
        assert r["status"] != "error" and r["expect"] in r["text"]
        assert r["metadata"]["published"] is None and r["metadata"]["canonical_url"] is None
        assert r["metadata"]["title"] == "Harbour"
    assert sst_stat(result, "metadata_fields_dropped") >= 2 * len(items)


def test_crawl_items_keep_their_text_when_the_metadata_reader_fails(demo_server, tmp_path):
    result = _hostile_crawl(tmp_path, demo_server, "broken-meta", SST_WORKER_INIT="test_scrapy_runner.break_metadata")
    items = [r for r in result["received"] if r["expect"]]
    assert items
    for r in items:
        assert r["status"] != "error" and r["expect"] in r["text"]
        assert r["metadata"]["authors"] == [] and r["metadata"]["title"] == "Harbour"
    assert sst_stat(result, "metadata_fields_dropped") == 8 * len(items)  # every field, counted
