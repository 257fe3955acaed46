"""The fuzzer's command-line kind: hostile folders, names, standard input and command
lines through ``sst-cleaner`` in-process, each checked against the CLI's contract."""

from __future__ import annotations

import json

import pytest

from sst_cleaner.tools._fuzz_cases import case_kind, make_case
from sst_cleaner.tools._fuzz_cli import _check, run_cli_case
from sst_cleaner.tools.fuzz import run


def test_cli_cases_keep_the_contract():
    seen = set()
    ran = 0
    for index in range(400):
        if case_kind(21, index) != "cli":
            continue
        _kind, data, _ = make_case(21, index)
        scenario = json.loads(data)
        seen.add(scenario["command"])
        code, cpu = run_cli_case(data)
        assert code in (0, 1, 2, 3, 130, 141) and cpu >= 0
        ran += 1
        if ran == 12:
            break
    assert ran == 12 and len(seen) >= 3


@pytest.mark.parametrize(
    "stdout, stderr, fmt, broken",
    [
        ('{"path": "a", "status": "ok"}\n', "", "json", None),
        ('{"path": "a", "status": "ok"}\n', "sst-cleaner: a\x1b[2J.html: skipped\n", "json", "raw control"),
        ('{"path": "a", "status": "weird"}\n', "", "json", "bad JSON row"),
        ("<p>x</p><script>alert(1)</script>\n", "", "html", "live script"),
        ("<!-- <script> -->\n<p>x</p>\n", "", "html", None),
        ('<p onclick="x()">x</p>\n', "", "html", "event handler"),
        ("[x](javascript:alert(1))\n", "", "markdown", "javascript: URL"),
        ("<img src=x onerror=alert(1)>\n", "", "markdown", "Markdown, rendered"),
        ("\\<script>alert(1)\\</script> \\[x\\](javascript:alert(1))\n", "", "markdown", None),
        ("text \x9b31m\n", "", "text", "raw control"),
    ],
)
def test_the_contract_check_catches_what_it_should(stdout, stderr, fmt, broken, tmp_path):
    scenario = {"command": "clean", "flags": ["--format", fmt]}
    if broken is None:
        _check(scenario, 0, stdout, stderr, stdout, str(tmp_path))
    else:
        with pytest.raises(AssertionError, match=broken):
            _check(scenario, 0, stdout, stderr, stdout, str(tmp_path))
    with pytest.raises(AssertionError, match="not a documented one"):
        _check(scenario, 4, "", "", "", str(tmp_path))


def test_per_kind_runs_as_many_cases_of_each_kind(tmp_path):
    report = run(cases=0, seed=3, methods=["default"], out=str(tmp_path), kinds={"cli", "warc"}, per_kind=3, quiet=True)
    assert report["kinds"] == {"cli": 3, "warc": 3}
    assert report["crashes"] == 0 and report["slow"] == 0, report["failures"]
