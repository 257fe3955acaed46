"""Integration tests: real Scrapy crawls (one process each) of a local generated site.

Each test asserts the delivery contract of the Scrapy layer: every item the spider
yields reaches the item pipelines exactly once, whatever ends the crawl.
"""
from __future__ import annotations

import collections
import os

import pytest

from sst_cleaner.site_models import model_filename


def _assert_exactly_once(result: dict) -> None:
    yielded = collections.Counter(result["yielded"])
    received = collections.Counter(r["id"] for r in result["received"])
    assert yielded, "the spider yielded nothing: the test proves nothing"
    assert max(yielded.values()) == 1
    missing, extra = yielded - received, received - yielded
    assert not missing and not extra, f"missing={list(missing)[:5]} extra={list(extra)[:5]}"


def _sst(result: dict, key: str) -> float:
    return result["stats"].get(f"sst/{key}", 0)


def test_normal_end_every_item_once_and_cleaned(demo_server, run_crawl):
    result = run_crawl(url=demo_server.url, kinds=["dict", "item"])
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert len(result["yielded"]) == 60  # 30 articles x 2 items
    assert _sst(result, "models_built") == 1
    assert _sst(result, "items_held") > 0
    assert _sst(result, "items_held") == _sst(result, "items_released")
    assert all(r["text"] for r in result["received"])
    assert "sst: model built for site 127.0.0.1 from 5 pages" in result["log"]


def test_closespider_pagecount_flushes_held_items(demo_server, run_crawl):
    # the sample (50) is never reached: every item is still held when the crawl is closed
    result = run_crawl(url=demo_server.url, settings={"CLOSESPIDER_PAGECOUNT": 12, "SST_SAMPLE_PAGES": 50})
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "closespider_pagecount"
    assert _sst(result, "items_flushed_at_close") > 0
    assert all(r["text"] for r in result["received"])


def test_closespider_itemcount(demo_server, run_crawl):
    # one "site" per section: some sites get models and release, others still hold
    result = run_crawl(url=demo_server.url, settings={
        "CLOSESPIDER_ITEMCOUNT": 3, "SST_SAMPLE_PAGES": 3,
        "SST_SITE_KEY": "test_scrapy_runner.section_key"})
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "closespider_itemcount"
    assert len(result["yielded"]) > 3


def test_stopped_by_signal(demo_server, run_crawl):
    result = run_crawl(url=demo_server.url, sigint_after=10, kinds=["dict", "dataclass"],
                       settings={"SST_SAMPLE_PAGES": 50})
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "shutdown"
    assert _sst(result, "items_flushed_at_close") > 0


def test_tiny_held_bytes_bounds_memory(demo_server, run_crawl):
    bound = 20_000  # about three pages; the sample of 20 never fits
    result = run_crawl(url=demo_server.url, settings={"SST_MAX_HELD_BYTES": bound, "SST_SAMPLE_PAGES": 20})
    _assert_exactly_once(result)
    assert 0 < _sst(result, "peak_held_bytes") <= bound
    assert _sst(result, "evictions") > 0
    assert _sst(result, "fallback_cleans") > 0
    # only the end-of-crawl flush may fit the last hold, with the pages it has
    assert _sst(result, "models_built") <= 1
    assert all(r["text"] for r in result["received"])


def test_tiny_held_items_bound(demo_server, run_crawl):
    result = run_crawl(url=demo_server.url, settings={"SST_MAX_HELD_ITEMS": 2, "SST_SAMPLE_PAGES": 20})
    _assert_exactly_once(result)
    assert _sst(result, "peak_held_items") <= 2
    assert _sst(result, "evictions") > 0


