"""Hostile command lines and closed outputs get a clear error or a counted skip, never a
traceback or an unbounded read (issue 29: defects 4, 7 and 9)."""

from __future__ import annotations

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
