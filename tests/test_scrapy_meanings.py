"""Scrapy's meanings kept with the add-on, as a new user meets them in real crawls of the
local demo site: CLOSESPIDER_ITEMCOUNT closes the crawl as it does without the add-on, a
missing optional output field costs only that field, and ``None`` or an empty string from
``-s`` turns an optional setting off."""

from __future__ import annotations

import pytest
import scrapy
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

from sst_cleaner.scrapy._settings import load_config, store_url

#: Scrapy's own window: the pages already downloaded when the crawl is closed still
#: deliver their items; kept small so the test can tell a window from a runaway crawl
CONCURRENT = 2


def _sst_warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if "WARNING" in line and "sst" in line]


def _delivered(result: dict) -> list[dict]:
    """The items of a crawl, once checked that each yielded one arrived exactly once."""
    received = result["received"]
    assert_exactly_once(result["yielded"], (r["id"] for r in received))
    return received


def _small_crawl(demo_server, tmp_path, name: str, kinds: list[str], **settings) -> dict:
    """A 12-page crawl of the demo site with a 5-page sample and thread workers (plus
    ``settings``): every item delivered exactly once, and with its text."""
    result = crawl_in_subprocess(
        tmp_path,
        name,
        url=demo_server.url,
        kinds=kinds,
        max_pages=12,
        settings={"SST_SAMPLE_PAGES": 5, "SST_WORKERS": "thread", **settings},
    )
    assert all(r["text"] for r in _delivered(result))
    return result


# Scrapy 2.13 (the oldest supported) closes and counts items its own way: there the add-on
# still overshoots CLOSESPIDER_ITEMCOUNT and learns fewer late pages (issue 26, left open;
# seen on a fresh CI clone with the pure-Python engine)
_NEWER_SCRAPY = pytest.mark.skipif(
    tuple(int(x) for x in scrapy.__version__.split(".")[:2]) < (2, 14),
    reason="not yet on Scrapy 2.13: the add-on's close and late-page learning differ there (issue 26)",
)


@_NEWER_SCRAPY
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
    _delivered(addon)
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
    result = _small_crawl(demo_server, tmp_path, "no-metadata-field", ["item"], SST_METADATA_FIELD="metadata")
    received = result["received"]
    assert all(r["metadata"] is None for r in received)
    assert sst_stat(result, "items_missing_optional_field") == len(received)
    assert sst_stat(result, "items_missing_field") == 0
    warnings = [line for line in _sst_warnings(result["log"]) if "'metadata' (SST_METADATA_FIELD)" in line]
    assert len(warnings) == 1, result["log"][-3000:]


def test_the_readme_item_class_crawls_without_warnings(demo_server, tmp_path):
    """The README's item class (``url`` and ``text``) has no ``sst_status`` field, which is on
    by default: that used to be a WARNING on every crawl."""
    result = _small_crawl(demo_server, tmp_path, "readme-item", ["item"])
    assert not _sst_warnings(result["log"]), _sst_warnings(result["log"])


def test_none_from_the_command_line_turns_settings_off(demo_server, tmp_path):
    """``-s NAME=None`` gives the string "None": it used to name a status field 'None'
    (warned about on every class) and a model folder ./None."""
    result = _small_crawl(
        demo_server,
        tmp_path,
        "none-strings",
        ["status"],  # declares sst_status
        SST_STATUS_FIELD="None",
        SST_MODEL_DIR="None",
        SST_METADATA_FIELD="none",
    )
    received = result["received"]
    assert all(r["status"] is None for r in received)  # the flag is off
    assert sst_stat(result, "status/cleaned") + sst_stat(result, "status/fallback") == len(received)
    assert not (tmp_path / "None").exists()
    assert sst_stat(result, "models_saved") == 0
    assert not _sst_warnings(result["log"]), _sst_warnings(result["log"])


#: the optional settings and the config attribute each one sets
OPTIONAL_SETTINGS = {
    "SST_STATUS_FIELD": "status_field",
    "SST_MODEL_DIR": "model_dir",
    "SST_MARKDOWN_FIELD": "markdown_field",
    "SST_HTML_FIELD": "html_field",
    "SST_METADATA_FIELD": "metadata_field",
    "SST_SENTENCES_FIELD": "sentences_field",
    "SST_BLOCKS_FIELD": "blocks_field",
    "SST_SOURCE_FIELD": "source_field",
    "SST_URL_FIELD": "url_field",
    "SST_WORKER_INIT": "worker_init",
}


@pytest.mark.parametrize("off", [None, "None", "none", " NONE ", ""])
def test_every_optional_setting_reads_none_and_blank_as_off(off):
    cfg = load_config(dict.fromkeys(OPTIONAL_SETTINGS, off))
    for setting, name in OPTIONAL_SETTINGS.items():
        assert getattr(cfg, name) is None, setting
    assert load_config({"SST_PARAMS": off}).params == {}
    assert load_config({"SST_PROCESSES": off}).processes == load_config({}).processes
    assert store_url({"SST_MODEL_STORE": off}) is None  # the in-process store


@_NEWER_SCRAPY
def test_a_recrawl_with_the_saved_model_learns_nothing_new_and_cleans_the_same(demo_server, tmp_path):
    """The local site answers faster than a fit: nearly every page comes while the sample
    is fitted. Those pages used to be never learnt (crawl 1 refined no page), so the
    re-crawl learnt them all and cleaned with another model than crawl 1 saved."""
    settings = {"SST_MODEL_DIR": str(tmp_path / "models"), "SST_SAMPLE_PAGES": 5, "SST_METHOD": "default"}
    first = crawl_in_subprocess(tmp_path, "learn-1", url=demo_server.url, settings=settings)
    second = crawl_in_subprocess(tmp_path, "learn-2", url=demo_server.url, settings=settings)
    for result in (first, second):
        _delivered(result)
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
