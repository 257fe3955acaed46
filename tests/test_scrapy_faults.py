"""Faults during a real crawl: no item is lost, every item is flagged, errors are counted
and each cause is logged once.

The crawls (one process each, tests/test_scrapy_runner.py) use method "faulty": CETD that
raises while cleaning pages of one URL bucket and while fitting sites "a0" and "a1" (one
site per article bucket, ``fault_site``); the spider callback raises on another bucket of
pages after yielding its items. Every fault is a pure function of the URL, so each test
works out from the yielded ids alone which items must be flagged how. Items are read back
from the crawl's JSON-lines feed (FEEDS), i.e. what a user would get.
"""

from __future__ import annotations

import collections
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat
from test_scrapy_runner import fault_site, url_bucket

CLEAN_FAIL_MOD = 4  # cleaning raises on pages with url_bucket(url, 4) == 1
SPIDER_FAIL_MOD = 5  # the callback raises on pages with url_bucket(url, 5) == 0
FIT_FAIL_SITES = ["a0", "a1"]
KINDS = ["dict", "item", "status"]  # PageItem has no sst_status field; StatusItem has
STATUS_KINDS = {"dict", "status"}

FAULTS = dict(
    faulty_method=True,
    raise_mod=SPIDER_FAIL_MOD,
    kinds=KINDS,
    settings={
        "SST_METHOD": "faulty",
        "SST_PARAMS": {"fail_clean_mod": CLEAN_FAIL_MOD, "fail_fit_sites": FIT_FAIL_SITES},
        "SST_SITE_KEY": "test_scrapy_runner.fault_site",
        # the faults happen in the worker processes (SST_WORKERS' default), whose
        # exceptions must come back to the Scrapy process as any other
        # two workers: sites a0, a1, a2 are pinned to one, "listing" to the other
        "SST_WORKERS": "process",
        "SST_PROCESSES": 2,
        "SST_WORKER_INIT": "test_scrapy_runner.register_faulty_method",
    },
)

CRAWLS = {
    "end": dict(settings={"SST_SAMPLE_PAGES": 4}),
    # SST_SAMPLE_PAGES is set by the fixture so that only the largest article site can
    # complete its sample: its release reaches the count, the other two still hold
    "itemcount": dict(settings={"CLOSESPIDER_ITEMCOUNT": 3}),
    # the sample (50) is never reached: everything is still held at the signal
    "sigint": dict(sigint_after=12, settings={"SST_SAMPLE_PAGES": 50}),
}


#: crawls without faults where every page hits a limit (sst_cleaner/limits.py), set
#: through SST_PARAMS: a tag cap of half the tags of the smallest page, a time budget spent
#: by parsing
LIMIT_CRAWLS = {
    "truncated": {"max_tags": 100},
    "over_budget": {"page_time_budget": 1e-9},
}


def _sample_between_sites(site) -> int:
    """A sample size only the largest article site reaches (so, at the item count, the
    others are still holding), worked out from the demo site's pages."""
    sizes = sorted(collections.Counter(fault_site("http://h" + p) for p in site.article_paths).values())
    assert len(sizes) == 3 and sizes[-1] > sizes[-2], f"article sites too even: {sizes}"
    return sizes[-2] + 1


def _config(name: str, workdir: Path, extra: dict) -> dict:
    cfg = {k: v for k, v in FAULTS.items() if k != "settings"}
    cfg.update({k: v for k, v in CRAWLS[name].items() if k != "settings"})
    settings = dict(FAULTS["settings"])
    settings.update(CRAWLS[name]["settings"])
    settings.update(extra)
    settings["FEEDS"] = {str(workdir / f"feed-{name}.jsonl"): {"format": "jsonlines"}}
    cfg["settings"] = settings
    return cfg


def _crawl(workdir: Path, name: str, url: str, extra: dict) -> dict:
    result = crawl_in_subprocess(workdir, f"faults-{name}", url=url, **_config(name, workdir, extra))
    feed = workdir / f"feed-{name}.jsonl"
    result["feed"] = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines() if line]
    return result


