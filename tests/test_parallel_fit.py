"""Learning a site on several processes (``fit(pages, n_jobs=...)``) learns the model one
process learns, and loses no page when a worker cannot do its part."""

import concurrent.futures
import json
import logging
import math

import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.engine import _cleaner as cleaner_module
from sst_cleaner.engine import _parallel_fit as parallel_fit
from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine.methods.sitestats.site_stats import SiteStats, analyse_page
from sst_cleaner.tools.demo import DemoSite


@pytest.fixture(scope="module")
def site_pages():
    site = DemoSite(seed=5, n_articles=24)
    return [(f"http://demo.test{p}", site.page(p)) for p in site.paths]


def _same_model(a: dict, b: dict) -> bool:
    """Equal JSON models: counts exactly, float sums up to rounding in the last bits
    (adding two halves' Q sums is not adding the pages' terms in order)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_model(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_model(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=2e-6)
    return a == b


@pytest.fixture()
def small_shards(monkeypatch):
    # the demo site is ~0.3 MB of HTML: let a few pages have a process of their own
    monkeypatch.setattr(parallel_fit, "MIN_SIZE_PER_PROCESS", 20_000)


def test_plan_shards_cuts_contiguous_runs_of_nearly_equal_size():
    sizes = [10, 10, 10, 10, 30, 30]  # 100 in all
    assert parallel_fit.plan_shards(sizes, 2, min_size=1) == [range(0, 4), range(4, 6)]  # 40 + 60
    # a cut falls where the running total passes a k-th of the whole, at a page's middle
    assert [list(r) for r in parallel_fit.plan_shards([5] * 10, 3, min_size=1)] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    # too little HTML for a process of its own: fewer shards
    assert parallel_fit.plan_shards(sizes, 4, min_size=40) == [range(0, 4), range(4, 6)]
    assert parallel_fit.plan_shards(sizes, 2, min_size=101) == [range(0, 6)]
    # never an empty shard, even when one page outweighs the rest
    assert parallel_fit.plan_shards([1000, 1, 1], 3, min_size=1) == [range(0, 1), range(1, 2), range(2, 3)]
    assert parallel_fit.plan_shards([], 2) == [range(0, 0)]


def test_input_size_reads_html_out_of_page_tuples():
    assert parallel_fit.input_size("<p>abc</p>") == 10
    assert parallel_fit.input_size(("http://a/", b"<p>x</p>", "utf-8")) == 8


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True, None])
def test_n_jobs_must_be_a_positive_int_or_minus_one(bad):
    with pytest.raises(ValueError, match="n_jobs"):
        SiteCleaner().fit([], n_jobs=bad)


def test_minus_one_means_every_usable_cpu():
    assert parallel_fit.check_n_jobs(-1) == parallel_fit.usable_cpus() >= 1


def test_merged_halves_are_the_model_of_all_pages(site_pages):
    analyses = [analyse_page(parse_html(html, url=url)) for url, html in site_pages]
    whole, first, second = SiteStats(), SiteStats(), SiteStats()
    for i, pa in enumerate(analyses):
        whole.add(pa)
        (first if i < 10 else second).add(pa)
    first.merge(second)
    assert first.n_pages == len(site_pages)
    assert _same_model(first.to_dict(), whole.to_dict())
    # node_template_share is cached: merging must drop the cache
    key = next(iter(whole.node_sent))
    assert first.node_template_share(key, 2) == pytest.approx(whole.node_template_share(key, 2))


@pytest.mark.parametrize("n_jobs", [2, 3])
def test_parallel_fit_learns_what_one_process_learns(site_pages, small_shards, n_jobs, caplog):
    caplog.set_level(logging.WARNING, logger="sst_cleaner.engine._parallel_fit")
    one = SiteCleaner().fit(site_pages)
    many = SiteCleaner().fit(site_pages, n_jobs=n_jobs)
    assert not caplog.text  # the workers did their shards
    assert many.n_pages == one.n_pages == len(site_pages)
    assert many.fit_status == "ok" and many.skipped_pages == 0
    assert _same_model(many.to_dict(), one.to_dict())
    url, html = site_pages[3]
    assert many.clean(html, url=url).text == one.clean(html, url=url).text


class _BrokenPool:
    """A process pool whose workers all die (what a killed worker looks like)."""

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, fn, *args):
        fut = concurrent.futures.Future()
        fut.set_exception(concurrent.futures.process.BrokenProcessPool("worker killed"))
        return fut

    def shutdown(self, wait=True, cancel_futures=False):
        pass


class _NoPool:
    def __init__(self, *args, **kwargs):
        raise OSError("no processes here")


@pytest.mark.parametrize("pool", [_BrokenPool, _NoPool])
def test_a_failing_worker_s_pages_are_learnt_here(site_pages, small_shards, monkeypatch, caplog, pool):
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", pool)
    caplog.set_level(logging.WARNING, logger="sst_cleaner.engine._parallel_fit")
    many = SiteCleaner().fit(site_pages, n_jobs=2)
    assert many.n_pages == len(site_pages) and many.fit_status == "ok"
    assert _same_model(many.to_dict(), SiteCleaner().fit(site_pages).to_dict())
    assert "in this process" in caplog.text


def test_each_process_gets_its_share_of_the_site_budget(site_pages, small_shards, monkeypatch):
    seen = []
    real = parallel_fit.map_shards

    def spy(fn, shard_args, local=None):
        seen.extend((sum(len(html) for _, html in a[3]), a[2].site_time_budget) for a in shard_args)
        return real(fn, shard_args, local)

    monkeypatch.setattr(cleaner_module, "map_shards", spy)  # the name SiteCleaner.fit calls
    cleaner = SiteCleaner(site_time_budget=60.0).fit(site_pages, n_jobs=3)
    assert len(seen) == 3
    total = sum(size for size, _ in seen)
    assert [b for _, b in seen] == pytest.approx([60.0 * size / total for size, _ in seen])
    assert cleaner.n_pages == len(site_pages) and cleaner.build_seconds > 0


def test_parsed_pages_and_unmergeable_methods_fit_on_one_process(site_pages, small_shards, monkeypatch, caplog):
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _NoPool)  # warns if tried
    caplog.set_level(logging.WARNING, logger="sst_cleaner.engine._parallel_fit")
    parsed = [parse_html(html, url=url) for url, html in site_pages]
    assert SiteCleaner().fit(parsed, n_jobs=2).n_pages == len(parsed)
    sst = SiteCleaner(method="sst").fit(site_pages, n_jobs=2)
    assert sst.n_pages == len(site_pages)
    assert json.dumps(sst.to_dict(), sort_keys=True) == json.dumps(
        SiteCleaner(method="sst").fit(site_pages).to_dict(), sort_keys=True
    )
    assert not caplog.text