def test_saved_models_are_reused(demo_server, run_crawl, tmp_path):
    model_dir = tmp_path / "models"
    settings = {"SST_MODEL_DIR": str(model_dir), "SST_SAMPLE_PAGES": 5}
    first = run_crawl(url=demo_server.url, settings=settings, max_pages=15)
    _assert_exactly_once(first)
    assert _sst(first, "models_built") == 1 and _sst(first, "models_saved") == 1
    assert os.listdir(model_dir) == [model_filename("127.0.0.1")]
    second = run_crawl(url=demo_server.url, settings=settings, max_pages=15)
    _assert_exactly_once(second)
    assert _sst(second, "models_loaded") == 1
    assert _sst(second, "models_built") == 0
    assert _sst(second, "items_held") == 0  # cleaning starts at once
    assert all(r["text"] for r in second["received"])


def test_non_html_and_pageless_items_pass_untouched(demo_server, run_crawl):
    resources = ["/static/logo.png", "/static/annual-report.pdf", "/api/latest.json"]
    result = run_crawl(url=demo_server.url, resources=resources, start_item=True, max_pages=3)
    _assert_exactly_once(result)
    by_id = {r["id"]: r for r in result["received"]}
    for path in resources:
        assert by_id["res:" + path]["text"] is None
    assert by_id["start-item"]["text"] is None
    assert _sst(result, "non_html_responses") == 3
    assert _sst(result, "items_passed_non_html") == 3
    # the pipeline finds no page for any of them: 3 non-HTML items + the start() item
    assert _sst(result, "items_without_page") == 4


def test_every_item_type(demo_server, run_crawl):
    kinds = ["dict", "item", "dataclass", "notext"]
    try:
        import attrs  # noqa: F401
        kinds.append("attrs")
    except ImportError:
        pass
    result = run_crawl(url=demo_server.url, kinds=kinds, max_pages=12)
    _assert_exactly_once(result)
    types = collections.defaultdict(list)
    for r in result["received"]:
        types[r["type"]].append(r["text"])
    expected = {"dict": "dict", "item": "PageItem", "dataclass": "DataclassItem", "attrs": "AttrsItem"}
    for kind, name in expected.items():
        if kind in kinds:
            assert types[name] and all(types[name]), name
    # the class without a `text` field: one clear error, items passed on, no crash
    assert types["NoTextItem"] and all(t is None for t in types["NoTextItem"])
    assert result["log"].count("has no field 'text'") == 1
    assert _sst(result, "items_missing_field") == len(types["NoTextItem"])


def test_disabled_addon_does_nothing(demo_server, run_crawl):
    result = run_crawl(url=demo_server.url, settings={"SST_ENABLED": False}, max_pages=5)
    _assert_exactly_once(result)
    assert not any(k.startswith("sst/") for k in result["stats"])
    assert all(r["text"] is None for r in result["received"])


def test_hold_timeout_fits_with_the_pages_it_has(demo_server, run_crawl):
    # the sample (50) is never reached, but a zero timeout fits the site at once
    result = run_crawl(url=demo_server.url, settings={"SST_HOLD_TIMEOUT": 0, "SST_SAMPLE_PAGES": 50})
    _assert_exactly_once(result)
    assert _sst(result, "hold_timeouts") >= 1
    assert _sst(result, "models_built") == 1
    assert "(timeout)" in result["log"]


def test_failed_flush_request_still_delivers(demo_server, run_crawl):
    # a downloader middleware refuses the idle flush's data: request: the held items must
    # still reach the pipelines, and the spider must still close
    result = run_crawl(url=demo_server.url, max_pages=10, settings={
        "SST_SAMPLE_PAGES": 50, "DOWNLOADER_MIDDLEWARES": {"test_scrapy_runner.BlockDataUrls": 1}})
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert _sst(result, "flushes") >= 1
    assert "held items sent to the item pipelines directly" in result["log"]


def test_source_field_html_is_cleaned_instead_of_the_response(demo_server, run_crawl):
    result = run_crawl(url=demo_server.url, kinds=["html"], max_pages=8, settings={"SST_SOURCE_FIELD": "html"})
    _assert_exactly_once(result)
    for r in result["received"]:
        assert r["expect"] in r["text"]
        assert "Ledger" not in r["text"]  # nothing of the crawled page itself
