"""Tests of the engine benchmark (sst_cleaner.tools.bench): the metric, the input rule, and an
end-to-end run of the command on a tiny generated corpus whose scores are worked out
by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from sst_cleaner import register_method
from sst_cleaner.engine import _registry as cleaner_module
from sst_cleaner.engine._result import CleanResult
from sst_cleaner.engine._segment import text_blocks
from sst_cleaner.tools import bench

# --------------------------------------------------------------------------------------
# metric
# --------------------------------------------------------------------------------------


def test_prf_is_a_multiset_overlap():
    # pred a b b c, gold b b d: overlap 2 -> P 2/4, R 2/3, F1 4/7
    p, r, f = bench.prf("a b b c", "b b d")
    assert p == pytest.approx(0.5) and r == pytest.approx(2 / 3) and f == pytest.approx(4 / 7)
    # a repeated predicted token only counts as often as the gold has it
    assert bench.prf("b b b", "b") == pytest.approx((1 / 3, 1.0, 0.5))


def test_prf_edge_cases():
    assert bench.prf("", "") == (1.0, 1.0, 1.0)
    assert bench.prf("!! ...", "--") == (1.0, 1.0, 1.0)  # no \w token on either side
    assert bench.prf("", "words here") == (0.0, 0.0, 0.0)
    assert bench.prf("words here", "") == (0.0, 0.0, 0.0)
    assert bench.prf("x", "y") == (0.0, 0.0, 0.0)


def test_prf_folds_case_and_nfkc():
    assert bench.prf("HELLO World", "hello world") == (1.0, 1.0, 1.0)
    # the ligature U+FB01 and fullwidth letters are the same word after NFKC
    assert bench.prf("\ufb01le \uff26\uff55\uff4c\uff4c", "file full") == (1.0, 1.0, 1.0)
    # punctuation splits tokens: "e-mail" is two tokens
    assert bench.prf("e-mail", "e mail") == (1.0, 1.0, 1.0)


def test_cjk_tokens_make_each_han_kana_hangul_character_a_token():
    # Chinese, Japanese (kanji, hiragana, katakana, the iteration mark) and Korean: one
    # token a character; Latin words and digits stay whole words, lower-cased
    assert bench.cjk_tokens("北京下雨 ABC 123") == ["北", "京", "下", "雨", "abc", "123"]
    assert bench.cjk_tokens("東京は々テスト") == ["東", "京", "は", "々", "テ", "ス", "ト"]
    assert bench.cjk_tokens("한국어ok") == ["한", "국", "어", "ok"]
    # half-width katakana is folded by NFKC to the full-width characters
    assert bench.cjk_tokens("\uff83\uff7d\uff84") == ["テ", "ス", "ト"]
    # punctuation (the ideographic comma and full stop included) is no token
    assert bench.cjk_tokens("你好，世界。") == ["你", "好", "世", "界"]
    # without those scripts it is the shared scorer's tokenisation
    text = "The \ufb01le e-mail, 2026: caf\u00e9 \u00fcber"
    assert bench.cjk_tokens(text) == bench._scoring.tokens(text)


def test_prf_cjk_scores_the_characters_a_clause_shares():
    # \w+ makes each clause one token: dropping one character loses the whole clause
    pred, gold = "北京今天下雨", "北京今天下雨了"
    assert bench.prf(pred, gold) == (0.0, 0.0, 0.0)
    p, r, f = bench.prf(pred, gold, cjk=True)
    assert (p, r) == pytest.approx((1.0, 6 / 7)) and f == pytest.approx(12 / 13)
    # on text without CJK both give the same figure
    assert bench.prf("a b b c", "b b d", cjk=True) == bench.prf("a b b c", "b b d")


def test_score_pages_macro_and_site_macro():
    pages = [
        bench.Page("a1", "a", None, "", "one two"),
        bench.Page("a2", "a", None, "", "three"),
        bench.Page("b1", "b", None, "", "four"),
    ]
    s = bench.score_pages({"a1": "one two", "a2": "three", "b1": "nothing"}, pages)
    assert s.pages == 3 and s.f1 == pytest.approx(2 / 3)
    assert s.site_f1 == pytest.approx((1.0 + 0.0) / 2) and s.sites == 2
    # a page without prediction is scored as empty
    assert bench.score_pages({}, pages[:1]).f1 == 0.0


# --------------------------------------------------------------------------------------
# input rule
# --------------------------------------------------------------------------------------


def test_decode_bom_wins():
    assert bench.decode_page(b"\xef\xbb\xbf<p>caf\xc3\xa9</p>") == ("<p>caf\u00e9</p>", "utf-8-sig")
    text, enc = bench.decode_page("<p>h\u00e9</p>".encode("utf-16"))
    assert (text, enc) == ("<p>h\u00e9</p>", "utf-16")


def test_decode_valid_utf8_beats_meta():
    data = b'<meta charset="iso-8859-1"><p>caf\xc3\xa9</p>'
    assert bench.decode_page(data) == ('<meta charset="iso-8859-1"><p>caf\u00e9</p>', "utf-8")


def test_decode_meta_used_when_not_utf8():
    data = b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251"><p>\xcf\xf0\xe8</p>'
    text, enc = bench.decode_page(data)
    assert enc == "cp1251" and text.endswith("<p>\u041f\u0440\u0438</p>")
    # a UTF-16 declaration in an 8-bit file is wrong: read as UTF-8 with replacement
    assert bench.decode_page(b'<meta charset="utf-16"><p>caf\xe9</p>')[0].endswith("caf\ufffd</p>")


def test_decode_fallbacks_without_meta():
    assert bench.decode_page(b"<p>caf\xe9</p>") == ("<p>caf\u00e9</p>", "cp1252-default")
    # two valid multi-byte characters outnumber one invalid byte: UTF-8 with replacement
    assert bench.decode_page(b"<p>\xc3\xa9\xc3\xa9 \xff</p>") == ("<p>\u00e9\u00e9 \ufffd</p>", "utf-8-replace")


def test_meta_charset_scan_matches_the_regex_rules():
    # greedy [^>]+: the last working "charset" of the tag wins
    assert bench.meta_charset(b'<meta content="x; charset=latin-9" charset="koi8-r">') == "koi8-r"
    # an unclosed <meta inside another tag, case-insensitive
    assert bench.meta_charset(b"<META name=x <meta CHARSET = 'ISO-8859-2'>") == "iso8859-2"
    assert bench.meta_charset(b"<meta charset=>") is None
    assert bench.meta_charset(b"<metacharset=utf-8>") is None  # needs one byte before charset
    assert bench.meta_charset(b"<p>charset=utf-8</p>") is None
    assert bench.meta_charset(b'<meta charset="no-such-codec">') is None
    assert bench.meta_charset(b'<meta charset="utf8">') == "utf-8"


def test_cleaneval_wrapper_removed():
    page = '<text id="http://x.org/a" title="A" encoding="utf-8">\n<html><body>hi</body></html>\n</text>\n'
    assert bench.strip_cleaneval_wrapper(page) == "<html><body>hi</body></html>\n"
    data = b'  <text id="u">\r\n<p>x</p></text>'
    assert bench.prepare_html(data) == ("<p>x</p>", "utf-8")
    plain = "<html><body><text id=1>svg text</text></body></html>"
    assert bench.strip_cleaneval_wrapper(plain) == plain


# --------------------------------------------------------------------------------------
# end to end
# --------------------------------------------------------------------------------------


class _RepeatedBlocks:
    """Test method: drops the text blocks seen on at least two fitted pages (a one-line
    site model whose output is easy to work out by hand)."""

    boom = False

    def __init__(self, **params):
        self.counts: Counter = Counter()
        self.n_pages = 0

    def fit(self, pages):
        self.counts = Counter()
        self.n_pages = 0
        for page in pages:
            self.partial_fit(page)

    def partial_fit(self, page):
        self.counts.update({b.text for b in text_blocks(page.root)})
        self.n_pages += 1

    def clean(self, page):
        blocks = text_blocks(page.root)
        if self.boom and any("explode" in b.text for b in blocks):
            raise RuntimeError("boom")
        text = "\n".join(b.text for b in blocks if self.counts[b.text] < 2)
        return CleanResult(text=text, sentences=[], blocks=[], method="toy")

    def to_dict(self):
        return {"counts": dict(self.counts), "n_pages": self.n_pages}

    @classmethod
    def from_dict(cls, state, **params):
        obj = cls()
        obj.counts = Counter(state["counts"])
        obj.n_pages = state["n_pages"]
        return obj


class _Exploding(_RepeatedBlocks):
    boom = True


@pytest.fixture
def toy_methods():
    register_method("bench-toy")(_RepeatedBlocks)
    register_method("bench-boom")(_Exploding)
    yield
    for name in ("bench-toy", "bench-boom"):
        cleaner_module._METHODS.pop(name, None)


NOUNS = "rivers hills ducks lamps coins ropes bells maps tents kites owls".split()


def _write_corpus(root) -> str:
    """Site alpha: 10 pages, site beta: 2 pages; each page = a 3-word nav repeated on
    every page of its site + a 7-word article (the gold). Beta's 2nd article says
    "explode". Page-level output (nav + article) scores P 7/10, R 1, F1 14/17."""
    rows = []
    specs = [("alpha.example", "home news about", 10), ("beta.example", "shop cart help", 2)]
    for site, nav, n in specs:
        os.makedirs(os.path.join(root, "pages", site), exist_ok=True)
        links = " ".join(f'<a href="/{w}">{w}</a>' for w in nav.split())
        for i in range(n):
            article = f"{site.split('.')[0]} story {NOUNS[i]} tells of {'explode' if (site, i) == ('beta.example', 1) else 'calm'} days"
            pid = f"{site.split('.')[0]}-{i}"
            html = (
                f"<html><head><title>t{i}</title></head><body><div class=nav>{links}</div>"
                f"<p>{article}</p></body></html>"
            )
            with open(os.path.join(root, "pages", site, pid + ".html"), "w", encoding="utf-8") as f:
                f.write(html)
            with open(os.path.join(root, "pages", site, pid + ".txt"), "w", encoding="utf-8") as f:
                f.write(article + "\n")
            rows.append(
                {
                    "id": pid,
                    "site": site,
                    "url": f"http://{site}/{i}",
                    "html": f"pages/{site}/{pid}.html",
                    "gold": f"pages/{site}/{pid}.txt",
                }
            )
    with open(os.path.join(root, "manifest.jsonl"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return str(root)


def _table_rows(text: str) -> dict[tuple[str, str], list[str]]:
    out = {}
    for line in text.splitlines():
        cells = line.split()
        if len(cells) == len(bench._HEADER) and cells[0] == "tiny":
            out[(cells[1], cells[2])] = cells
    return out


def _rescore(path: str, corpus_root: str) -> float:
    """Mean F1 of a predictions file against the golds, read straight from disk."""
    with open(os.path.join(corpus_root, "manifest.jsonl"), encoding="utf-8") as f:
        golds = {}
        for line in f:
            row = json.loads(line)
            with open(os.path.join(corpus_root, row["gold"]), encoding="utf-8") as g:
                golds[row["id"]] = g.read()
    with open(path, encoding="utf-8") as f:
        preds = [json.loads(line) for line in f if line.strip()]
    return sum(bench.prf(p["text"], golds[p["id"]])[2] for p in preds) / len(preds)


PAGE_F1 = 14 / 17


def test_command_end_to_end(tmp_path, capsys, toy_methods):
    corpus = _write_corpus(tmp_path / "tiny")
    out_dir = tmp_path / "preds"
    rc = bench.main(
        [
            corpus,
            "--methods",
            "bench-toy,bench-boom",
            "--fit-pages",
            "2",
            "--out",
            str(out_dir),
            "--no-reference",
            "--curve",
            "bench-toy",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    rows = _table_rows(printed)
    expected = {
        # fit on all pages: both navs seen >= 2 times, dropped
        ("bench-toy", "transductive"): (12, 1.0, 0),
        # alpha's held-out page: nav seen on 9 others; beta's: on 1 only, kept
        ("bench-toy", "loo"): (12, (10 + 2 * PAGE_F1) / 12, 0),
        ("bench-toy", "page"): (12, PAGE_F1, 0),
        # 2 alpha pages fitted, 8 cleaned; beta has no page left: skipped
        ("bench-toy", "sample"): (8, 1.0, 0),
        # beta's "explode" page raises: counted, scored as empty
        ("bench-boom", "transductive"): (12, 11 / 12, 1),
        ("bench-boom", "page"): (12, 11 * PAGE_F1 / 12, 1),
        ("bench-boom", "sample"): (8, 1.0, 0),
    }
    for mode in bench.MODES:
        for method in ("bench-toy", "bench-boom"):
            assert (method, mode) in rows, f"no row for {method} {mode}:\n{printed}"
    for key, (pages, f1, errors) in expected.items():
        cells = rows[key]
        assert int(cells[3]) == pages and int(cells[4]) == errors, cells
        assert float(cells[7]) == pytest.approx(f1, abs=5e-5), cells
    for key, cells in rows.items():
        for value in cells[5:9]:
            assert 0.0 <= float(value) <= 1.0
        assert float(cells[10]) > 0 and float(cells[11]) > 0  # clean and parse ms measured
        # every written prediction file re-scores to the printed F1
        path = out_dir / f"tiny__{key[0]}__{key[1]}.jsonl"
        assert float(cells[7]) == pytest.approx(_rescore(str(path), corpus), abs=5e-5)
    assert rows[("bench-toy", "page")][9] == "-"  # page mode fits nothing
    assert "ESTIMATE" in printed and "fit 500 pages" in printed
    # learning curve on alpha's 2 held-out pages: the nav needs 2 fitted pages to go
    curve = {line.split()[0]: line for line in printed.splitlines() if line.strip().startswith("k=")}
    assert set(curve) == {"k=0", "k=1", "k=2", "k=4", "k=8", "k=all"}
    for k, f1 in (("k=0", PAGE_F1), ("k=1", PAGE_F1), ("k=2", 1.0), ("k=8", 1.0), ("k=all", 1.0)):
        assert f"F1={f1:.4f}" in curve[k]


def test_json_and_markdown_outputs(tmp_path, capsys, toy_methods):
    corpus = _write_corpus(tmp_path / "tiny")
    bench.main(
        [
            corpus,
            "--methods",
            "bench-toy",
            "--modes",
            "page,transductive",
            "--json",
            "--no-reference",
            "--max-pages-per-site",
            "3",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    entry = data["tiny"]
    assert entry["capped"] is True and entry["pages"] == 5  # alpha capped at 3, beta 2
    by_mode = {r["mode"]: r for r in entry["runs"]}
    assert by_mode["page"]["f1"] == pytest.approx(PAGE_F1)
    assert by_mode["transductive"]["f1"] == pytest.approx(1.0)
    assert by_mode["transductive"]["pages_fitted"] == 5
    assert entry["fit500"]["bench-toy"]["estimate"] is True
    saved = tmp_path / "saved.json"
    bench.main(
        [corpus, "--methods", "bench-toy", "--modes", "page", "--markdown", "--no-reference", "--save-json", str(saved)]
    )
    md = capsys.readouterr().out
    assert json.loads(saved.read_text())["tiny"]["runs"][0]["f1"] == pytest.approx(PAGE_F1)
    assert md.startswith("| corpus | method | mode |")
    assert "| tiny | bench-toy | page | 12 | 0 |" in md


def test_cjk_flag_scores_chinese_pages_by_character(tmp_path, capsys, toy_methods):
    # one page: a nav of three two-character words and a seven-character article (the
    # gold); page mode keeps both. \w+: 4 tokens kept, 1 gold, F1 2/5; by character:
    # 13 kept, 7 gold, all 7 found, F1 7/10
    root = tmp_path / "zh"
    os.makedirs(root / "pages")
    (root / "pages" / "z.html").write_text(
        "<html><body><div class=nav><a href=/a>首页</a> <a href=/b>新闻</a> <a href=/c>关于</a></div>"
        "<p>北京今天下雨了</p></body></html>",
        encoding="utf-8",
    )
    (root / "pages" / "z.txt").write_text("北京今天下雨了\n", encoding="utf-8")
    row = {"id": "z", "site": "zh.example", "url": None, "html": "pages/z.html", "gold": "pages/z.txt"}
    (root / "manifest.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    args = [str(root), "--methods", "bench-toy", "--modes", "page", "--json", "--no-reference"]
    bench.main(args)
    words = json.loads(capsys.readouterr().out)["zh"]
    bench.main(args + ["--cjk"])
    chars = json.loads(capsys.readouterr().out)["zh"]
    assert words["tokens"] == "words" and chars["tokens"] == "cjk"
    assert words["runs"][0]["f1"] == pytest.approx(2 / 5)
    assert chars["runs"][0]["f1"] == pytest.approx(7 / 10)
    bench.main(args[:-2] + ["--no-reference", "--cjk"])
    assert "every Han, kana or Hangul character one token" in capsys.readouterr().out


def test_reference_row_when_trafilatura_is_installed(tmp_path):
    if not bench.reference_available():
        pytest.skip("trafilatura not installed (benchmark extra)")
    corpus = bench.load_corpus(os.path.join(_write_corpus(tmp_path / "tiny"), "manifest.jsonl"))
    run = bench.run_reference(corpus)
    assert run.method == "trafilatura" and run.score.pages == 12
    assert 0.0 <= run.score.f1 <= 1.0 and len(run.clean_ms) + run.errors == 12


def test_a_method_that_cannot_be_built_is_scored_as_errors(tmp_path, toy_methods):
    class Broken(_RepeatedBlocks):
        def __init__(self, **params):
            raise FileNotFoundError("model file missing")

    register_method("bench-broken")(Broken)
    try:
        corpus = bench.load_corpus(os.path.join(_write_corpus(tmp_path / "tiny"), "manifest.jsonl"))
        for mode in bench.MODES:
            run = bench.run_method(corpus, "bench-broken", mode, fit_pages=2)
            assert run.errors == run.score.pages == (8 if mode == "sample" else 12)
            assert run.score.f1 == 0.0 and run.fit_ms_per_page is None
    finally:
        cleaner_module._METHODS.pop("bench-broken", None)


def test_rejects_unknown_method(tmp_path, capsys):
    corpus = _write_corpus(tmp_path / "tiny")
    with pytest.raises(SystemExit):
        bench.main([corpus, "--methods", "no-such-method"])
    assert "unknown method" in capsys.readouterr().err


def test_runs_as_a_module():
    proc = subprocess.run(
        [sys.executable, "-m", "sst_cleaner.tools.bench", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert proc.returncode == 0 and "--max-pages-per-site" in proc.stdout


def test_fit_500_is_measured_when_the_corpus_has_the_pages(tmp_path, capsys, toy_methods, monkeypatch):
    # alpha 10 pages + beta 2: with a bar of 11 pages no site has them, the corpus does
    corpus = _write_corpus(tmp_path / "tiny")
    fitted = []
    real_fit = _RepeatedBlocks.fit
    monkeypatch.setattr(_RepeatedBlocks, "fit", lambda self, pages: (fitted.append(len(pages)), real_fit(self, pages)))
    monkeypatch.setattr(bench, "FIT_500", 11)
    bench.main([corpus, "--methods", "bench-toy", "--modes", "page", "--json", "--no-reference"])
    info = json.loads(capsys.readouterr().out)["tiny"]["fit500"]["bench-toy"]
    assert info["estimate"] is False and info["mixed"] is True and info["sites"] == 2
    assert fitted == [11] * bench.FIT_500_RUNS and len(info["runs_ms"]) == bench.FIT_500_RUNS
    assert info["ms"] == sorted(info["runs_ms"])[1]
    # each fit is set against lxml parsing the same 11 pages right after it
    assert len(info["floors_ms"]) == bench.FIT_500_RUNS and all(f > 0 for f in info["floors_ms"])
    assert info["x_floor"] == pytest.approx(sorted(t / f for t, f in zip(info["runs_ms"], info["floors_ms"]))[1])
    # a site that has the pages is measured on its own
    monkeypatch.setattr(bench, "FIT_500", 10)
    fitted.clear()
    bench.main([corpus, "--methods", "bench-toy", "--modes", "page", "--no-reference"])
    printed = capsys.readouterr().out
    assert fitted == [10] * bench.FIT_500_RUNS
    assert "fit 10 pages = " in printed and "measured on site alpha.example" in printed
    assert "x lxml parsing the same pages" in printed


def test_fit_500_also_times_a_fit_on_every_cpu_for_mergeable_methods(tmp_path, capsys, monkeypatch):
    from sst_cleaner.engine import _parallel_fit as parallel_fit

    corpus = _write_corpus(tmp_path / "tiny")
    monkeypatch.setattr(bench, "FIT_500", 10)
    monkeypatch.setattr(parallel_fit, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel_fit, "MIN_SIZE_PER_PROCESS", 1)
    bench.main([corpus, "--methods", "default,sst", "--modes", "page", "--json", "--no-reference"])
    fit500 = json.loads(capsys.readouterr().out)["tiny"]["fit500"]
    par = fit500["default"]["parallel"]
    assert par["processes"] == 2 and len(par["runs_wall_ms"]) == bench.FIT_500_RUNS
    assert par["wall_ms"] == sorted(par["runs_wall_ms"])[1] and par["cpu_ms"] > 0
    assert "parallel" not in fit500["sst"]  # its model cannot be learnt in shards
    assert "on 2 processes (n_jobs)" in bench._fmt_fit500("tiny", "default", fit500["default"])
