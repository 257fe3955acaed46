"""A site's fit that overruns its time budget ends once, as a failed build: logged and
counted, and the site's items are released with page-level text, each exactly once.

Crawls of the demo site through the add-on (tests/test_scrapy_runner.py), with a site
budget no fit can meet (set through SST_PARAMS)."""

from __future__ import annotations

import collections
import re

import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

_OVERRUN = re.compile(r"sst: the fit of site (\S+) on \d+ pages overran its time budget")


@pytest.mark.parametrize("workers", ["thread", "process"])
@pytest.mark.parametrize("method", ["default", "cetd"])
def test_a_fit_over_its_budget_ends_once_and_the_items_get_page_level_text(demo_server, tmp_path, workers, method):
    result = crawl_in_subprocess(
        tmp_path,
        f"fit-budget-{method}-{workers}",
        url=demo_server.url,
        kinds=["dict"],
        max_pages=12,
        settings={
            "SST_METHOD": method,
            "SST_WORKERS": workers,
            "SST_SAMPLE_PAGES": 3,
            "SST_PARAMS": {"site_time_budget": 1e-9},
        },
    )
    assert_exactly_once(result["yielded"], [r["id"] for r in result["received"]])
    overruns = collections.Counter(_OVERRUN.findall(result["log"]))
    # each site's fit ended once: no site is fitted again, and no model was kept
    assert overruns and set(overruns.values()) == {1}
    assert sst_stat(result, "models_over_budget") == len(overruns)
    assert sst_stat(result, "models_built") == 0
    assert sst_stat(result, "errors/fit") == 0  # an overrun is not an error
    # every page was cleaned page by page, with text
    assert {r["status"] for r in result["received"]} == {"fallback"}
    assert all(r["text"] for r in result["received"])
