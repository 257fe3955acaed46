"""Integration tests: real Scrapy crawls (one process each) of a local generated site.

Each test asserts the delivery contract of the Scrapy layer: every item the spider
yields reaches the item pipelines exactly once, whatever ends the crawl.

The crawls are independent processes, so they are all started together when the first
test needs one (a few at a time) and each test waits for its own: the file takes about
as long as its slowest crawls instead of the sum of all of them.
"""

from __future__ import annotations

import collections
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

from sst_cleaner.scrapy._model_files import model_filename

PARALLEL_CRAWLS = 4

try:
    import attrs  # noqa: F401

    HAVE_ATTRS = True
except ImportError:
    HAVE_ATTRS = False

RESOURCES = ["/static/logo.png", "/static/annual-report.pdf", "/api/latest.json"]
TYPE_KINDS = ["dict", "item", "dataclass", "notext"] + (["attrs"] if HAVE_ATTRS else [])
HELD_BYTES_BOUND = 20_000  # about three pages; a sample of 20 never fits

#: name -> crawl configuration (the server URL is added when they start)
CRAWLS = {
    "normal": dict(kinds=["dict", "item"], settings={"SST_SAMPLE_PAGES": 10}),
    "pagecount": dict(settings={"CLOSESPIDER_PAGECOUNT": 12, "SST_SAMPLE_PAGES": 50}),
    "itemcount": dict(
        settings={"CLOSESPIDER_ITEMCOUNT": 3, "SST_SAMPLE_PAGES": 3, "SST_SITE_KEY": "test_scrapy_runner.section_key"}
    ),
    "sigint": dict(sigint_after=10, kinds=["dict", "dataclass"], settings={"SST_SAMPLE_PAGES": 50}),
    "held_bytes": dict(settings={"SST_MAX_HELD_BYTES": HELD_BYTES_BOUND, "SST_SAMPLE_PAGES": 20}),
    "held_items": dict(
        kinds=["dict", "item", "dataclass"],  # 3 items a page, cap 2
        settings={"SST_MAX_HELD_ITEMS": 2, "SST_SAMPLE_PAGES": 20},
    ),
    "non_html": dict(resources=RESOURCES, start_item=True, max_pages=3),
    "types": dict(kinds=TYPE_KINDS, max_pages=12),
    "disabled": dict(settings={"SST_ENABLED": False}, max_pages=5),
    "timeout": dict(settings={"SST_HOLD_TIMEOUT": 0, "SST_SAMPLE_PAGES": 50}),
    "failed_flush": dict(
        max_pages=10,
        settings={"SST_SAMPLE_PAGES": 50, "DOWNLOADER_MIDDLEWARES": {"test_scrapy_runner.BlockDataUrls": 1}},
    ),
    "source_field": dict(
        kinds=["html"],
        max_pages=8,
        settings={"SST_SOURCE_FIELD": "html", "SST_SENTENCES_FIELD": "sentences", "SST_BLOCKS_FIELD": "blocks"},
    ),
}


def _reuse_pair(workdir, url: str) -> tuple[dict, dict]:
    """Two crawls in a row sharing SST_MODEL_DIR."""
    settings = {"SST_MODEL_DIR": str(workdir / "models"), "SST_SAMPLE_PAGES": 5}
    first = crawl_in_subprocess(workdir, "reuse-1", url=url, settings=settings, max_pages=15)
    second = crawl_in_subprocess(workdir, "reuse-2", url=url, settings=settings, max_pages=15)
    return first, second


@pytest.fixture(scope="module")
def crawls(demo_server, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("crawls")
    with ThreadPoolExecutor(max_workers=PARALLEL_CRAWLS) as pool:
        futures = {"reuse": pool.submit(_reuse_pair, workdir, demo_server.url)}
        for name, cfg in CRAWLS.items():
            futures[name] = pool.submit(crawl_in_subprocess, workdir, name, url=demo_server.url, **cfg)
        futures["model_dir"] = workdir / "models"
        yield futures
        for name, future in futures.items():
            if hasattr(future, "cancel"):
                future.cancel()


def _assert_exactly_once(result: dict) -> None:
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))


def test_normal_end_every_item_once_and_cleaned(crawls):
    result = crawls["normal"].result()
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert len(result["yielded"]) == 60  # 30 articles x 2 items
    assert sst_stat(result, "models_built") == 1
    assert sst_stat(result, "items_held") > 0
    assert sst_stat(result, "items_held") == sst_stat(result, "items_released")
    assert all(r["text"] for r in result["received"])
    assert "sst: model built for site 127.0.0.1 from 10 pages" in result["log"]


