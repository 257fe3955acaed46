"""Scrapy's meanings kept with the add-on, as a new user meets them in real crawls of the
local demo site: CLOSESPIDER_ITEMCOUNT closes the crawl as it does without the add-on, a
missing optional output field costs only that field, and ``None`` or an empty string from
``-s`` turns an optional setting off."""

from __future__ import annotations

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

from sst_cleaner.scrapy._settings import load_config, store_url

#: Scrapy's own window: the pages already downloaded when the crawl is closed still
#: deliver their items; kept small so the test can tell a window from a runaway crawl
CONCURRENT = 2


def _sst_warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if "WARNING" in line and "sst" in line]


def test_closespider_itemcount_delivers_as_without_the_addon(demo_server, tmp_path):
    """The sample (20 pages) holds every item at first: the add-on used to let the crawl run
    on while items were held or being cleaned, and delivered every item of the site (60)
    where plain Scrapy stops at 14-16."""
    settings = {
        "CLOSESPIDER_ITEMCOUNT": 10,
        "CONCURRENT_REQUESTS": CONCURRENT,
        "SST_SAMPLE_PAGES": 20,  # worker processes (the default), as a new user has them
    }
    kinds = ["dict", "item"]
    plain = crawl_in_subprocess(
        tmp_path, "plain", url=demo_server.url, kinds=kinds, settings={**settings, "SST_ENABLED": False}
    )
    addon = crawl_in_subprocess(tmp_path, "addon", url=demo_server.url, kinds=kinds, settings=settings)
    assert_exactly_once(addon["yielded"], (r["id"] for r in addon["received"]))
    for result in (plain, addon):
        assert result["stats"]["finish_reason"] == "closespider_itemcount"
    n_plain, n_addon = len(plain["received"]), len(addon["received"])
    assert 10 <= n_plain < 2 * len(demo_server.site.article_paths)  # the count did stop the plain crawl
    # at least the count, and at most one concurrency window (its pages' items) past plain Scrapy
    assert 10 <= n_addon <= n_plain + CONCURRENT * len(kinds), (n_addon, n_plain)
    assert all(r["text"] for r in addon["received"])


def test_a_missing_optional_field_costs_only_that_field(demo_server, tmp_path):
    """``PageItem`` has ``url`` and ``text`` but no ``metadata``: its items used to lose their
    text too (flagged 'error'), with the crawl ending as if all were well."""
    result = crawl_in_subprocess(
        tmp_path,
        "no-metadata-field",
        url=demo_server.url,
        kinds=["item"],
        max_pages=12,
        settings={"SST_METADATA_FIELD": "metadata", "SST_SAMPLE_PAGES": 5, "SST_WORKERS": "thread"},
    )
    received = result["received"]
    assert_exactly_once(result["yielded"], (r["id"] for r in received))
    assert all(r["text"] for r in received)
    assert all(r["metadata"] is None for r in received)
    assert sst_stat(result, "items_missing_optional_field") == len(received)
    assert sst_stat(result, "items_missing_field") == 0
    warnings = [line for line in _sst_warnings(result["log"]) if "'metadata' (SST_METADATA_FIELD)" in line]
    assert len(warnings) == 1, result["log"][-3000:]


def test_the_readme_item_class_crawls_without_warnings(demo_server, tmp_path):
    """The README's item class (``url`` and ``text``) has no ``sst_status`` field, which is on
    by default: that used to be a WARNING on every crawl."""
    result = crawl_in_subprocess(
        tmp_path,
        "readme-item",
        url=demo_server.url,
        kinds=["item"],
        max_pages=12,
        settings={"SST_SAMPLE_PAGES": 5, "SST_WORKERS": "thread"},
    )
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    assert all(r["text"] for r in result["received"])
    assert not _sst_warnings(result["log"]), _sst_warnings(result["log"])


