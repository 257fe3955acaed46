"""The explain view: ``SiteCleaner.explain``, ``sst_cleaner.explain``, ``sst-cleaner explain``
and the crawl's ``SST_EXPLAIN_DIR`` report. The report is read back with lxml (no live
markup from a hostile page, no external URL) and rendered by headless Chromium (kept and
removed blocks visible; no request leaves the report), skipped only where ``chromium``
is not installed."""

from __future__ import annotations

import http.server
import io
import os
import shutil
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import lxml.html
import pytest

import sst_cleaner
from sst_cleaner import SiteCleaner
from sst_cleaner.cli._main import main
from sst_cleaner.engine._explain import (
    CSP,
    KEPT_COLOUR,
    MAX_BLOCK_CHARS,
    REMOVED_COLOUR,
    render_report,
)

WORDS = (
    "river bridge library council harbour market winter garden theatre museum school "
    "railway orchard festival meadow lantern quarry chapel mill ferry"
).split()

#: what a hostile page tries: script, handlers, javascript: links, attribute breakouts,
#: CSS that loads, markup in its text, title and URL
HOSTILE_TEXT = (
    "<script>alert('text')</script> \"><img src=x onerror=alert(1)> "
    '<a href="javascript:alert(2)">go</a> <style>body{background:url(http://text.example/t.png)}</style>'
)
EVIL_HOST = "evil.example"


def _article(i: int) -> str:
    words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(60)]
    return " ".join(words[:20]).capitalize() + ". " + " ".join(words[20:40]) + ". " + " ".join(words[40:]) + "."


def site_page(i: int, hostile: bool = False, extra: str = "") -> str:
    """A page of a generated news site: a nav, an article, a footer."""
    body = f"<p>{_article(i)}</p><p>{_article(i + 50)}</p>"
    title = f"Story {WORDS[i % len(WORDS)]}"
    head = ""
    if hostile:
        from html import escape

        title = escape("</title><script>alert('title')</script>")
        body += f"<p>{escape(HOSTILE_TEXT)} The {WORDS[i % 20]} report continues here at length.</p>"
        body += (
            "<script>alert('live')</script><img src='http://evil.example/pixel.png' onerror='alert(3)'>"
            "<iframe src='http://evil.example/frame'></iframe>"
            f"<p class='x\" onmouseover=\"alert(4)' style='background:url(http://{EVIL_HOST}/bg.png)'>"
            f"<a href='javascript:alert(5)'>A javascript link in the story about the {WORDS[i % 19]}.</a></p>"
        )
        head = f"<style>body{{background:url(http://{EVIL_HOST}/css.png)}}</style><link rel=stylesheet href='http://{EVIL_HOST}/x.css'>"
    return (
        f"<html><head><title>{title}</title>{head}</head><body>"
        "<ul class='nav'><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li>"
        "<li><a href='/sport'>Sport</a></li><li><a href='/about'>About us</a></li></ul>"
        f"<div class='article'><h1>Headline about the {WORDS[i % len(WORDS)]} {WORDS[(i + 3) % len(WORDS)]}</h1>"
        f"{body}{extra}</div>"
        "<div id='footer'>Copyright Example Daily. All rights reserved. Contact the newsroom.</div></body></html>"
    )


SITE = [site_page(i) for i in range(8)]


# -- reading a report ------------------------------------------------------------------

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "table",
    "tr", "td", "th", "a", "div", "details", "summary", "ul", "li",
}  # fmt: skip
ALLOWED_ATTRS = {"class", "id", "href", "charset", "http-equiv", "content", "name", "lang"}


def assert_inert(report: str) -> lxml.html.HtmlElement:
    """The report holds no live markup of a page: only the report's own tags and
    attributes, no script, no handler, no link out of it, no style but its own."""
    doc = lxml.html.document_fromstring(report)
    tags = {el.tag for el in doc.iter() if isinstance(el.tag, str)}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    assert not doc.xpath("//script | //img | //iframe | //link | //object | //embed | //base | //form")
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        assert set(el.attrib) <= ALLOWED_ATTRS, (el.tag, dict(el.attrib))
        assert not any(name.lower().startswith("on") for name in el.attrib)
        href = el.get("href")
        if href is not None:
            assert href.startswith("#p"), href  # links stay inside the report
    metas = doc.xpath("//meta[@http-equiv='Content-Security-Policy']")
    assert len(metas) == 1 and metas[0].get("content") == CSP
    assert "default-src 'none'" in CSP and "unsafe" not in CSP and "script-src 'none'" in CSP
    styles = doc.xpath("//style")
    assert len(styles) == 1 and "url(" not in styles[0].text_content()
    return doc


# -- the explanation as data -----------------------------------------------------------


