"""CEHTD-DS (section 3.4 of the CETD paper): each equation against values worked out by
hand from the paper's definitions; the ``cehtd`` method on a generated page with a
centred article between two narrow columns of long prose, from hand-written layout
attributes and (where Chromium is installed) from a real render; the fallback on pages
without layout; the offline renderer and ``--render`` on the command line."""

from __future__ import annotations

import http.server
import json
import logging
import math
import random
import re
import threading

import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.cli._main import main
from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine.methods.cehtd import (
    STATUS_NO_LAYOUT,
    HybridDensities,
    content_column,
    hybrid_char_number,
    hybrid_char_numbers,
    hybrid_densities,
    hybrid_text_density,
    normal_cdf,
    visual_importance,
)
from sst_cleaner.engine.methods.cetd import compute_densities
from sst_cleaner.render import Renderer, find_chromium, layout_script

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian package `chromium`)")

# P(|Z| <= 1) and P(0 <= Z <= 1) for a standard normal Z
P_ONE_SIGMA = 0.6826894921370859
P_HALF = P_ONE_SIGMA / 2


# -- Definition 3.3 ----------------------------------------------------------------------
def test_visual_importance_is_the_normal_mass_over_the_nodes_extent():
    # Node_L spans [100, 900]: mu = 500, sigma = 400
    assert normal_cdf(500, 500, 400) == pytest.approx(0.5)
    assert visual_importance(100, 900, 100, 900) == pytest.approx(P_ONE_SIGMA)  # x_L1, x_L2 -> -1, +1
    assert visual_importance(100, 500, 100, 900) == pytest.approx(P_HALF)  # the left half
    assert visual_importance(500, 900, 100, 900) == pytest.approx(P_HALF)
    # two sigmas: P(1 <= Z <= 2) = Phi(2) - Phi(1)
    assert visual_importance(900, 1300, 100, 900) == pytest.approx(0.9772498680518208 - 0.8413447460685429)
    # a centred node of 200px weighs more than one of the same width at the side:
    # Phi(0.25) - Phi(-0.25) against Phi(-0.5) - Phi(-1)
    assert visual_importance(400, 600, 100, 900) == pytest.approx(0.5987063256829237 - 0.4012936743170763)
    assert visual_importance(100, 300, 100, 900) == pytest.approx(0.3085375387259869 - 0.15865525393145707)
    assert visual_importance(-10_000, 10_000, 100, 900) == pytest.approx(1.0)


def test_a_hidden_or_empty_node_has_no_visual_importance():
    assert visual_importance(100, 900, 100, 900, visible=False) == 0.0
    assert visual_importance(300, 300, 100, 900) == 0.0


def test_content_column_is_the_widest_visible_node():
    boxes = [(0, 1280, False), (10, 900, True), None, (200, 1000, True), (0, 889, True)]
    assert content_column(boxes) == (10, 900)  # first of the widest; the hidden one is not a column
    assert content_column([None, (5, 5, True), (0, 100, False)]) is None


# -- section 3.4.2 -----------------------------------------------------------------------
def test_hybrid_char_number_weighs_a_leaf_and_sums_the_sons():
    assert hybrid_char_number(0.25, 40) == 10.0
    page = parse_html("<html><body><div><p>abcd</p><p>efghijkl</p>xy</div></body></html>")
    d = compute_densities(page.root)
    body, div, p1, p2 = range(4)
    vi = [0.0, 0.5, 0.25, 1.0]
    hc = hybrid_char_numbers(d, vi)
    # the div's own text "xy" weighs with the div's VI; the sons' HC are added
    assert hc[p1] == 1.0 and hc[p2] == 8.0
    assert hc[div] == pytest.approx(1.0 + 8.0 + 0.5 * 2)
    assert hc[body] == hc[div]


