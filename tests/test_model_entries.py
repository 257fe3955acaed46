"""The site model's entry count (what its 1,000,000-entry cap is checked against) is kept
as the model grows, and a full model stops reading pages and says so."""

import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.cli import main as cli_main
from sst_cleaner.engine import _cleaner as cleaner_module
from sst_cleaner.engine import _learn_caps as learn_caps
from sst_cleaner.engine import _parallel_fit as parallel_fit
from sst_cleaner.tools.demo import DemoSite

FAST = {"page_time_budget": None, "site_time_budget": None}


@pytest.fixture(scope="module")
def site_pages():
    site = DemoSite(seed=7, n_articles=16)
    return [(f"http://demo.test{p}", site.page(p)) for p in site.paths]


def _recount(cleaner: SiteCleaner) -> int:
    """Entries of the model, counted table by table (a feature's sums are one entry of
    S, and one of Q when it occurred twice on some page; a loaded model's one-page
    sentences are one entry each, and their length one per node)."""
    st = cleaner._impl.stats
    return (
        len(st.sent_df)
        + len(st.sent_len)
        + len(st.page_fps)
        + sum(len(d) for tables in (st.node_sent, st.node_S, st.node_Q) for d in tables.values())
        + len(st.sent_once)
        + len(st.node_once)
    )


def _entries(cleaner: SiteCleaner) -> int:
    return cleaner._impl.stats.entries  # the count the cap is checked against


def test_the_kept_count_is_the_recount_after_fit_partial_fit_merge_and_load(site_pages, tmp_path, monkeypatch):
    cleaner = SiteCleaner(**FAST).fit(site_pages[:-3])
    assert _entries(cleaner) == _recount(cleaner) > 1000
    for url, html in site_pages[-3:]:
        cleaner.partial_fit(html, url=url)
        assert _entries(cleaner) == _recount(cleaner)
    cleaner.save(tmp_path / "m.json")
    loaded = SiteCleaner.load(tmp_path / "m.json")
    # the saved form keeps a one-page sentence as one short hash, not three entries
    assert _entries(loaded) == _recount(loaded) < _recount(cleaner)
    loaded.partial_fit(*reversed(site_pages[0]))  # learnt before: a duplicate
    loaded.partial_fit("<html><body><p>One more page. With two new sentences.</p></body></html>")
    assert _entries(loaded) == _recount(loaded)
    monkeypatch.setattr(parallel_fit, "MIN_SIZE_PER_PROCESS", 20_000)  # shards for a small site
    merged = SiteCleaner(**FAST).fit(site_pages, n_jobs=2)
    assert merged.n_pages == len(site_pages)
    assert _entries(merged) == _recount(merged) == _recount(cleaner)


class _CountingTable(dict):
    calls = 0

    def __len__(self) -> int:
        _CountingTable.calls += 1
        return super().__len__()


def test_learning_a_page_reads_no_table_of_the_nodes_it_does_not_have(site_pages):
    cleaner = SiteCleaner(**FAST).fit(site_pages)
    stats = cleaner._impl.stats
    for tables in (stats.node_sent, stats.node_S, stats.node_Q):
        for key in tables:
            tables[key] = _CountingTable(tables[key])
    _CountingTable.calls = 0
    # a page whose one text block hangs under a node the site never had
    cleaner.partial_fit(
        "<html><body><section class='fresh'><p>One new paragraph here. And one more.</p></section></body></html>"
    )
    assert cleaner.n_pages == len(site_pages) + 1
    assert _CountingTable.calls == 0  # the cost of learning a page is what the page adds


@pytest.fixture()
def parses(monkeypatch):
    seen = []
    as_page = cleaner_module.as_page

    def counting(*args, **kwargs):
        seen.append(1)
        return as_page(*args, **kwargs)

    monkeypatch.setattr(cleaner_module, "as_page", counting)
    return seen


def test_a_full_model_stops_reading_and_says_so(site_pages, parses, monkeypatch):
    cap = _recount(SiteCleaner(**FAST).fit(site_pages)) // 2  # about half the site fits
    monkeypatch.setattr(learn_caps, "MAX_SITE_ENTRIES", cap)
    cleaner = SiteCleaner(**FAST).fit(site_pages)
    learnt = cleaner.n_pages
    assert 0 < learnt < len(site_pages) and _recount(cleaner) <= cap
    assert cleaner.fit_status == "full"
    # every page is accounted for: learnt, or counted as not learnt for the full model
    assert cleaner.model_full_pages == cleaner.skipped_pages == len(site_pages) - learnt
    # the pages past the one that did not fit were never parsed
    parses.clear()
    cleaner.fit(site_pages)
    assert len(parses) == learnt + 1
    # nor are the pages partial_fit is given afterwards
    parses.clear()
    cleaner.partial_fit("<html><body><p>Another short page.</p></body></html>")
    assert parses == [] and cleaner.n_pages == learnt
    assert cleaner.model_full_pages == len(site_pages) - learnt + 1 and cleaner.fit_status == "full"


def test_the_cli_fit_says_when_the_model_is_full(site_pages, tmp_path, monkeypatch, capsys):
    paths = []
    for i, (_url, html) in enumerate(site_pages):
        paths.append(tmp_path / f"p{i:02d}.html")
        paths[-1].write_text(html, encoding="utf-8")
    monkeypatch.setattr(learn_caps, "MAX_SITE_ENTRIES", 2000)
    assert cli_main(["fit", *map(str, paths), "--model", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out  # the summary line: the cap met, as a page's `truncated`
    assert "(fit full); not learnt: " in out and " pages past the model's entry cap" in out
    assert SiteCleaner.load(tmp_path / "m.json").n_pages < len(site_pages)


def test_a_shard_that_fills_up_makes_the_whole_fit_say_so(site_pages, monkeypatch):
    monkeypatch.setattr(parallel_fit, "MIN_SIZE_PER_PROCESS", 20_000)  # shards for a small site
    # the first shard is learnt in this process, under the lowered cap; the other in a
    # worker process, under the real one
    cap = _recount(SiteCleaner(**FAST).fit(site_pages[:6])) // 2
    monkeypatch.setattr(learn_caps, "MAX_SITE_ENTRIES", cap)
    cleaner = SiteCleaner(**FAST).fit(site_pages, n_jobs=2)
    assert cleaner.fit_status == "full"
    assert 0 < cleaner.model_full_pages == cleaner.skipped_pages
    assert cleaner.n_pages + cleaner.model_full_pages == len(site_pages)
    # learning more finds the model full too
    cleaner.partial_fit("<html><body><p>Another short page.</p></body></html>")
    assert cleaner.model_full_pages > 0 and cleaner.n_pages + cleaner.model_full_pages == len(site_pages) + 1