def test_explain_gives_the_clean_verdict_with_its_evidence_and_leaves_the_model_alone():
    cleaner = SiteCleaner().fit(SITE)
    before = cleaner.to_dict()
    page = site_page(3)
    why = cleaner.explain(page)
    result = cleaner.clean(page)
    assert cleaner.to_dict() == before
    assert [(b.xpath, b.label, round(b.score, 9)) for b in why.blocks] == [
        (b.xpath, b.label, round(b.score, 9)) for b in result.blocks
    ]
    assert why.status == result.status == "ok"
    assert why.words_kept == len(result.text.split()) > 0
    assert why.decided.startswith("site model") and "7 other learnt pages" in why.decided
    nav = [b for b in why.blocks if b.text in ("Home", "News", "Sport", "About us")]
    prose = [b for b in why.blocks if b.text.startswith(_article(3)[:30])]
    assert len(nav) == 4 and len(prose) == 1
    assert all(not b.kept for b in nav) and prose[0].kept
    # the nav's node recurs on every page, its text is all links; the article's is new text
    for b in nav:
        assert b.evidence["node_share"] == 1.0 and b.evidence["link_density"] == 1.0
        assert b.verdicts.get("CETD") in ("kept", "removed")
    assert prose[0].evidence["sent_rec"] == 0.0 and prose[0].evidence["link_density"] == 0.0
    assert all(0.0 <= p <= 1.0 for _t, p, _k in prose[0].sentences)
    assert any(t.path.endswith("li") and t.pages == 8 for t in why.template_nodes)


def test_explain_says_which_step_decided():
    alone = SiteCleaner().explain(site_page(1))
    assert alone.decided.startswith("page-level fallback") and "learnt no page" in alone.decided
    assert alone.template_nodes == [] and alone.blocks
    cetd = SiteCleaner("cetd").explain(site_page(1))
    assert cetd.blocks and any("no further evidence" in n for n in cetd.notes)
    assert all(b.evidence == {} for b in cetd.blocks)


def test_explain_says_when_the_page_level_scorer_decided_for_the_site_model(monkeypatch):
    cleaner = SiteCleaner().fit(SITE)
    # a site scorer keeping nothing, a page scorer keeping the article's prose (as
    # tests/test_default_method.py makes the site model come back empty)
    monkeypatch.setattr(
        cleaner._impl._scorers,
        "predict",
        lambda rows, alone: [1.0 if alone and len(s.text) > 60 else 0.0 for _b, s, _f in rows],
    )
    page = site_page(4)
    result = cleaner.clean(page)
    why = cleaner.explain(page)
    assert result.status == why.status == "site_empty" and why.method == "default(page-level)"
    assert why.decided.startswith("site model kept almost nothing (site_empty): the page-level scorer decided")
    assert [b.label for b in why.blocks] == [b.label for b in result.blocks]
    assert any("the page-level scorer decided" in n for n in why.notes)
    assert why.words_kept == len(result.text.split()) > 0


# -- a hostile page --------------------------------------------------------------------


def test_the_report_of_a_hostile_page_shows_its_payloads_as_text_only(tmp_path):
    hostile = site_page(5, hostile=True)
    url = "http://site.example/a?q=\"><script>alert('url')</script>"
    out = tmp_path / "r.html"
    report = sst_cleaner.explain([*SITE, (url, hostile)], out)
    assert out.read_text(encoding="utf-8") == report
    doc = assert_inert(report)
    text = doc.text_content()
    # shown, as text: the page's markup did not vanish, it was escaped
    assert "<script>alert('text')</script>" in text
    assert "</title><script>alert('title')</script>" in text
    assert "<script>alert('url')</script>" in text
    assert "url(http://text.example/t.png)" in text
    # the page's attributes, styles and scripts never reach the report, even as text
    for absent in (EVIL_HOST, "alert(3)", "alert(4)", "alert(5)", "alert('live')"):
        assert absent not in report, absent


def test_the_command_line_report_escapes_file_names_and_lists_bad_inputs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for i, page in enumerate(SITE):
        (site / f"p{i}.html").write_text(page, encoding="utf-8")
    evil_name = "x\"><script>alert('name')<\\script><a href='javascript:1'>.html"
    (site / evil_name).write_text(site_page(9, hostile=True), encoding="utf-8")
    (site / "broken.html").write_bytes(b"%PDF-1.4 not a page")
    out = tmp_path / "report.html"
    assert main(["explain", str(site), "-o", str(out), "--max-pages", "20"]) == 1  # the PDF
    report = out.read_text(encoding="utf-8")
    doc = assert_inert(report)
    text = doc.text_content()
    assert "<script>alert('name')" in text and "broken.html" in text and "not_html" in text
    assert len(doc.xpath("//div[contains(@class,'block')]")) > 9 * 5
    rows = doc.xpath("//table[@class='pages']//tr[td]")
    assert len(rows) == 9  # the page list: every page but the PDF


