"""Hostile WARC archives on the command line: each gets a counted skip or a reported
error, never a hang, a traceback or the complete records lost."""

import gzip
import json
import subprocess
import sys

from sst_cleaner.cli import main


def record(url, http, compress=True):
    head = (
        f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    ).encode()
    raw = head + http + b"\r\n\r\n"
    return gzip.compress(raw) if compress else raw


def http(body, status="200 OK", ctype="text/html; charset=utf-8", extra=""):
    return f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n{extra}\r\n".encode() + body


def page(k):
    return f"<html><body><nav>Home About</nav><article><p>Story {k} tells of the river and the town.</p></article></body></html>".encode()


def rows(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def run_cli(*args, timeout=60):
    code = f"import sys; from sst_cleaner.cli import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=timeout, text=True)


def test_negative_chunk_size_does_not_hang(tmp_path):
    bad = http(b"-6\r\nabcdef\r\n0\r\n\r\n", extra="Transfer-Encoding: chunked\r\n")
    path = tmp_path / "neg.warc.gz"
    path.write_bytes(record("http://a.test/1", http(page(1))) + record("http://a.test/2", bad))
    done = run_cli("clean", str(path), timeout=60)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert any(r.get("url") == "http://a.test/1" for r in rows(done.stdout))


def test_cut_gzip_member_keeps_complete_records_and_other_inputs(tmp_path, capsys):
    data = b"".join(record(f"http://a.test/{k}", http(page(k))) for k in range(5))
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: len(data) - 40])  # the last member ends inside its deflate stream
    corrupt = bytearray(data)
    corrupt[len(record("http://a.test/0", http(page(0)))) + 30] ^= 0xFF  # damage the second member
    (tmp_path / "corrupt.warc.gz").write_bytes(bytes(corrupt))
    other = tmp_path / "other.html"
    other.write_bytes(page(9))
    code = main(["clean", str(cut), str(tmp_path / "corrupt.warc.gz"), str(other)])
    out, err = capsys.readouterr()
    names = [r.get("url") or r.get("name") for r in rows(out)]
    assert code == 1  # the damage is reported in the exit status
    assert len(names) == 4 + 1 + 1  # the complete records of both archives, then the file
    assert "cut.warc.gz" in err and "corrupt.warc.gz" in err


def test_gzip_bomb_bodies_are_read_only_up_to_the_page_cap(tmp_path):
    bomb = gzip.compress(b"<p>" + b"a" * (60 << 20), 9)
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(
        b"".join(record(f"http://a.test/{k}", http(bomb, extra="Content-Encoding: gzip\r\n")) for k in range(8))
    )
    limit = 700 << 20
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (%d, %d)); "
        "from sst_cleaner.cli import main; sys.exit(main(['site', %r]))" % (limit, limit, str(path))
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300, text=True)
    assert "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert len(rows(done.stdout)) == 8


def test_error_responses_and_non_html_bodies_are_skipped_and_counted(tmp_path, capsys):
    recs = [record(f"http://a.test/{k}", http(page(k))) for k in range(3)]
    recs.append(
        record("http://a.test/missing", http(b"<html><body><p>Not found here</p></body></html>", "404 Not Found"))
    )
    recs.append(
        record(
            "http://a.test/old",
            http(b"<html><body>Moved</body></html>", "301 Moved Permanently", extra="Location: /new\r\n"),
        )
    )
    recs.append(record("http://a.test/doc.pdf", http(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")))
    path = tmp_path / "mixed.warc.gz"
    path.write_bytes(b"".join(recs))
    assert main(["site", str(path)]) == 0
    out, err = capsys.readouterr()
    assert sorted(r["url"] for r in rows(out)) == [f"http://a.test/{k}" for k in range(3)]
    assert "1 not_html" in err and "2 http_error" in err