def test_hybrid_text_density_is_eq_2_with_hybrid_char_numbers():
    # HC=50, C=100, T=4, LC=20, LT=1 on a page with LC_b=30, HC_b=200:
    # HTD = 50/4 * log_{ln(50/80*20 + 30/200*50 + e)} (50/20 * 4/1)
    expected = 12.5 * math.log(10.0) / math.log(math.log(12.5 + 7.5 + math.e))
    assert hybrid_text_density(50, 100, 4, 20, 1, 30, 200) == pytest.approx(expected)


def test_a_leaf_takes_t_as_hc_over_c():
    # T = 0 -> HC/C = 0.3: HC/T = 100 = C, and the logarithm's argument is HC * 0.3 = 9
    expected = 100 * math.log(9.0) / math.log(math.log(30 / 100 * 0 + 10 / 500 * 30 + math.e))
    assert hybrid_text_density(30, 100, 0, 0, 0, 10, 500) == pytest.approx(expected)


def test_links_only_hidden_and_link_free_pages():
    assert hybrid_text_density(40, 40, 2, 40, 2, 10, 100) == 0.0  # links only (3.3)
    assert hybrid_text_density(0, 40, 2, 0, 0, 10, 100) == 0.0  # hidden: no hybrid characters
    # the logarithm would be negative (VI below the link share): counted as 0
    assert hybrid_text_density(5, 100, 1, 50, 1, 10, 100) == 0.0
    # no link on the page: every base is ln(e) = 1, HTD falls back to HC/T
    assert hybrid_text_density(30, 100, 4, 0, 0, 0, 500) == pytest.approx(7.5)


def test_with_full_visual_importance_htd_is_ctd():
    """VI = 1 everywhere makes HC = C and the T adaption the pseudo-count 1: Eq. 4 is Eq. 2."""
    page = parse_html(
        "<html><body><div><p>Some words of text here, <a href='/x'>a link</a> and more.</p>"
        "<ul><li><a href='/a'>one</a></li><li><a href='/b'>two</a></li></ul>"
        "<p>A longer paragraph of plain prose without any link inside it at all.</p></div></body></html>"
    )
    d = compute_densities(page.root)
    hd = HybridDensities(d, [1.0] * len(d))
    assert hd.HTD == pytest.approx(d.CTD)
    assert hd.density_sum("htd") == pytest.approx(d.density_sum("ctd"))
    assert hd.max_density_sum("htd") == d.max_density_sum("ctd")


# -- the generated page ------------------------------------------------------------------
WORDS = "the of river market council season harbour winter museum garden village bridge railway library".split()
VIEWPORT = 1280
COLUMNS = {"left": (0, 200), "main": (200, 880), "right": (1080, 200)}


def _prose(rng: random.Random, sentences: int, mark: str) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + f" {mark}{k}." for k in range(sentences)
    )


def columns_page(layout: bool) -> str:
    """A centred article (10 paragraphs) between two 200px columns of long prose (4
    paragraphs of 6 sentences each). ``layout``: write the boxes by hand as the layout
    script would (every element's extent; the paragraphs fill their column)."""
    rng = random.Random(7)

    def attrs(name: str) -> str:
        if not layout:
            return ""
        x, w = COLUMNS[name]
        return f' data-sst-x="{x}" data-sst-w="{w}" data-sst-vis="1"'

    def column(name: str, paragraphs: int, sentences: int) -> str:
        ps = "".join(f"<p{attrs(name)}>{_prose(rng, sentences, name)}</p>" for _ in range(paragraphs))
        return f'<div id="{name}"{attrs(name)}>{ps}</div>'

    full = f' data-sst-x="0" data-sst-w="{VIEWPORT}" data-sst-vis="1"' if layout else ""
    body = f' data-sst-layout="1" data-sst-vw="{VIEWPORT}"{full}' if layout else ""
    head = attrs("main").join(["<h1", ">Harbour article</h1>"])
    main = column("main", 10, 5).replace(
        '<div id="main"' + attrs("main") + ">", f'<div id="main"{attrs("main")}>{head}'
    )
    return (
        "<!DOCTYPE html><html><head><title>Harbour</title><style>"
        "body{margin:0} #wrap{display:flex;width:1280px} #left,#right{width:200px;flex:none}"
        " #main{width:880px;flex:none}</style></head>"
        f'<body{body}><div id="wrap"{full}>{column("left", 4, 6)}{main}{column("right", 4, 6)}</div></body></html>'
    )