def test_none_from_the_command_line_turns_settings_off(demo_server, tmp_path):
    """``-s NAME=None`` gives the string "None": it used to name a status field 'None'
    (warned about on every class) and a model folder ./None."""
    result = crawl_in_subprocess(
        tmp_path,
        "none-strings",
        url=demo_server.url,
        kinds=["status"],  # declares sst_status
        max_pages=12,
        settings={
            "SST_STATUS_FIELD": "None",
            "SST_MODEL_DIR": "None",
            "SST_METADATA_FIELD": "none",
            "SST_SAMPLE_PAGES": 5,
            "SST_WORKERS": "thread",
        },
    )
    received = result["received"]
    assert_exactly_once(result["yielded"], (r["id"] for r in received))
    assert all(r["text"] for r in received)
    assert all(r["status"] is None for r in received)  # the flag is off
    assert sst_stat(result, "status/cleaned") + sst_stat(result, "status/fallback") == len(received)
    assert not (tmp_path / "None").exists()
    assert sst_stat(result, "models_saved") == 0
    assert not _sst_warnings(result["log"]), _sst_warnings(result["log"])


@pytest.mark.parametrize("off", [None, "None", "none", " NONE ", ""])
def test_every_optional_setting_reads_none_and_blank_as_off(off):
    settings = {
        "SST_STATUS_FIELD": off,
        "SST_MODEL_DIR": off,
        "SST_MARKDOWN_FIELD": off,
        "SST_HTML_FIELD": off,
        "SST_METADATA_FIELD": off,
        "SST_SENTENCES_FIELD": off,
        "SST_BLOCKS_FIELD": off,
        "SST_SOURCE_FIELD": off,
        "SST_URL_FIELD": off,
        "SST_WORKER_INIT": off,
    }
    cfg = load_config(settings)
    for name in (
        "status_field",
        "model_dir",
        "markdown_field",
        "html_field",
        "metadata_field",
        "sentences_field",
        "blocks_field",
        "source_field",
        "url_field",
        "worker_init",
    ):
        assert getattr(cfg, name) is None, name
    assert load_config({"SST_PARAMS": off}).params == {}
    assert load_config({"SST_PROCESSES": off}).processes == load_config({}).processes
    assert store_url({"SST_MODEL_STORE": off}) is None  # the in-process store


def test_a_recrawl_with_the_saved_model_learns_nothing_new_and_cleans_the_same(demo_server, tmp_path):
    """The local site answers faster than a fit: nearly every page comes while the sample
    is fitted. Those pages used to be never learnt (crawl 1 refined no page), so the
    re-crawl learnt them all and cleaned with another model than crawl 1 saved."""
    settings = {"SST_MODEL_DIR": str(tmp_path / "models"), "SST_SAMPLE_PAGES": 5, "SST_METHOD": "default"}
    first = crawl_in_subprocess(tmp_path, "learn-1", url=demo_server.url, settings=settings)
    second = crawl_in_subprocess(tmp_path, "learn-2", url=demo_server.url, settings=settings)
    for result in (first, second):
        assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    # crawl 1 learnt every page it saw: the sample by the fit, the others after it (but
    # for refinements its worker's refinement budget skipped, none on an ordinary run)
    skipped = sst_stat(first, "refinements_skipped")
    assert sst_stat(first, "models_built") == 1 and sst_stat(first, "models_saved") == 1
    assert sst_stat(first, "pages_refined") + skipped == sst_stat(first, "pages_seen") - 5
    assert sst_stat(first, "pages_refined") > 0
    # crawl 2 sees the same pages: its saved model has learnt them all but the skipped
    # ones (and pages_refined counts pages added, not calls)
    assert sst_stat(second, "models_loaded") == 1 and sst_stat(second, "models_built") == 0
    assert sst_stat(second, "pages_seen") == sst_stat(first, "pages_seen")
    assert sst_stat(second, "pages_refined") <= skipped
    texts = {r["id"]: r["text"] for r in first["received"]}
    assert all(r["text"] for r in second["received"])
    same = sum(texts[r["id"]] == r["text"] for r in second["received"])
    # a model that learns nothing new cleans as it did; a skipped page learnt by crawl 2
    # may change the text of the pages cleaned after it
    assert same == len(texts) if not skipped else same >= len(texts) // 2, (same, len(texts), skipped)