def test_explain_reads_standard_input_and_caps_pages_and_text(tmp_path, monkeypatch, capsys):
    long_page = site_page(2, extra="<p>" + "word " * 5000 + "end.</p>")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(long_page.encode("utf-8"))))
    out = tmp_path / "stdin.html"
    assert main(["explain", "-", "-o", str(out)]) == 0
    doc = assert_inert(out.read_text(encoding="utf-8"))
    texts = [t.text_content() for t in doc.xpath("//div[@class='text']")]
    assert max(len(t) for t in texts) == MAX_BLOCK_CHARS and any(t.endswith("\u2026") for t in texts)
    assert "judged alone" in doc.text_content()

    site = tmp_path / "site"
    site.mkdir()
    for i, page in enumerate(SITE):
        (site / f"p{i}.html").write_text(page, encoding="utf-8")
    out = tmp_path / "three.html"
    assert main(["explain", str(site), "-o", str(out), "--max-pages", "3"]) == 0
    doc = assert_inert(out.read_text(encoding="utf-8"))
    assert len(doc.xpath("//h2[starts-with(@id,'p')]")) == 3
    assert "5 more pages not shown" in doc.text_content()
    with pytest.raises(SystemExit):
        main(["explain", str(site), "-o", str(out), "--max-pages", "0"])
    with pytest.raises(ValueError, match="max_pages"):
        sst_cleaner.explain(SITE, max_pages=10**6)


def test_explain_learns_each_site_of_a_warc(tmp_path):
    from test_cli_inputs import write_warc

    other = [s.replace("Example Daily", "Other Gazette").replace("'nav'", "'menu'") for s in SITE[:4]]
    pages = [(f"http://daily.example/{i}", p) for i, p in enumerate(SITE[:5])]
    pages += [(f"http://gazette.example/{i}", p) for i, p in enumerate(other)]
    warc = tmp_path / "crawl.warc.gz"
    write_warc(warc, pages, compress=True)
    out = tmp_path / "warc.html"
    assert main(["explain", str(warc), "-o", str(out)]) == 0
    doc = assert_inert(out.read_text(encoding="utf-8"))
    rows = doc.xpath("//table[@class='pages']//tr[td]")
    assert [r.xpath("td[2]")[0].text_content() for r in rows] == [url for url, _p in pages]
    decided = [r.xpath("td[4]")[0].text_content() for r in rows]
    assert (
        decided
        == ["site model: judged with the evidence of the site's 4 other learnt pages"] * 5
        + ["site model: judged with the evidence of the site's 3 other learnt pages"] * 4
    )
    meta = doc.text_content()
    assert "daily.example" in meta and "gazette.example" in meta