def _kept(text: str) -> set[str]:
    return {name for name in ("left", "main", "right") if f"{name}0." in text}


def test_cetd_keeps_the_columns_of_prose():
    assert _kept(SiteCleaner(method="cetd").clean(columns_page(layout=True)).text) == {"left", "main", "right"}


def test_cehtd_drops_the_side_columns_from_hand_written_layout():
    result = SiteCleaner(method="cehtd").clean(columns_page(layout=True))
    assert (result.method, result.status) == ("cehtd", "ok")
    assert _kept(result.text) == {"main"}
    assert "Harbour article" in result.text


@needs_chromium
def test_cehtd_drops_the_side_columns_from_a_chromium_render():
    with Renderer() as r:
        html = r.render(columns_page(layout=False), "http://news.example.com/harbour.html")
    page = parse_html(html)
    main = page.root.xpath("//div[@id='main']")[0]
    assert (main.get("data-sst-x"), main.get("data-sst-w"), main.get("data-sst-vis")) == ("200", "880", "1")
    assert _kept(SiteCleaner(method="cetd").clean(html).text) == {"left", "main", "right"}
    result = SiteCleaner(method="cehtd").clean(html)
    assert (result.method, _kept(result.text)) == ("cehtd", {"main"})


def test_with_links_in_the_article_the_low_hc_base_keeps_the_columns():
    """Eq. 4 on a page with links: a small HC_i brings the logarithm's base near 1, which
    raises off-centre densities again (docs/methods.md). One inline link per article
    paragraph: cetd loses the article to the columns, cehtd keeps it but keeps the
    columns too."""
    html = re.sub(
        r'(<p data-sst-x="200"[^>]*>[^<]*)</p>',
        r'\1 See <a href="/r" data-sst-x="300" data-sst-w="120" data-sst-vis="1">the report</a>.</p>',
        columns_page(layout=True),
    )
    assert html.count('href="/r"') == 10
    assert _kept(SiteCleaner(method="cetd").clean(html).text) == {"left", "right"}
    assert _kept(SiteCleaner(method="cehtd").clean(html).text) == {"left", "main", "right"}


def test_hidden_text_inside_the_article_is_not_content():
    html = columns_page(layout=True).replace(
        "<h1", '<p data-sst-x="0" data-sst-w="0" data-sst-vis="0">Hidden disclaimer text here.</p><h1', 1
    )
    hd = hybrid_densities(parse_html(html).root)
    assert hd is not None
    text = SiteCleaner(method="cehtd").clean(html).text
    assert "Harbour article" in text and "Hidden disclaimer" not in text


def test_forged_or_broken_layout_values_are_read_as_absent():
    html = columns_page(layout=True).replace('data-sst-x="1080"', 'data-sst-x="1e999"')
    html = html.replace('data-sst-w="880"', 'data-sst-w="' + "9" * 40 + '"', 1)
    result = SiteCleaner(method="cehtd").clean(html)  # the boxes fall back to the ancestors'
    assert result.method == "cehtd" and "main0." in result.text


# -- without layout ----------------------------------------------------------------------
def test_a_page_without_layout_is_cleaned_by_cetd_and_says_so(caplog):
    html = columns_page(layout=False)
    with caplog.at_level(logging.WARNING, logger="sst_cleaner.engine.methods.cehtd"):
        result = SiteCleaner(method="cehtd").clean(html, url="https://example.org/a")
    assert (result.method, result.status) == ("cetd", STATUS_NO_LAYOUT)
    assert result.text == SiteCleaner(method="cetd").clean(html).text
    assert "https://example.org/a carries no layout" in caplog.text