@pytest.fixture(scope="module")
def crawls(demo_server, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("fault-crawls")
    with ThreadPoolExecutor(max_workers=len(CRAWLS) + len(LIMIT_CRAWLS)) as pool:
        extra = {"itemcount": {"SST_SAMPLE_PAGES": _sample_between_sites(demo_server.site)}}
        futures = {name: pool.submit(_crawl, workdir, name, demo_server.url, extra.get(name, {})) for name in CRAWLS}
        for name, params in LIMIT_CRAWLS.items():
            futures[name] = pool.submit(
                crawl_in_subprocess,
                workdir,
                f"limits-{name}",
                url=demo_server.url,
                kinds=["dict"],
                max_pages=6,
                settings={"SST_METHOD": "cetd", "SST_PARAMS": params},
            )
        yield futures
        for future in futures.values():
            future.cancel()


# -- helpers ----------------------------------------------------------------------------------


def _path(item_id: str) -> str:
    return item_id.split("#", 1)[0]


def _url(item_id: str) -> str:
    return "http://127.0.0.1" + _path(item_id)


def _sst_error_lines(log: str, needle: str) -> list[str]:
    """Log records (not traceback lines) of sst_cleaner at ERROR that mention ``needle``."""
    return [
        line
        for line in log.splitlines()
        if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[sst_cleaner[.\w]*\] ERROR: ", line) and needle in line
    ]


def _check_delivery_and_flags(result: dict) -> dict:
    """Every yielded item in the feed exactly once, flagged as its faults say; returns the
    feed by id."""
    assert_exactly_once(result["yielded"], (row["id"] for row in result["feed"]))
    assert sst_stat(result, "worker_processes") == 2 and not sst_stat(result, "errors/workers")

    by_id = {row["id"]: row for row in result["feed"]}
    for item_id, row in by_id.items():
        kind = item_id.rsplit("#", 1)[1]
        url = _url(item_id)
        clean_fails = url_bucket(url, CLEAN_FAIL_MOD) == 1
        if clean_fails:
            assert not row.get("text"), item_id
        else:
            assert row.get("text"), item_id
        if kind not in STATUS_KINDS:  # PageItem: no field, no flag, still cleaned
            assert "sst_status" not in row
            continue
        status = row["sst_status"]
        if clean_fails:
            assert status == "error", (item_id, status)
        elif fault_site(url) in FIT_FAIL_SITES:  # no site model can exist for these
            assert status in ("fallback", "over_budget"), (item_id, status)
        else:
            assert status in ("cleaned", "fallback", "over_budget"), (item_id, status)

    # statuses and errors are counted consistently with the feed
    n_items = len(by_id)
    assert sum(v for k, v in result["stats"].items() if k.startswith("sst/status/")) == n_items
    no_flag = sum(1 for i in by_id if i.rsplit("#", 1)[1] not in STATUS_KINDS)
    assert sst_stat(result, "items_without_status_field") == no_flag
    failing_pages = {_path(i) for i in by_id if url_bucket(_url(i), CLEAN_FAIL_MOD) == 1}
    assert failing_pages, "no item hit a cleaning fault: the test proves nothing"
    assert sst_stat(result, "errors/clean") == len(failing_pages)  # once per page, not per item
    assert sst_stat(result, "errors") == sum(v for k, v in result["stats"].items() if k.startswith("sst/errors/"))
    # the spider's own failures happened, and their pages' items were not lost
    assert result["stats"].get("spider_exceptions/InjectedSpiderError", 0) > 0
    assert any(url_bucket(_url(i), SPIDER_FAIL_MOD) == 0 for i in by_id)
    return by_id


def _check_logged_once(result: dict) -> None:
    """One ERROR record per cause; repeats summed in one WARNING line at close."""
    log = result["log"]
    for needle, stage in (("InjectedCleanError", "clean"), ("InjectedFitError", "fit")):
        n = sst_stat(result, f"errors/{stage}")
        lines = _sst_error_lines(log, needle)
        assert len(lines) == (1 if n else 0), (needle, n, lines)
        if n > 1:
            summary = re.search(rf"WARNING: sst: .* failed {int(n)} times with {needle}\(", log)
            assert summary, f"no summary line for {n} {needle}"


# -- the crawls -------------------------------------------------------------------------------


def test_faults_normal_end(crawls):
    result = crawls["end"].result()
    assert result["stats"]["finish_reason"] == "finished"
    by_id = _check_delivery_and_flags(result)
    _check_logged_once(result)
    # both failing sites reached their sample and failed to fit, the third was built
    assert sst_stat(result, "errors/fit") == 2
    assert sst_stat(result, "models_built") >= 1
    # with default caps nothing is evicted: the rule is exact
    for item_id, row in by_id.items():
        url = _url(item_id)
        if "sst_status" not in row or url_bucket(url, CLEAN_FAIL_MOD) == 1:
            continue
        expected = "fallback" if fault_site(url) in FIT_FAIL_SITES else "cleaned"
        assert row["sst_status"] in (expected, "over_budget"), (item_id, row["sst_status"])
    assert any(row.get("sst_status") == "cleaned" for row in by_id.values())


def _check_closed_with_items_held(result: dict, reason: str) -> None:
    assert result["stats"]["finish_reason"] == reason
    _check_delivery_and_flags(result)
    _check_logged_once(result)
    assert sst_stat(result, "items_flushed_at_close") > 0


def test_faults_closespider_itemcount(crawls):
    result = crawls["itemcount"].result()
    assert result["stats"]["finish_reason"] == "closespider_itemcount"
    _check_delivery_and_flags(result)
    _check_logged_once(result)
    # held items count towards the item count: the holds are released (fitted with what
    # they have) when it is reached, not at the close
    assert "CLOSESPIDER_ITEMCOUNT (3) reached" in result["log"]


def test_faults_sigint_while_items_held(crawls):
    result = crawls["sigint"].result()
    _check_closed_with_items_held(result, "shutdown")
    # the held sites are fitted at the close with the pages they have: the failing ones fail
    assert sst_stat(result, "errors/fit") <= len(FIT_FAIL_SITES)


@pytest.mark.parametrize("status", sorted(LIMIT_CRAWLS))
def test_limit_statuses(crawls, status):
    result = crawls[status].result()
    yielded = collections.Counter(result["yielded"])
    assert yielded and yielded == collections.Counter(r["id"] for r in result["received"])
    # every item flagged with the limit, and still given text (the cut page / the whole page)
    assert result["stats"].get(f"sst/status/{status}", 0) == len(yielded)
    assert all(r["text"] for r in result["received"])


# -- units: no crawl --------------------------------------------------------------------------


class _Stats:
    def __init__(self):
        self.values: dict = collections.Counter()

    def inc_value(self, key, count=1, start=0):
        self.values[key] += count

    def max_value(self, key, value):
        self.values[key] = max(self.values.get(key, value), value)


def test_error_reporter_logs_each_cause_once(caplog):
    from sst_cleaner.scrapy._middleware import ErrorReporter

    stats = _Stats()
    errors = ErrorReporter(stats, max_causes=2)
    with caplog.at_level("DEBUG", logger="sst_cleaner.scrapy._middleware"):
        logged = [errors.report("clean", ValueError("bad page"), f"page {i}") for i in range(5)]
        logged.append(errors.report("fit", ValueError("bad page")))  # same cause, other stage
        logged.append(errors.report("clean", KeyError("bad page")))  # other type
        logged.append(errors.report("clean", ValueError("other")))  # past the cap of 2
    assert logged == [True, False, False, False, False, True, True, False]
    errors_logged = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors_logged) == 3 and all(r.exc_info for r in errors_logged)
    assert stats.values["sst/errors"] == 8
    assert stats.values["sst/errors/clean"] == 7 and stats.values["sst/errors/fit"] == 1
    summary = errors.summary()
    assert any("failed 5 times with ValueError('bad page')" in line for line in summary)
    assert any("1 more times with causes past the first 2" in line for line in summary)
    assert len(summary) == 2


