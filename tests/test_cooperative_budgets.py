"""Time budgets are kept by checks at safe points of the engine's own loops: a page that
overruns stops there, gets the fallback, and leaves the cleaner as it was."""

from __future__ import annotations

from dataclasses import replace

from sst_cleaner import SiteCleaner


def _sentences_page(n_blocks: int, per_block: int, seed: int = 0) -> str:
    """A page whose cost is in its sentences (the default method judges each one) while its
    elements stay few (what CETD, the fallback, walks)."""
    paras = []
    for b in range(n_blocks):
        said = " ".join(f"Item {seed}-{b}-{s} tells a short thing about part {s % 7}." for s in range(per_block))
        paras.append(f"<p>{said}</p>")
    return (
        "<html><head><title>Slow</title></head><body><nav><a href='/'>Home</a> <a href='/a'>About</a></nav>"
        f"<article><h1>Slow page {seed}</h1>{''.join(paras)}</article><footer>Footer text</footer></body></html>"
    )


def _site_pages(n: int) -> list[tuple[str, str]]:
    return [(f"https://example.org/p{i}", _sentences_page(4, 3, seed=i)) for i in range(n)]


SLOW = _sentences_page(300, 30)


def test_a_slow_page_over_a_tiny_budget_is_over_budget_with_the_fallback_text():
    result = SiteCleaner(page_time_budget=0.02).clean(SLOW)
    assert result.status == "over_budget"
    if result.method == "cetd":  # the fallback finished within its own budget
        assert result.text == SiteCleaner("cetd", page_time_budget=None).clean(SLOW).text
    else:  # it overran too: the page whole, one block
        assert len(result.blocks) == 1 and result.blocks[0].xpath == "/html/body"
        assert "Item 0-299-29 tells a short thing" in result.text
    assert result.title == "Slow"


def test_the_same_page_within_its_budget_is_cleaned_by_the_method():
    result = SiteCleaner(page_time_budget=None).clean(SLOW)
    assert result.status == "ok" and result.method.startswith("default")
    assert "Item 0-299-29 tells a short thing" in result.text


def test_a_cleaner_cut_by_its_budget_cleans_as_a_fresh_one_afterwards():
    # Cut at many different points (the budgets end at different checks): nothing is left
    # half-done (a lock held, a cache half filled): the same cleaner then cleans every page
    # exactly as a fresh one fitted on the same pages.
    pages = _site_pages(6)
    cleaner = SiteCleaner(page_time_budget=None).fit(pages)
    fresh = SiteCleaner(page_time_budget=None).fit(pages)
    assert cleaner.fit_status == "ok"
    cut = 0
    for budget in (1e-6, 0.002, 0.01, 0.03, 0.06, 0.1):
        cleaner.limits = replace(cleaner.limits, page_time_budget=budget)
        cut += cleaner.clean(SLOW, url="https://example.org/slow").status == "over_budget"
    assert cut >= 1
    cleaner.limits = replace(cleaner.limits, page_time_budget=None)
    for url, html in [*pages, ("https://example.org/slow", SLOW)]:
        got, want = cleaner.clean(html, url=url), fresh.clean(html, url=url)
        assert (got.status, got.method, got.text) == (want.status, want.method, want.text)
        assert [(b.xpath, b.label, b.score) for b in got.blocks] == [(b.xpath, b.label, b.score) for b in want.blocks]
    assert cleaner.to_dict() == fresh.to_dict()