def test_cehtd_model_saves_and_loads(tmp_path, caplog):
    pages = [columns_page(layout=True), columns_page(layout=True).replace("Harbour article", "Bridge article")]
    cleaner = SiteCleaner(method="cehtd", inline_share=None).fit(pages)
    cleaner.save(tmp_path / "m.json")
    with caplog.at_level(logging.WARNING, logger="sst_cleaner.engine.methods.cehtd"):
        again = SiteCleaner.load(tmp_path / "m.json")
    assert again.n_pages == 2 and again.params == {"inline_share": None}
    assert "no layout" not in caplog.text  # the load's check ran on a page with layout
    assert again.clean(columns_page(layout=True)).text == cleaner.clean(columns_page(layout=True)).text


# -- the renderer ------------------------------------------------------------------------
class _CountingHandler(http.server.BaseHTTPRequestHandler):
    hits: list = []

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@needs_chromium
def test_rendering_is_offline_and_page_scripts_are_off_unless_asked():
    server = http.server.HTTPServer(("127.0.0.1", 0), _CountingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    page = (
        f'<html><head><link rel="stylesheet" href="{base}/style.css"></head><body>'
        f'<img src="{base}/img.png"><iframe src="{base}/frame.html"></iframe><p>Text</p>'
        "<script>document.body.setAttribute('data-ran', 'yes')</script></body></html>"
    )
    try:
        with Renderer() as r:
            quiet = r.render(page, f"{base}/page.html")
        with Renderer(scripts=True) as r:
            scripted = r.render(page, f"{base}/page.html")
    finally:
        server.shutdown()
        server.server_close()
    assert _CountingHandler.hits == []  # not even the page itself: it is served from memory
    assert 'data-ran="yes"' not in quiet and 'data-ran="yes"' in scripted
    assert 'data-sst-layout="1"' in quiet and 'data-sst-vw="1280"' in quiet


def test_the_layout_script_is_public_and_writes_the_engines_attributes():
    script = layout_script()
    for name in ("data-sst-x", "data-sst-w", "data-sst-vis", "data-sst-layout", "data-sst-vw"):
        assert name in script


# -- the command line --------------------------------------------------------------------
@needs_chromium
def test_cli_renders_pages_for_cehtd(tmp_path, capsys):
    (tmp_path / "page.html").write_text(columns_page(layout=False), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["clean", str(tmp_path / "page.html"), "--method", "cehtd", "--render", "-o", str(out)]) == 0
    row = json.loads(out.read_text(encoding="utf-8"))
    assert (row["status"], _kept(row["text"])) == ("ok", {"main"})


def test_cli_without_render_says_no_layout(tmp_path):
    (tmp_path / "page.html").write_text(columns_page(layout=False), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["clean", str(tmp_path / "page.html"), "--method", "cehtd", "-o", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["status"] == STATUS_NO_LAYOUT


def test_cli_render_without_a_browser_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "page.html").write_text("<html><body><p>x</p></body></html>", encoding="utf-8")
    missing = str(tmp_path / "no-such-chromium")
    assert main(["clean", str(tmp_path / "page.html"), "--render", "--chromium", missing]) == 2
    assert "no Chromium found" in capsys.readouterr().err


@needs_chromium
def test_a_browser_that_dies_is_restarted_for_the_next_page():
    import os
    import signal

    from sst_cleaner.render import RenderError

    with Renderer() as r:
        first = r.render("<html><body><p>One</p></body></html>")
        pid = r.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RenderError):
            r.render("<html><body><p>Two</p></body></html>")
        again = r.render("<html><body><p>Three</p></body></html>")
        assert r.pid not in (None, pid)
    assert "One" in first and "Three" in again and 'data-sst-layout="1"' in again
