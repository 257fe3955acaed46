"""The command line reads folders recursively, WARC archives (one model per site) and
standard input, writes every format, and its exit codes mean what the help says."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import docsite
import pytest

from sst_cleaner import __version__
from sst_cleaner.cli._main import EXIT_MODEL, EXIT_PAGE_ERRORS, EXIT_USAGE, main
from sst_cleaner.cli._warc import WarcError, read_warc, write_record


def write_warc(path, pages, compress):
    with open(path, "wb") as fh:
        for url, html in pages:
            write_record(fh, url, html.encode("utf-8"), compress=compress)


def rows_of(text):
    return [json.loads(line) for line in text.splitlines()]


def test_folders_are_searched_recursively(tmp_path, capsys):
    pages = docsite.site(8)
    for i, (_url, html) in enumerate(pages):
        sub = tmp_path / "site" / f"part{i % 3}" / ("deep" if i % 2 else "")
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"p{i}.html").write_text(html, encoding="utf-8")
    (tmp_path / "site" / "notes.txt").write_text("not a page")
    assert main(["site", str(tmp_path / "site")]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert len(rows) == 8
    by_name = {r["path"].rsplit("/", 1)[-1]: r for r in rows}
    assert docsite.article(5)["code"] in by_name["p5.html"]["text"]
    assert by_name["p5.html"]["metadata"]["language"] == "en"


@pytest.mark.parametrize("compress", [False, True])
def test_warc_learns_one_model_per_site(tmp_path, capsys, compress):
    a = [(url, html) for url, html in docsite.site(6)]
    b = [
        (f"http://other.test/{i}", html.replace("Docs", "Other").replace("documentation", "archive"))
        for i, (_u, html) in enumerate(docsite.site(5))
    ]
    mixed = [p for pair in zip(a, b) for p in pair] + a[5:]
    path = tmp_path / ("crawl.warc.gz" if compress else "crawl.warc")
    write_warc(path, mixed, compress)
    # a non-HTML response in between is skipped
    with open(path, "ab") as fh:
        write_record(fh, "http://docs.test/logo.png", b"\x89PNG", content_type="image/png", compress=compress)
    assert [p.url for p in read_warc(str(path))] == [u for u, _ in mixed]
    assert main(["site", str(path), "--format", "json"]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert [r["url"] for r in rows] == [u for u, _ in mixed]
    for r in rows:
        assert "Section 3 overview" not in r["text"]  # each site's template learnt from its own pages
        assert r["markdown"].startswith("# Guide")


def test_stdin_and_page_formats(tmp_path, monkeypatch, capsys):
    html = docsite.page(3)
    model = tmp_path / "m.json"
    folder = tmp_path / "site"
    folder.mkdir()
    for i, (_u, h) in enumerate(docsite.site(6)):
        (folder / f"p{i}.html").write_text(h, encoding="utf-8")
    assert main(["fit", str(folder), "--model", str(model)]) == 0
    for fmt, check in (
        ("text", lambda o: docsite.article(3)["code"] in o),
        ("markdown", lambda o: o.startswith("# Guide 3")),
        ("html", lambda o: o.startswith("<h1>Guide 3")),
    ):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(html.encode("utf-8"))))
        capsys.readouterr()
        assert main(["clean", "-", "--model", str(model), "--format", fmt]) == 0
        assert check(capsys.readouterr().out), fmt


def test_several_pages_in_a_page_format_are_marked(tmp_path, capsys):
    for i in range(2):
        (tmp_path / f"p{i}.html").write_text(docsite.page(i), encoding="utf-8")
    assert main(["clean", str(tmp_path), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.count("==> ") == 2 and f"==> {tmp_path / 'p1.html'} <==" in out


def test_exit_codes(tmp_path, capsys):
    assert main(["clean", str(tmp_path / "missing.html")]) == EXIT_USAGE
    (tmp_path / "empty").mkdir()
    assert main(["site", str(tmp_path / "empty")]) == EXIT_USAGE
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    page = tmp_path / "p.html"
    page.write_text(docsite.page(1))
    assert main(["clean", str(page), "--model", str(bad)]) == EXIT_MODEL
    cut = tmp_path / "cut.warc"
    write_warc(cut, docsite.site(3), compress=False)
    cut.write_bytes(cut.read_bytes()[:-500])  # the last record is cut short
    assert main(["clean", str(cut)]) == EXIT_PAGE_ERRORS
    assert len(rows_of(capsys.readouterr().out)) == 2  # the whole records are still cleaned
    with pytest.raises(WarcError):
        list(read_warc(io.BytesIO(b"GET / HTTP/1.1\r\n\r\n")))
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(page)])  # --model missing
    assert exc.value.code == EXIT_USAGE


def test_version_and_help_per_command():
    def run(*a):
        return subprocess.run([sys.executable, "-m", "sst_cleaner", *a], capture_output=True, text=True)

    assert run("--version").stdout.strip().startswith(f"sst-cleaner {__version__} (")
    for command, words in (("site", "one model per site"), ("fit", "--model"), ("clean", "saved site model")):
        out = run(command, "--help")
        assert out.returncode == 0 and words in out.stdout
        assert ("--format" in out.stdout) == (command != "fit")  # fit writes a model, not pages
    assert "Exit codes" in run("--help").stdout
