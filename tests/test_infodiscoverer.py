"""InfoDiscoverer on hand-built pages whose answer is worked out on paper."""

import math

import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine._result import INFORMATIVE
from sst_cleaner.engine.methods.infodiscoverer import (
    ContentBlock,
    InfoDiscovererMethod,
    TermEntropy,
    choose_threshold,
    page_blocks,
)


def test_feature_entropy_on_paper():
    # H(F) = -sum_j w_j log_d w_j, w the normalised tf, d the number of pages
    te = TermEntropy()
    te.add_page({"even": 1, "skew": 1, "two": 2, "once": 1})
    te.add_page({"even": 1, "skew": 3, "two": 2})
    assert te.entropy("even") == pytest.approx(1.0)  # paper's Fig. 6, H(F1) = 1
    assert te.entropy("once") == pytest.approx(0.0)  # H(F7) = 0
    assert te.entropy("skew") == pytest.approx(-(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)))
    te.add_page({"other": 1})
    # 3 pages: "two" is spread evenly over 2 of them: log_3 2
    assert te.entropy("two") == pytest.approx(math.log(2) / math.log(3))
    assert te.entropy("once") == pytest.approx(0.0)
    assert te.entropy("unseen") == 0.0


def _site_page(i: int, unique: str, related: str) -> str:
    rel = f"<table><tr><td>{related}</td></tr></table>" if related else ""
    return (
        f"<html><head><title>Portal</title></head><body>"
        f"<table><tr><td>alpha beta gamma</td></tr></table>"
        f"<table><tr><td><p>report {unique}</p></td></tr></table>"
        f"{rel}</body></html>"
    )


SITE = [
    ("http://ex.com/1", _site_page(1, "apple banana melon", "river stone")),
    ("http://ex.com/2", _site_page(2, "delta eagle falcon", "river stone")),
    ("http://ex.com/3", _site_page(3, "violin trumpet piano", "")),
]


def test_greedy_threshold_on_three_pages():
    # nav features: every page once -> H = 1 (block 1.0, 3 features)
    # article: "report" H = 1 plus 3 features of one page (H = 0) -> H(CB) = 1/4
    # related (pages 1, 2): river, stone in 2 of 3 pages evenly -> log_3 2 = 0.63
    # features in blocks with H(CB) < t: t 0.1, 0.2 -> 0; 0.3 -> 12 (3 articles x 4);
    # 0.4 -> 12: the count stops increasing at 0.3
    m = InfoDiscovererMethod(blocks="table", min_gain=0.0)
    m.fit([parse_html(h, url=u) for u, h in SITE])
    assert m.threshold == pytest.approx(0.3)
    res = m.clean(parse_html(SITE[0][1], url=SITE[0][0]))
    assert res.text == "report apple banana melon"
    labels = {b.text: b.label for b in res.blocks}
    assert labels["alpha beta gamma"] != INFORMATIVE
    assert labels["river stone"] != INFORMATIVE
    assert labels["report apple banana melon"] == INFORMATIVE
    # the TITLE block "Portal" is on every page (H = 1): redundant, replaced by the first
    # sentence of the informative block (section 3)
    assert res.title == "report apple banana melon"


def test_paper_rule_and_tolerance():
    blocks = [[ContentBlock([0], 0.05, 10), ContentBlock([1], 0.35, 10), ContentBlock([2], 0.95, 10)]]
    # counts: 0.1..0.3 -> 10, 0.4..0.9 -> 20: the paper's rule stops at 0.1
    assert choose_threshold(blocks, 0.0) == pytest.approx(0.1)
    blocks = [[ContentBlock([0], 0.05, 10), ContentBlock([1], 0.15, 1), ContentBlock([2], 0.35, 10)]]
    # 10 -> 11 (+10%) counts as stopped with a 20% tolerance, not with none
    assert choose_threshold(blocks, 0.2) == pytest.approx(0.1)
    assert choose_threshold(blocks, 0.0) == pytest.approx(0.2)


def test_nested_table_strings_leave_the_parent():
    html = (
        "<html><body><table><tr><td>outer one<table><tr><td>inner</td></tr></table>"
        "outer two</td></tr></table></body></html>"
    )
    pb = page_blocks(parse_html(html))
    by_text = {a.text: (pb.groups[0][i], pb.groups[1][i]) for i, a in enumerate(pb.atoms)}
    outer = [g for t, g in by_text.items() if "outer" in t]
    inner = by_text["inner"]
    assert outer and all(g[0] != inner[0] for g in outer)


def test_dom_blocks_on_div_pages():
    pages = [
        (
            f"http://ex.com/{i}",
            f"<html><body><div><ul><li>home</li><li>world</li><li>sport</li></ul></div>"
            f"<div><p>{words}</p></div></body></html>",
        )
        for i, words in enumerate(["apple banana melon", "delta eagle falcon", "violin trumpet piano"])
    ]
    for blocks in ("table", "dom"):  # no table on the page: both split the body by DIVs
        c = SiteCleaner(method="infodiscoverer", blocks=blocks, min_gain=0.0).fit(pages)
        assert c.clean(pages[1][1], url=pages[1][0]).text == "delta eagle falcon"


def test_before_two_pages_falls_back_to_the_page(tmp_path):
    c = SiteCleaner(method="infodiscoverer")
    res = c.clean(SITE[0][1])
    assert res.method == "cetd"


def test_save_load_round_trip(tmp_path):
    c = SiteCleaner(method="infodiscoverer", min_gain=0.0).fit(SITE)
    path = tmp_path / "m.json"
    c.save(path)
    d = SiteCleaner.load(path)
    assert d.n_pages == 3 and d.params == {"min_gain": 0.0}
    assert d.clean(SITE[1][1]).text == c.clean(SITE[1][1]).text == "report delta eagle falcon"
    # partial_fit after loading keeps the incremental model going
    d.partial_fit(SITE[2][1], url="http://ex.com/4")
    assert d.n_pages == 4
