"""Standard input is spooled to a temporary file and read like any WARC or page file:
bounded memory, a cap with a clear error past it, two passes for `site` (issue 29)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from sst_cleaner.cli import _main
from sst_cleaner.cli._warc import write_record


def article(k):
    words = " ".join(["river", "harbour", "lantern", "council", "meadow", "timber"][(k + i) % 6] for i in range(60))
    return (
        f"<html><head><title>Story {k}</title></head><body><nav><a href='/'>Home</a> <a href='/a'>About</a></nav>"
        f"<article><h1>Story {k}</h1><p>Story {k}: {words}.</p></article><footer>Copyright</footer></body></html>"
    ).encode()


def warc_bytes(urls, compress=True):
    buf = io.BytesIO()
    for k, url in enumerate(urls):
        write_record(buf, url, article(k), compress=compress)
    return buf.getvalue()


def run_main(monkeypatch, capsys, argv, stdin):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = _main.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_site_reads_a_warc_on_stdin_twice_one_model_per_host(monkeypatch, capsys):
    urls = [f"http://{host}/p{k}" for k in range(6) for host in ("a.test", "b.test")]
    code, out, err = run_main(monkeypatch, capsys, ["site", "-"], warc_bytes(urls))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["url"] for r in rows] == urls  # learnt in a first pass, cleaned in a second
    assert all(r["text"].startswith(f"Story {k}") for k, r in enumerate(rows))


def test_warc_on_stdin_over_the_cap_cleans_what_was_read_and_says_so(monkeypatch, capsys):
    data = warc_bytes([f"http://a.test/p{k}" for k in range(20)], compress=False)
    cut = len(data) // 2
    monkeypatch.setattr(_main, "MAX_STDIN_BYTES", cut)
    code, out, err = run_main(monkeypatch, capsys, ["clean", "-"], data)
    assert code == 1
    rows = [json.loads(line) for line in out.splitlines()]
    # every record wholly before the cap, and none after it
    whole = data[:cut].count(b"\r\n\r\nWARC/1.1") + (1 if data[:cut].rstrip().endswith(b"</html>") else 0)
    assert 0 < len(rows) == whole < 20
    assert f"over the {cut} byte limit of a WARC archive" in err
    assert "save the archive to a file" in err
    assert "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from /proc")
def test_stdin_warc_memory_is_bounded_by_the_records_not_the_archive(tmp_path):
    """A 200 MB archive on standard input (mostly image responses, which are passed
    over) is cleaned holding one record at a time: peak RSS stays far below the
    archive's size (reading it whole took twice its size)."""
    path = tmp_path / "big.warc"
    with open(path, "wb") as fh:
        for k in range(40):
            write_record(fh, f"http://a.test/img{k}.png", b"\x89PNG" + bytes(5 << 20), content_type="image/png")
            if k % 10 == 0:
                write_record(fh, f"http://a.test/p{k}", article(k))
    assert path.stat().st_size > 200 << 20
    # VmHWM, the peak of this process's own memory: ru_maxrss carries the parent's
    # (pytest's) peak over the fork and exec
    code = (
        "import sys; from sst_cleaner.cli import main; "
        "rc = main(['site', '-', '-o', sys.argv[1]]); "
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0]; "
        "print(int(hwm.split()[1]) // 1024, file=sys.stderr); sys.exit(rc)"
    )
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(path, "rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "out.jsonl")],
            stdin=stdin,
            capture_output=True,
            env=env,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 4
    peak_mb = int(proc.stderr.decode().strip().splitlines()[-1])
    assert peak_mb < 150, f"peak RSS {peak_mb} MB for a 200 MB archive on standard input"


def test_html_on_stdin_is_read_up_to_the_page_cap_only(monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, ["clean", "-"], b"<p>" + b"x" * 5_000_001)
    assert code == 2 and out == ""  # the only input was skipped
    assert "<stdin>: standard input is over the 5000000 byte page limit; skipped" in err
    code, out, err = run_main(monkeypatch, capsys, ["clean", "-", "--format", "text"], article(3))
    assert code == 0 and out.startswith("Story 3")
