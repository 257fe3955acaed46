"""Short runs: ``scrapy check`` and ``scrapy parse`` in a generated project against the
local demo site end cleanly (no CRITICAL line when the crawl ends before the first worker
process has answered), and ``scrapy parse --pipelines`` shows cleaned text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import scrapy

ROOT = Path(__file__).resolve().parent.parent

SPIDER = '''
import scrapy


class DemoSpider(scrapy.Spider):
    name = "demo"

    def parse(self, response):
        """Contract for scrapy check.
        @url {url}
        @returns items 1 1
        """
        yield {{"url": response.url}}
'''


@pytest.fixture(scope="module")
def project(demo_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "scrapy.cfg").write_text("[settings]\ndefault = proj.settings\n", encoding="utf-8")
    spiders = root / "proj" / "spiders"
    spiders.mkdir(parents=True)
    (root / "proj" / "__init__.py").write_text("", encoding="utf-8")
    (spiders / "__init__.py").write_text("", encoding="utf-8")
    (root / "proj" / "settings.py").write_text(
        'BOT_NAME = "proj"\nSPIDER_MODULES = ["proj.spiders"]\nADDONS = {"sst_cleaner.Addon": 0}\n'
        "ROBOTSTXT_OBEY = False\nTELNETCONSOLE_ENABLED = False\n",
        encoding="utf-8",
    )
    url = demo_server.url.rstrip("/") + demo_server.site.article_paths[0]
    (spiders / "demo.py").write_text(SPIDER.format(url=url), encoding="utf-8")
    return root, url


def _scrapy(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args], cwd=str(root), env=env, capture_output=True, text=True, timeout=180
    )


def test_scrapy_check_ends_cleanly(project):
    root, _ = project
    proc = _scrapy(root, "check", "demo")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "OK" in out
    assert "CRITICAL" not in out and "Traceback" not in out, out[-3000:]


def test_scrapy_parse_pipelines_shows_cleaned_text(project):
    root, url = project
    proc = _scrapy(root, "parse", "--spider", "demo", "--pipelines", url)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "CRITICAL" not in out and "Traceback" not in out, out[-3000:]
    scraped = proc.stdout.split("# Scraped Items", 1)[1].split("# Requests", 1)[0]
    assert "'text':" in scraped and "'sst_status': 'fallback'" in scraped, scraped[:2000]


def test_held_items_are_reported_while_held(demo_server, tmp_path):
    from conftest import assert_exactly_once, crawl_in_subprocess

    result = crawl_in_subprocess(
        tmp_path,
        "hold-log",
        url=demo_server.url,
        settings={"SST_SAMPLE_PAGES": 50, "LOGSTATS_INTERVAL": 0.2, "DOWNLOAD_DELAY": 0.05, "SST_WORKERS": "thread"},
    )
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    lines = [line for line in result["log"].splitlines() if "items held for" in line]
    assert lines, result["log"][-3000:]
    assert "gathering their sample" in lines[0] and "oldest hold is" in lines[0]


@pytest.mark.skipif(
    tuple(int(x) for x in scrapy.__version__.split(".")[:2]) < (2, 14),
    reason="on Scrapy 2.13 released pages reach ~5x the cap before the crawl waits (known, documented)",
)
def test_released_pages_count_against_the_byte_cap(demo_server, tmp_path):
    """Pages whose items were released but are not through the pipelines yet count with
    the held ones: past SST_MAX_HELD_BYTES the crawl waits for the pipelines instead of
    piling pages up. A slow pipeline before the cleaning one makes them pile up."""
    from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

    page_bytes = max(len(demo_server.site.page(p)) for p in demo_server.site.article_paths)
    cap = 4 * page_bytes
    result = crawl_in_subprocess(
        tmp_path,
        "backpressure",
        url=demo_server.url,
        kinds=["dict", "item"],
        settings={
            "SST_SAMPLE_PAGES": 3,
            "SST_MAX_HELD_BYTES": cap,
            "SST_WORKERS": "thread",
            "SLOW_PIPELINE_SECONDS": 0.05,
            "ITEM_PIPELINES": {"test_scrapy_runner.SlowPipeline": 1, "test_scrapy_runner.RecordPipeline": 999},
        },
    )
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    assert sst_stat(result, "backpressure_waits") > 0
    # a response may release a whole sample (3 pages) past the cap before it waits
    assert 0 < sst_stat(result, "peak_released_bytes") <= cap + 4 * page_bytes
    assert all(r["text"] for r in result["received"])


def test_held_items_count_towards_closespider_itemcount(demo_server, tmp_path):
    """The sample (50 pages) is never reached, so every item would be held until the end
    and the whole site crawled; with held items counted, the count closes the crawl early."""
    from conftest import assert_exactly_once, crawl_in_subprocess

    result = crawl_in_subprocess(
        tmp_path,
        "itemcount",
        url=demo_server.url,
        kinds=["dict", "item"],
        settings={"SST_SAMPLE_PAGES": 50, "CLOSESPIDER_ITEMCOUNT": 10, "SST_WORKERS": "thread", "DOWNLOAD_DELAY": 0.05},
    )
    assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
    assert result["stats"]["finish_reason"] == "closespider_itemcount"
    # before: all 60 items of the site (held to the end); plain Scrapy (no add-on) gives
    # 38 with these settings, and so does the crawl with the add-on now
    total = 2 * len(demo_server.site.article_paths)
    assert len(result["received"]) < total, (len(result["received"]), total)
    assert "CLOSESPIDER_ITEMCOUNT (10) reached" in result["log"]
    assert all(r["text"] for r in result["received"])


@pytest.mark.parametrize(
    "setting, says",
    [
        ("SST_METHOD=nope", "SST_METHOD: unknown method 'nope'; choose one of cehtd, cetd, default"),
        ("SST_FORMAT=pdf", "SST_FORMAT must be one of text, markdown, html, got 'pdf'"),
        ("SST_SITE_KEY=no_such_module.key", "SST_SITE_KEY 'no_such_module.key' cannot be imported"),
        ("SST_PARAMS={oops", "SST_PARAMS must be a JSON object on the command line"),
        ("SST_WORKER_INIT=no_such_module.setup", "SST_WORKER_INIT 'no_such_module.setup': no module"),
    ],
)
def test_a_bad_setting_is_one_error_line_and_stops_the_crawl(project, setting, says):
    """A bad value used to end in "Task exception was never retrieved" and a traceback of
    ~40 lines (a component raising while Scrapy builds it)."""
    root, _ = project
    proc = _scrapy(root, "crawl", "demo", "-s", setting, "-s", "LOG_LEVEL=INFO")
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "Task exception" not in out, out[-3000:]
    errors = [line for line in out.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and says in errors[0] and "the crawl is stopped" in errors[0], errors or out[-3000:]
    assert "Spider closed (sst_bad_setting)" in out
    assert "'downloader/request_count'" not in out  # nothing was crawled
