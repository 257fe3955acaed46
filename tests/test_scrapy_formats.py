"""The Scrapy layer writes the chosen format into the text field, each format and the
metadata into their own fields, and says once per site when a page was cut."""

from __future__ import annotations

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat
from lxml import html as lxml_html

from sst_cleaner.scrapy._settings import load_config, outputs_of


def test_format_settings_are_checked():
    assert load_config({}).format == "text" and outputs_of(load_config({})) == ()
    cfg = load_config({"SST_FORMAT": "Markdown", "SST_HTML_FIELD": "h", "SST_FORMAT_LINKS": True})
    assert outputs_of(cfg) == ("html", "links", "markdown")
    assert outputs_of(load_config({"SST_METADATA_FIELD": "meta"})) == ("metadata",)
    with pytest.raises(ValueError, match="SST_FORMAT"):
        load_config({"SST_FORMAT": "pdf"})


def test_crawl_writes_formats_metadata_and_logs_cuts_once(demo_server, tmp_path):
    settings = {
        "SST_METHOD": "default",
        "SST_SAMPLE_PAGES": 10,
        "SST_FORMAT": "markdown",
        "SST_MARKDOWN_FIELD": "markdown",
        "SST_HTML_FIELD": "html_out",
        "SST_METADATA_FIELD": "metadata",
        # every page of the site is cut: the warning must still come once
        "SST_PARAMS": {"max_tags": 100},
    }
    result = crawl_in_subprocess(tmp_path, "formats", url=demo_server.url, settings=settings, max_pages=14)
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    articles = [r for r in result["received"] if "/article/" in r["id"] and r["text"]]
    assert articles
    for r in articles:
        assert r["text"] == r["markdown"]  # SST_FORMAT: the text field holds the Markdown
        doc = lxml_html.fromstring(f"<div>{r['html']}</div>")
        assert not doc.xpath("//script|//style|//@onclick")
        assert r["metadata"]["language"] == "en" and r["metadata"]["title"]
    assert sst_stat(result, "pages_truncated") >= 2
    assert result["log"].count("was cut by a size cap") == 1