def test_closespider_pagecount_flushes_held_items(crawls):
    # the sample (50) is never reached: every item is still held when the crawl is closed
    result = crawls["pagecount"].result()
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "closespider_pagecount"
    assert sst_stat(result, "items_flushed_at_close") > 0
    assert all(r["text"] for r in result["received"])


def test_closespider_itemcount(crawls):
    # one "site" per section: some sites get models and release, others still hold
    result = crawls["itemcount"].result()
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "closespider_itemcount"
    assert len(result["yielded"]) >= 3


def test_stopped_by_signal(crawls):
    result = crawls["sigint"].result()
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "shutdown"
    assert sst_stat(result, "items_flushed_at_close") > 0


def test_tiny_held_bytes_bounds_memory(crawls):
    bound = HELD_BYTES_BOUND
    result = crawls["held_bytes"].result()
    _assert_exactly_once(result)
    assert 0 < sst_stat(result, "peak_held_bytes") <= bound
    assert sst_stat(result, "evictions") > 0
    assert sst_stat(result, "fallback_cleans") > 0
    # only the end-of-crawl flush may fit the last hold, with the pages it has
    assert sst_stat(result, "models_built") <= 1
    assert all(r["text"] for r in result["received"])


def test_tiny_held_items_bound(crawls):
    result = crawls["held_items"].result()
    _assert_exactly_once(result)
    assert sst_stat(result, "peak_held_items") <= 2
    assert sst_stat(result, "evictions") > 0


def test_saved_models_are_reused(crawls):
    model_dir = crawls["model_dir"]
    first, second = crawls["reuse"].result()
    _assert_exactly_once(first)
    assert sst_stat(first, "models_built") == 1 and sst_stat(first, "models_saved") == 1
    assert os.listdir(model_dir) == [model_filename("127.0.0.1")]
    _assert_exactly_once(second)
    assert sst_stat(second, "models_loaded") == 1
    assert sst_stat(second, "models_built") == 0
    assert sst_stat(second, "items_held") == 0  # cleaning starts at once
    assert all(r["text"] for r in second["received"])


def test_non_html_and_pageless_items_pass_untouched(crawls):
    resources = RESOURCES
    result = crawls["non_html"].result()
    _assert_exactly_once(result)
    by_id = {r["id"]: r for r in result["received"]}
    for path in resources:
        assert by_id["res:" + path]["text"] is None
    assert by_id["start-item"]["text"] is None
    assert sst_stat(result, "non_html_responses") == 3
    assert sst_stat(result, "items_passed_non_html") == 3
    # the pipeline finds no page for any of them: 3 non-HTML items + the start() item
    assert sst_stat(result, "items_without_page") == 4


def test_every_item_type(crawls):
    kinds = TYPE_KINDS
    result = crawls["types"].result()
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
    assert sst_stat(result, "items_missing_field") == len(types["NoTextItem"])


def test_disabled_addon_does_nothing(crawls):
    result = crawls["disabled"].result()
    _assert_exactly_once(result)
    assert not any(k.startswith("sst/") for k in result["stats"])
    assert all(r["text"] is None for r in result["received"])


def test_hold_timeout_fits_with_the_pages_it_has(crawls):
    # the sample (50) is never reached, but a zero timeout fits the site at once
    result = crawls["timeout"].result()
    _assert_exactly_once(result)
    assert sst_stat(result, "hold_timeouts") >= 1
    assert sst_stat(result, "models_built") == 1
    assert "(timeout)" in result["log"]


def test_failed_flush_request_still_delivers(crawls):
    # a downloader middleware refuses the idle flush's data: request: the held items must
    # still reach the pipelines, and the spider must still close
    result = crawls["failed_flush"].result()
    _assert_exactly_once(result)
    assert result["stats"]["finish_reason"] == "finished"
    assert sst_stat(result, "flushes") >= 1
    assert "held items sent to the item pipelines directly" in result["log"]


def test_source_field_html_is_cleaned_instead_of_the_response(crawls):
    result = crawls["source_field"].result()
    _assert_exactly_once(result)
    for r in result["received"]:
        assert r["expect"] in r["text"]
        assert "Ledger" not in r["text"]  # nothing of the crawled page itself
        assert r["sentences"] == [r["expect"]]
        assert [b["text"] for b in r["blocks"]] == [r["expect"]]
        assert all(b["label"] == "informative" and b["xpath"].startswith("/") for b in r["blocks"])