def test_explain_with_a_saved_model(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for i, page in enumerate(SITE):
        (site / f"p{i}.html").write_text(page, encoding="utf-8")
    new = tmp_path / "new.html"
    new.write_text(site_page(30), encoding="utf-8")
    model = tmp_path / "site.json"
    assert main(["fit", str(site), "--model", str(model)]) == 0
    out = tmp_path / "model.html"
    assert main(["explain", str(new), "--model", str(model), "-o", str(out)]) == 0
    doc = assert_inert(out.read_text(encoding="utf-8"))
    assert "judged with the evidence of the site's 8 other learnt pages" in doc.text_content()
    model.write_text('{"not": "a model"}', encoding="utf-8")
    assert main(["explain", str(new), "--model", str(model), "-o", str(tmp_path / "x.html")]) == 3
    assert not (tmp_path / "x.html").exists()


def test_render_report_caps_the_pages_it_shows():
    from sst_cleaner.engine._explain import MAX_REPORT_PAGES

    why = SiteCleaner().explain(site_page(0))
    report = render_report([why] * (MAX_REPORT_PAGES + 3))
    doc = lxml.html.document_fromstring(report)
    assert len(doc.xpath("//h2[starts-with(@id,'p')]")) == MAX_REPORT_PAGES
    assert "3 more pages not shown" in doc.text_content()


# -- rendered by Chromium --------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def _screenshot(page: Path, png: Path, tmp: Path, extra: tuple = ()) -> None:
    args = [
        str(CHROMIUM),
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        f"--screenshot={png}",
        "--window-size=1200,1400",
        "--hide-scrollbars",
        *extra,
        page.as_uri(),
    ]
    if os.geteuid() == 0:  # Chromium refuses to run as root with its sandbox
        args.insert(1, "--no-sandbox")
    proc = subprocess.run(args, capture_output=True, timeout=180)
    assert png.exists(), proc.stderr.decode("utf-8", "replace")[-2000:]


def _pixels(png: Path) -> list[tuple[int, int, int]]:
    """The RGB pixels of a non-interlaced 8-bit RGB or RGBA PNG (what Chromium writes)."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, chunk = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    out = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.extend(tuple(line[i : i + 3]) for i in range(0, stride, bpp))
        prev = line
    return out


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _count(pixels: list, colour: str, tolerance: int = 4) -> int:
    r, g, b = _rgb(colour)
    return sum(
        1 for p in pixels if abs(p[0] - r) <= tolerance and abs(p[1] - g) <= tolerance and abs(p[2] - b) <= tolerance
    )


@needs_chromium
def test_chromium_renders_kept_and_removed_blocks_in_their_colours(tmp_path):
    report = tmp_path / "report.html"
    sst_cleaner.explain(SITE[:2] + [site_page(i) for i in range(2, 8)], report, max_pages=1)
    png = tmp_path / "shot.png"
    _screenshot(report, png, tmp_path)
    pixels = _pixels(png)
    assert len(pixels) == 1200 * 1400
    # the kept article and the removed nav and footer, each a filled box of many pixels
    # (the legend draws the colours as thin borders only)
    assert _count(pixels, KEPT_COLOUR) > 20_000
    assert _count(pixels, REMOVED_COLOUR) > 20_000
    # and some text on them: the report is not just two colours
    assert sum(1 for p in pixels if max(p) < 90) > 2_000


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list = []

    def do_GET(self) -> None:  # noqa: N802 (the handler's API)
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/css" if self.path.endswith(".css") else "image/png")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@needs_chromium
def test_the_rendered_report_makes_no_request(tmp_path):
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        loads = (
            f"<img src='{base}/img.png'><link rel=stylesheet href='{base}/x.css'>"
            f"<p style='background:url({base}/bg.png)'>A styled paragraph of the story about the river.</p>"
            f"<script src='{base}/s.js'></script><iframe src='{base}/frame'></iframe>"
            f"<p>Plain text naming {base}/text.png and url({base}/css-in-text.png) in the story.</p>"
        )
        pages = [site_page(i, hostile=(i == 1), extra=loads) for i in range(6)]
        report = tmp_path / "report.html"
        sst_cleaner.explain(pages, report)
        # the control: the same harness sees a page that does load its resources
        control = tmp_path / "control.html"
        control.write_text(f"<html><body>{loads}</body></html>", encoding="utf-8")
        _screenshot(control, tmp_path / "control.png", tmp_path)
        assert _Recorder.hits, "the harness saw no request from a page that makes some"
        _Recorder.hits = []
        _screenshot(report, tmp_path / "report.png", tmp_path, ("--virtual-time-budget=2000",))
        assert _Recorder.hits == []
        doc = assert_inert(report.read_text(encoding="utf-8"))
        assert f"{base}/text.png" in doc.text_content()  # the page's text is shown, never loaded
    finally:
        server.shutdown()
        server.server_close()


# -- a crawl -----------------------------------------------------------------------------


def test_the_explain_settings_are_checked():
    from sst_cleaner.scrapy._settings import load_config

    assert load_config({}).explain_dir is None and load_config({}).explain_pages == 5
    assert load_config({"SST_EXPLAIN_DIR": "out", "SST_EXPLAIN_PAGES": "2"}).explain_pages == 2
    with pytest.raises(ValueError, match="SST_EXPLAIN_PAGES"):
        load_config({"SST_EXPLAIN_PAGES": 0})


@pytest.mark.parametrize("workers", ["process", "thread"])
def test_a_crawl_writes_its_explain_report_at_the_close(demo_server, tmp_path, workers):
    from conftest import crawl_in_subprocess, sst_stat

    settings = {
        "SST_METHOD": "default",
        "SST_WORKERS": workers,
        "SST_SAMPLE_PAGES": 6,
        "SST_EXPLAIN_DIR": str(tmp_path / "explain"),
        "SST_EXPLAIN_PAGES": 3,
    }
    result = crawl_in_subprocess(tmp_path, "explain", url=demo_server.url, settings=settings, max_pages=12)
    path = tmp_path / "explain" / "probe-explain.html"
    assert path.exists(), result["log"][-3000:]
    doc = assert_inert(path.read_text(encoding="utf-8"))
    pages = doc.xpath("//h2[starts-with(@id,'p')]")
    assert len(pages) == 3 == sst_stat(result, "explain_pages")  # one site, its first 3 pages
    decided = [r.xpath("td[4]")[0].text_content() for r in doc.xpath("//table[@class='pages']//tr[td]")]
    assert len(decided) == 3 and all(d.startswith("site model: judged with") for d in decided), decided
    assert doc.xpath("//div[contains(@class,'kept')]") and doc.xpath("//div[contains(@class,'removed')]")
    assert demo_server.url.split("//")[1].split("/")[0].split(":")[0] in doc.text_content()
    assert sst_stat(result, "errors") == 0
