"""Hostile command lines and closed outputs get a clear error or a counted skip, never a
traceback or an unbounded read (issue 29: defects 4, 7 and 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PAGE = b"<html><head><title>t</title></head><body><p>" + b"word " * 50 + b"</p></body></html>"


def run_cli(args, **kw):
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "sst_cleaner", *args], env=env, capture_output=True, timeout=120, **kw)


def test_unknown_method_is_a_usage_error():
    proc = run_cli(["clean", "-", "--method", "foo"], input=PAGE)
    assert proc.returncode == 2
    assert b"unknown --method 'foo'" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_closed_stdout_exits_141_without_traceback(tmp_path):
    page = tmp_path / "a.html"
    page.write_bytes(PAGE)
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m sst_cleaner clean "{page}" >&-'], env=env, capture_output=True, timeout=120
    )
    assert proc.returncode == 141
    assert b"Traceback" not in proc.stderr


def test_stdin_over_the_page_cap_is_a_counted_skip():
    big = b"<html><body><p>" + b"x" * 5_000_001 + b"</p></body></html>"
    proc = run_cli(["clean", "-"], input=big)
    assert proc.returncode == 2  # the only input was skipped: no page found
    assert b"over the 5000000 byte page limit" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_non_utf8_file_name_is_written_escaped_and_later_pages_kept(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    for name in (b"a-caf\xe9.html", b"b.html", b"c.html"):
        with open(os.path.join(os.fsencode(folder), name), "wb") as fh:
            fh.write(PAGE)
    proc = run_cli(["clean", str(folder)])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 3
    assert "a-caf\\\\xe9.html" in lines[0]  # JSON of the documented escaped form a-caf\xe9.html


def test_html_comment_names_are_escaped_and_headers_cannot_be_forged(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "--><script>alert(1)<!--.html").write_bytes(PAGE)
    (folder / "x\n==> forged <==\n.html").write_bytes(PAGE)
    html_out = run_cli(["clean", str(folder), "--format", "html"])
    assert html_out.returncode == 0, html_out.stderr
    assert b"<script>" not in html_out.stdout
    assert html_out.stdout.count(b"-->") == 2  # only the two comments' own ends
    text_out = run_cli(["clean", str(folder), "--format", "text"])
    assert [ln for ln in text_out.stdout.splitlines() if ln.startswith(b"==>")] == [
        b"==> " + os.fsencode(folder) + b"/--><script>alert(1)<!--.html <==",
        b"==> " + os.fsencode(folder) + b"/x\\x0a==> forged <==\\x0a.html <==",
    ]


def test_fifo_and_device_symlink_in_a_folder_are_skipped(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.html").write_bytes(PAGE)
    os.mkfifo(folder / "x.html")
    os.symlink("/dev/zero", folder / "z.html")
    proc = run_cli(["clean", str(folder)])
    assert proc.returncode == 1  # the two skips are counted as failures, the page is written
    assert len(proc.stdout.splitlines()) == 1
    assert proc.stderr.count(b"not a regular file") == 1  # the FIFO
    assert proc.stderr.count(b"symbolic link inside a folder is not followed") == 1
    # named on the command line, the link is followed, and what it points at refused
    proc = run_cli(["clean", str(folder / "a.html"), str(folder / "z.html")])
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 1
    assert proc.stderr.count(b"not a regular file") == 1


def test_css_and_pdf_are_skipped_as_not_html(tmp_path):
    (tmp_path / "a.html").write_bytes(PAGE)
    (tmp_path / "style.css").write_bytes(b"body { color: red }\n")
    (tmp_path / "doc.html").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n")
    proc = run_cli(["clean", str(tmp_path / "a.html"), str(tmp_path / "style.css"), str(tmp_path / "doc.html")])
    assert proc.returncode == 1
    assert len(proc.stdout.splitlines()) == 1  # only the page
    assert proc.stderr.count(b"not_html") == 2


def test_symlinks_in_a_folder_are_reported_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.html").write_bytes(PAGE.replace(b"word", b"secret"))
    folder = tmp_path / "pages"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.html").write_bytes(PAGE)
    os.symlink(folder / "a.html", folder / "same.html")  # to a page of the folder itself
    os.symlink(outside / "secret.html", folder / "leak.html")  # to a file outside it
    os.symlink(outside, folder / "sub" / "linked")  # to a folder
    proc = run_cli(["clean", str(folder)])
    assert proc.returncode == 1  # the skips count as failures; the page is written
    assert len(proc.stdout.splitlines()) == 1 and b"secret" not in proc.stdout
    assert proc.stderr.count(b"symbolic link inside a folder is not followed") == 3
    # named on the command line, a link to a regular file is read
    proc = run_cli(["clean", str(folder / "leak.html")])
    assert proc.returncode == 0 and b"secret" in proc.stdout


def test_fit_says_what_it_did_not_learn(tmp_path):
    from sst_cleaner.cli._warc import write_record

    folder = tmp_path / "pages"
    folder.mkdir()
    for k in range(3):
        (folder / f"p{k}.html").write_bytes(PAGE.replace(b"word", f"word{k}".encode()))
    (folder / "dup.html").write_bytes(PAGE.replace(b"word", b"word0"))
    (folder / "doc.html").write_bytes(b"%PDF-1.4\n")
    with open(folder / "crawl.warc", "wb") as fh:
        write_record(fh, "http://a.test/x", PAGE.replace(b"word", b"warc"))
    with open(folder / "crawl.warc", "ab") as fh:
        fh.write(
            b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.test/gone\r\n"
            b"Content-Type: application/http; msgtype=response\r\nContent-Length: 45\r\n\r\n"
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n\r\n\r\n"
        )
    model = tmp_path / "m.json"
    proc = run_cli(["fit", str(folder), "--model", str(model), "--jobs", "1"])
    assert proc.returncode == 1  # an input was not read
    assert proc.stdout.decode().splitlines() == [
        f"learnt 4 pages -> {model} (fit ok); not learnt: 1 inputs not read, 1 http_error records, 1 duplicate pages"
    ]
    assert model.is_file()
    assert b"doc.html: not_html" in proc.stderr and b"skipped 1 http_error" in proc.stderr
    proc = run_cli(["fit", str(folder / "p0.html"), "--model", str(model)])
    assert proc.returncode == 0
    assert proc.stdout.decode().strip() == f"learnt 1 pages -> {model} (fit ok)"


def test_an_output_that_cannot_be_opened_is_a_usage_error(tmp_path):
    (tmp_path / "a.html").write_bytes(PAGE)
    for target in (tmp_path / "no" / "such" / "out.txt", tmp_path):
        proc = run_cli(["clean", str(tmp_path / "a.html"), "-o", str(target)])
        assert proc.returncode == 2
        assert b"cannot write the output" in proc.stderr and b"Traceback" not in proc.stderr


def test_names_refused_by_the_parser_are_echoed_escaped(tmp_path):
    proc = run_cli(["methods", str(tmp_path / "bell\x07\x1b[2J.html")])
    assert proc.returncode == 2
    assert b"unrecognized arguments" in proc.stderr
    assert b"\x07" not in proc.stderr and b"\x1b" not in proc.stderr
    assert b"bell\\x07\\x1b[2J.html" in proc.stderr


def test_del_and_c1_controls_of_page_text_never_reach_the_output_raw(tmp_path):
    page = tmp_path / "a.html"
    page.write_text(
        "<html><body><p>Plain words \x9b31m about the river \x85 and the town \x7f for the test.</p></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "<img src=x onerror=alert(1)>.html").write_bytes(PAGE)
    proc = run_cli(["clean", str(page)])
    assert proc.returncode == 0
    row = json.loads(proc.stdout)  # C1 read as the Windows-1252 characters they were, DEL a space
    assert "Plain words \u203a31m about the river \u2026 and the town for the test." in row["text"]
    assert not any("\x7f" <= c <= "\x9f" for c in row["text"])
    assert not any("\x7f" <= c <= "\x9f" for c in proc.stdout.decode("utf-8"))
    for fmt in ("text", "markdown", "html"):
        proc = run_cli(["clean", str(tmp_path), "--format", fmt])
        assert proc.returncode == 0
        out = proc.stdout.decode("utf-8")
        assert not any("\x7f" <= c <= "\x9f" for c in out), fmt
        assert "river" in out
    md = run_cli(["clean", str(tmp_path), "--format", "markdown"]).stdout.decode()
    assert "==> " + str(tmp_path) + "/&lt;img src=x onerror=alert(1)&gt;.html <==" in md


def test_del_and_c1_controls_never_reach_a_result_raw_nor_as_references():
    from sst_cleaner import SiteCleaner

    controls = "".join(chr(c) for c in range(0x7F, 0xA0))
    # the references a parser decodes to controls (the other ones of 128-159 are
    # Windows-1252 characters), in hex, decimal, with leading zeros and without ';'
    references = "&#x81; &#141; &#x8F; &#0144; &#x9d &#127; &#x1b; &#7; &#x1F;"
    sentence = f"The ferry to the island {controls} leaves at {references} noon every day. "
    page = f"<html><head><title>Ferry{controls}</title></head><body><article><h1>Times\x9b2J</h1><p>"
    page += sentence * 8 + "Prices &#128; and &#155; stay as characters.</p></article></body></html>"
    for html in (page, page.encode("utf-8")):
        result = SiteCleaner().clean(html)
        assert result.status == "ok"
        for name in ("text", "markdown", "html", "title"):
            value = getattr(result, name) or ""
            assert not any("\x7f" <= c <= "\x9f" for c in value), (name, value[:200])
        # raw C1 controls: the Windows-1252 characters of their bytes (a page read as
        # Latin-1), the five bytes it leaves undefined and DEL a space
        windows_1252 = "\u20ac \u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152 \u017d "
        windows_1252 += "\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153 \u017e\u0178"
        # the references a parser decodes to controls: a space each
        assert f"The ferry to the island {windows_1252} leaves at noon every day." in result.text
        assert "Times\u203a2J" in result.text
        assert "Prices \u20ac and \u203a stay as characters." in result.text
        assert result.metadata["title"] == f"Ferry {windows_1252}"