def _pipeline(settings: dict):
    from scrapy.utils.test import get_crawler

    from sst_cleaner.scrapy._pipeline import SSTPipeline

    try:
        crawler = get_crawler(settings_dict={"SST_METHOD": "cetd", **settings})
    except RuntimeError:  # Scrapy 2.13's get_crawler wants a reactor installed already
        import twisted.internet.reactor  # noqa: F401  (installs the default one)

        crawler = get_crawler(settings_dict={"SST_METHOD": "cetd", **settings})
    return SSTPipeline.from_crawler(crawler), crawler


def _run(coro):
    """Drive a coroutine that never waits (the pipeline's paths without cleaning)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine waited")


def test_pipeline_flags_pageless_and_non_html_items():
    import scrapy

    from sst_cleaner.scrapy._middleware import NON_HTML

    class Plain(scrapy.Item):
        id = scrapy.Field()
        text = scrapy.Field()

    pipe, crawler = _pipeline({})
    a, b, c = {"id": 1}, {"id": 2}, Plain(id=3)
    pipe.store.bind(b, NON_HTML)
    assert _run(pipe.process_item(a))["sst_status"] == "no_page"
    assert _run(pipe.process_item(b))["sst_status"] == "non_html"
    assert "sst_status" not in _run(pipe.process_item(c))  # no such field: skipped, counted
    stats = crawler.stats.get_stats()
    assert stats["sst/items_without_status_field"] == 1
    assert stats["sst/status/no_page"] == 2 and stats["sst/status/non_html"] == 1

    off, _ = _pipeline({"SST_STATUS_FIELD": None})
    assert "sst_status" not in _run(off.process_item({"id": 4}))
    renamed, _ = _pipeline({"SST_STATUS_FIELD": "outcome"})
    assert _run(renamed.process_item({"id": 5}))["outcome"] == "no_page"
    # a bad value stops the crawl with one error line (see BadSettings) instead of raising
    refused, crawler = _pipeline({"SST_STATUS_FIELD": 3})
    assert type(refused).__name__ == "BadSettings" and "SST_STATUS_FIELD" in str(refused.error)
